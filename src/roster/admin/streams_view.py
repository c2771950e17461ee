"""How `roster groups describe` asks for and draws a streams group (KIP-1071): the streams type's
DescribeView (admin/describe_views.py's protocol), handed over by its registration
(broker/groups/streams_group.py).

A streams group's members hold tasks, (subtopology, partition) in three roles (active, standby,
warm-up), not partitions. The view asks StreamsGroupDescribe for the members, their tasks and
the topology, then OffsetFetch for the group's committed offsets and Metadata and ListOffsets
for the end offsets of the source partitions, so lag is computed as the classic view computes
it (log end offset - committed offset). An active task s_p reads partition p of each of
subtopology s's source topics (its own and the repartition topics it reads): those are the
partitions its owner's lag is on, and what `members` gives the generic offsets view.

Over the wire only, so it works against Kafka 4.4 as against roster.
"""
from __future__ import annotations

from dataclasses import dataclass

from roster.admin.describe_views import DescribedGroup, Member, describe_one
from roster.admin.table import MISSING, columns
from roster.protocol.api_keys import ApiKey

ROLES = (("active", "active_tasks"), ("standby", "standby_tasks"), ("warmup", "warmup_tasks"))


@dataclass(frozen=True)
class StreamsDescription(DescribedGroup):
    """StreamsGroupDescribe's group with the offsets its lag needs."""
    group: object                             # StreamsGroupDescribe's DescribedGroup
    committed: dict                           # (topic, partition) -> committed offset
    ends: dict                                # (topic, partition) -> log end offset
    partitions: dict                          # source topic -> its partition count


def task_name(subtopology: str, partition: int) -> str:
    """Kafka Streams' own task id: <subtopology>_<partition>."""
    return f"{subtopology}_{partition}"


def _sources(group) -> dict[str, list[str]]:
    """subtopology id -> the topics its tasks read (source and repartition source topics)."""
    if group.topology is None:
        return {}
    return {s.subtopology_id: [*s.source_topics, *(t.name for t in s.repartition_source_topics)]
            for s in group.topology.subtopologies}


def _tasks(assignment, field: str) -> list[tuple[str, int]]:
    return sorted((t.subtopology_id, p) for t in getattr(assignment, field) or ()
                  for p in t.partitions)


def _who(member) -> str:
    return member.instance_id or member.member_id


