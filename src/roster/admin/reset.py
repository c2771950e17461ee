"""`roster offsets reset`: kafka-consumer-groups --reset-offsets.

Rewinding a group is destructive, so, as in Kafka, the command only shows its plan (GROUP TOPIC
PARTITION NEW-OFFSET) unless --execute is given; it is refused while the group has members. The
scope is --all-topics (every partition the group has committed) or --topic T / T:P,P (every or
some partitions of T); the target is one of

    earliest | latest | offset N | shift-by N | datetime T | by-duration D | current

with Kafka's rules: an explicit offset (or a shift) outside the log is moved to its nearest end,
a time with no record at or after it means the log end offset, shifting a partition without a
committed offset is an error, and `current` keeps committed offsets (the log end for the rest).
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from roster.admin.client import AdminClient, AdminError
from roster.admin.groups import GroupNotFound, describe
from roster.admin.offsets import EARLIEST, LATEST, OFFSET_COMMIT, committed, log_offsets
from roster.admin.table import columns
from roster.admin.topics import metadata
from roster.protocol.build import make

INACTIVE = ("Empty", "Dead")
TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class Target:
    scenario: str           # earliest, latest, offset, shift-by, datetime, current
    value: int | None = None   # the offset, the shift, or the time (epoch milliseconds)


@dataclass
class Plan:
    group_id: str
    offsets: dict[TopicPartition, int]
    warnings: list[str] = field(default_factory=list)


def plan(client: AdminClient, group_id: str, topics: list[tuple[str, list[int] | None]] | None,
         target: Target) -> Plan:
    """The new offsets (nothing is written). `topics`: (topic, partitions or None for all of
    them) pairs, or None for --all-topics."""
    try:
        group = describe(client, group_id)
    except GroupNotFound:   # as in Kafka: a group that does not exist yet may be given offsets
        group = None
    state = "Dead" if group is None else group.group_state
    if state not in INACTIVE:
        raise AdminError(f"Assignments can only be reset if the group '{group_id}' is "
                         f"inactive, but the current state is {state} with "
                         f"{len(group.members)} member(s); stop its consumers first")
    current = committed(client, group_id)
    partitions = sorted(current) if topics is None else _existing(client, topics)
    result = Plan(group_id, {})
    if not partitions:
        result.warnings.append(f"Group {group_id} has no committed offsets: --all-topics "
                               "finds nothing to reset.")
        return result
    scenario = target.scenario
    if scenario in ("earliest", "latest"):
        result.offsets = _ends(client, partitions, EARLIEST if scenario == "earliest" else LATEST)
    elif scenario == "offset":
        result.offsets = _within_log(client, {tp: target.value for tp in partitions}, result)
    elif scenario == "shift-by":
        missing = [tp for tp in partitions if tp not in current]
        if missing:
            raise AdminError(f"cannot shift {_names(missing)}: no committed offset to shift "
                             "from")
        result.offsets = _within_log(
            client, {tp: current[tp] + target.value for tp in partitions}, result)
    elif scenario == "datetime":
        found = _ends(client, partitions, target.value)
        latest = _ends(client, [tp for tp, o in found.items() if o < 0], LATEST)
        for tp, end in sorted(latest.items()):
            result.warnings.append(f"{_names([tp])} has no record at or after "
                                   f"{_when(target.value)}: using its log end offset {end}")
        result.offsets = {**found, **latest}
    elif scenario == "current":
        ends = _ends(client, [tp for tp in partitions if tp not in current], LATEST)
        result.offsets = {tp: current[tp] if tp in current else ends[tp] for tp in partitions}
    else:
        raise AdminError(f"unknown reset target {scenario}")
    return result


def execute(client: AdminClient, planned: Plan) -> None:
    """Commit the planned offsets for the group (OffsetCommit as an admin: generation -1, no
    member, what AlterConsumerGroupOffsets sends)."""
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), new in sorted(planned.offsets.items()):
        by_topic.setdefault(topic, []).append((partition, new))
    topic_entry = client.entry(OFFSET_COMMIT, "topics")
    partition_entry = client.entry(OFFSET_COMMIT, "topics", "partitions")
    answer = client.call(OFFSET_COMMIT, group_id=planned.group_id,
                         generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                         retention_time=datetime.timedelta(milliseconds=-1),
                         topics=tuple(make(topic_entry, name=topic, partitions=tuple(
                             make(partition_entry, partition_index=p, committed_offset=o,
                                  committed_leader_epoch=-1, committed_metadata="")
                             for p, o in parts)) for topic, parts in by_topic.items()))
    failures = [f"{t.name}-{p.partition_index}: {p.error_code.name.upper()}"
                for t in answer.topics for p in t.partitions if p.error_code.value]
    if failures:
        raise AdminError(f"cannot reset the offsets of {planned.group_id}: "
                         + "; ".join(failures))


def plan_lines(planned: Plan) -> list[str]:
    """Kafka's table: GROUP TOPIC PARTITION NEW-OFFSET."""
    rows = [("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
    rows += [(planned.group_id, topic, str(partition), str(new))
             for (topic, partition), new in sorted(planned.offsets.items())]
    return columns(rows) if len(rows) > 1 else []


def _existing(client: AdminClient,
              topics: list[tuple[str, list[int] | None]]) -> list[TopicPartition]:
    """The partitions named, checked against the topics' metadata."""
    names = list(dict.fromkeys(name for name, _ in topics))
    known: dict[str, set[int]] = {}
    for found in metadata(client, names).topics:
        if found.error_code.name == "unknown_topic_or_partition":
            raise AdminError(f"topic {found.name} does not exist")
        if found.error_code.value:
            raise AdminError(f"cannot reset offsets on {found.name}: "
                             f"{found.error_code.name.upper()}")
        known[found.name] = {p.partition_index for p in found.partitions}
    wanted: set[TopicPartition] = set()
    for name, partitions in topics:
        wanted |= {(name, p) for p in (partitions if partitions is not None else known[name])}
    absent = sorted(tp for tp in wanted if tp[1] not in known[tp[0]])
    if absent:
        raise AdminError(f"the partitions {_names(absent)} do not exist")
    return sorted(wanted)


def _ends(client: AdminClient, partitions: list[TopicPartition], which: int):
    if not partitions:
        return {}
    wanted: dict[str, list[int]] = {}
    for topic, partition in partitions:
        wanted.setdefault(topic, []).append(partition)
    found = log_offsets(client, wanted, which)
    result = {tp: found.get(tp, -1) for tp in partitions}
    unknown = [tp for tp, o in result.items() if o < 0 and which in (EARLIEST, LATEST)]
    if unknown:   # never commit -1: Kafka's tool stops here too
        raise AdminError(f"cannot read the log offsets of {_names(unknown)}")
    return result


def _within_log(client: AdminClient, requested: dict[TopicPartition, int],
                result: Plan) -> dict[TopicPartition, int]:
    """Kafka moves an offset outside [log start, log end] to the nearest end, and says so."""
    starts = _ends(client, list(requested), EARLIEST)
    ends = _ends(client, list(requested), LATEST)
    kept = {}
    for tp, wanted in sorted(requested.items()):
        if wanted > ends[tp]:
            result.warnings.append(f"New offset ({wanted}) is higher than latest offset for "
                                   f"{_names([tp])}: it will be set to {ends[tp]}.")
            wanted = ends[tp]
        elif wanted < starts[tp]:
            result.warnings.append(f"New offset ({wanted}) is lower than earliest offset for "
                                   f"{_names([tp])}: it will be set to {starts[tp]}.")
            wanted = starts[tp]
        kept[tp] = wanted
    return kept


def _names(partitions: list[TopicPartition]) -> str:
    return ", ".join(f"{topic}-{partition}" for topic, partition in partitions)


def _when(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000).astimezone().isoformat(
        timespec="milliseconds")
