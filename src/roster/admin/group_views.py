"""The three views of `kafka-consumer-groups --describe`, for classic and consumer (KIP-848)
groups alike:

- offsets (Kafka's default): one row per partition the group has an owner or a committed offset
  for: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID, so lag
  and ownership are read in one place;
- members: GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS;
- state: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS.

Each returns (lines for stdout, notes for stderr): as Kafka's tool, a group without members or in
the middle of a rebalance is said so on stderr, so the table on stdout stays parseable.
"""
from __future__ import annotations

from roster.admin.client import AdminClient
from roster.admin.describe_views import Member
from roster.admin.groups import describe, view_of
from roster.admin.offsets import LATEST, committed, log_offsets
from roster.admin.table import MISSING, columns
from roster.protocol.api_keys import ApiKey

REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


def members(group, types=None) -> list[Member]:
    """The members of a describe answer, with their partitions, as its type's view reads
    them (admin/describe_views.py)."""
    return view_of(group, types).members(group)


def _state_notes(group_id: str, state: str) -> list[str]:
    if state == "Dead":
        return [f"Consumer group '{group_id}' does not exist."]
    if state == "Empty":
        return [f"Consumer group '{group_id}' has no active members."]
    if state in REBALANCING:
        return [f"Warning: consumer group '{group_id}' is rebalancing."]
    return []


def offsets_view(client: AdminClient, group_id: str,
                 types=None) -> tuple[list[str], list[str]]:
    group = describe(client, group_id, types)
    notes = _state_notes(group_id, group.group_state)
    offsets = committed(client, group_id)
    rows: list[tuple[tuple[str, int], Member | None]] = []
    # as Kafka: the members with the most partitions first, each one's partitions in order,
    # then the committed partitions nobody owns
    for member in sorted(members(group, types), key=lambda m: -len(m.partitions)):
        rows += [(tp, member) for tp in member.partitions]
    owned = {tp for tp, _ in rows}
    rows += [(tp, None) for tp in sorted(offsets) if tp not in owned]
    if not rows:
        if group.group_state != "Dead":
            notes.append(f"Group {group_id} has no committed offsets and no partitions "
                         "assigned.")
        return [], notes
    wanted: dict[str, list[int]] = {}
    for topic, partition in {tp for tp, _ in rows}:
        wanted.setdefault(topic, []).append(partition)
    ends = log_offsets(client, wanted, LATEST)
    table = [("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
              "CONSUMER-ID", "HOST", "CLIENT-ID")]
    for (topic, partition), member in rows:
        current, end = offsets.get((topic, partition)), ends.get((topic, partition), -1)
        lag = max(end - current, 0) if current is not None and end >= 0 else None
        table.append((group_id, topic, str(partition), _or_missing(current),
                      _or_missing(end if end >= 0 else None), _or_missing(lag),
                      member.member_id if member else MISSING,
                      member.host if member else MISSING,
                      member.client_id if member else MISSING))
    return columns(table), notes


def members_view(client: AdminClient, group_id: str,
                 types=None) -> tuple[list[str], list[str]]:
    group = describe(client, group_id, types)
    notes = _state_notes(group_id, group.group_state)
    found = members(group, types)
    if not found:
        return [], notes
    with_instances = any(m.instance_id for m in found)
    header = ("GROUP", "CONSUMER-ID") + (("GROUP-INSTANCE-ID",) if with_instances else ()) \
        + ("HOST", "CLIENT-ID", "#PARTITIONS")
    table = [header]
    for m in sorted(found, key=lambda m: (m.instance_id or "", m.member_id)):
        table.append((group_id, m.member_id)
                     + ((m.instance_id or MISSING,) if with_instances else ())
                     + (m.host, m.client_id, str(len(m.partitions))))
    return columns(table), notes


def state_view(client: AdminClient, group_id: str,
               types=None) -> tuple[list[str], list[str]]:
    group = describe(client, group_id, types)
    notes = _state_notes(group_id, group.group_state)
    if group.group_state == "Dead":
        return [], notes
    strategy = view_of(group, types).strategy(group)
    table = [("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
             (group_id, _coordinator(client, group_id), strategy or MISSING, group.group_state,
              str(len(group.members)))]
    return columns(table), notes


def _coordinator(client: AdminClient, group_id: str) -> str:
    """host:port  (node id) of the group's coordinator, as FindCoordinator answers."""
    # newest-version field names: make() keeps those of the version spoken (v4+ batches keys)
    answer = client.call(ApiKey.FIND_COORDINATOR, key=group_id, key_type=0,
                         coordinator_keys=(group_id,))
    found = answer.coordinators[0] if hasattr(answer, "coordinators") else answer
    if found.error_code.value:
        return f"{MISSING}  ({found.error_code.name.upper()})"
    return f"{found.host}:{found.port}  ({found.node_id})"


def _or_missing(value: int | None) -> str:
    return MISSING if value is None else str(value)