class StreamsView:
    """StreamsGroupDescribe (89): streams groups (KIP-1071)."""
    name = "streams"

    def ask(self, client, group_id: str):
        from roster.admin.offsets import LATEST, committed, log_offsets
        from roster.admin.topics import metadata
        group = describe_one(client, ApiKey.STREAMS_GROUP_DESCRIBE, group_id)
        if group is None or group.error_code.value:
            return group, False
        offsets = committed(client, group_id)
        topics = sorted({t for names in _sources(group).values() for t in names})
        partitions = {}
        if topics:
            for topic in metadata(client, topics).topics:
                if not topic.error_code.value:
                    partitions[topic.name] = len(topic.partitions)
        wanted: dict[str, list[int]] = {t: list(range(n)) for t, n in partitions.items()}
        for topic, partition in offsets:
            if partition not in wanted.setdefault(topic, []):
                wanted[topic].append(partition)
        ends = log_offsets(client, wanted, LATEST) if wanted else {}
        return StreamsDescription(group, offsets, ends, partitions), True

    def not_found(self, group_id: str, answer):
        from roster.admin.groups import GroupNotFound
        raise GroupNotFound(f"streams group '{group_id}' does not exist")

    def recognises(self, answer) -> bool:
        return isinstance(answer, StreamsDescription)

    def lines(self, described, record=None) -> list[str]:
        group = described.group
        topology = MISSING if group.topology is None else str(group.topology.epoch)
        lines = [f"Group: {group.group_id}\tState: {group.group_state}\t"
                 f"Type: streams (KIP-1071)\tMembers: {len(group.members)}",
                 f"GroupEpoch: {group.group_epoch}\tAssignmentEpoch: "
                 f"{group.assignment_epoch}\tTopologyEpoch: {topology}"]
        members = sorted(group.members, key=lambda m: (m.instance_id or "", m.member_id))

        def tasks(assignment, field) -> str:
            return ",".join(task_name(s, p) for s, p in _tasks(assignment, field)) or MISSING

        rows = [("MEMBER-ID", "INSTANCE-ID", "PROCESS-ID", "EPOCH", "CLIENT-ID", "HOST",
                 "ACTIVE", "STANDBY", "WARMUP")]
        for m in members:
            epoch = "-2 (away)" if m.member_epoch == -2 else str(m.member_epoch)
            rows.append((m.member_id, m.instance_id or MISSING, m.process_id, epoch, m.client_id,
                         m.client_host, *(tasks(m.assignment, f) for _, f in ROLES)))
        lines += [""] + columns(rows)
        # every task with its holders, and the one the target gives it to when they differ
        holders: dict[tuple[str, int], dict[str, list[str]]] = {}
        targets: dict[tuple[str, int], dict[str, list[str]]] = {}
        for m in members:
            for role, field in ROLES:
                for task in _tasks(m.assignment, field):
                    holders.setdefault(task, {}).setdefault(role, []).append(_who(m))
                for task in _tasks(m.target_assignment, field):
                    targets.setdefault(task, {}).setdefault(role, []).append(_who(m))
        if holders or targets:
            rows = [("TASK", "ROLE", "OWNER", "TARGET")]
            for task in sorted({*holders, *targets}):
                for role, _ in ROLES:
                    now = holders.get(task, {}).get(role, [])
                    then = targets.get(task, {}).get(role, [])
                    if now or then:
                        rows.append((task_name(*task), role, ",".join(now) or MISSING,
                                     ",".join(then) or MISSING))
            lines += [""] + columns(rows)
        lag = self._lag_rows(described)
        if lag:
            rows = [("TOPIC", "PARTITION", "TASK", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                     "OWNER")]
            rows += lag
            lines += [""] + columns(rows)
        else:
            lines += ["", f"Group {group.group_id} has no committed offsets and no source "
                          "partitions."]
        return lines

    @staticmethod
    def _lag_rows(described) -> list[tuple[str, ...]]:
        """One row per source partition (and per other committed partition): the task that
        reads it, the committed and end offsets, the lag and the active task's owner."""
        group = described.group
        owner: dict[tuple[str, int], str] = {}
        for m in group.members:
            for task in _tasks(m.assignment, "active_tasks"):
                owner[task] = _who(m)
        rows, seen = [], set()
        for subtopology, topics in sorted(_sources(group).items()):
            for topic in topics:
                for p in range(described.partitions.get(topic, 0)):
                    seen.add((topic, p))
                    rows.append(_lag_row(described, topic, p, task_name(subtopology, p),
                                         owner.get((subtopology, p), MISSING)))
        for topic, p in sorted(described.committed):
            if (topic, p) not in seen:
                rows.append(_lag_row(described, topic, p, MISSING, MISSING))
        return rows

    def members(self, described) -> list[Member]:
        sources = _sources(described.group)
        return [Member(m.member_id, m.instance_id, m.client_id, m.client_host, tuple(sorted(
            (topic, p) for s, p in _tasks(m.assignment, "active_tasks")
            for topic in sources.get(s, ()))))
                for m in described.group.members]

    def strategy(self, described) -> str:
        return "sticky"   # the broker's task assignor (Kafka's StickyTaskAssignor)


def _lag_row(described, topic: str, partition: int, task: str, owner: str) -> tuple:
    current = described.committed.get((topic, partition))
    end = described.ends.get((topic, partition), -1)
    lag = max(end - current, 0) if current is not None and end >= 0 else None
    return (topic, str(partition), task, MISSING if current is None else str(current),
            MISSING if end < 0 else str(end), MISSING if lag is None else str(lag), owner)


STREAMS_VIEW = StreamsView()
