"""The streams group (KIP-1071) state: the group, its members, their target and current task
assignments.

A task is (subtopology id, partition). A member's tasks come in three roles, active, standby and
warm-up, each `{subtopology id: frozenset of partitions}` (`Tasks`); `TaskSets` holds the three.

Members are immutable values, as in the consumer group: an operation builds the member's next
value and the group swaps it in (`put_member`), so a restart rebuilds the same state from the
records and a failed write puts the old value back.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Iterable, Iterator

from roster.frozen import frozen

Tasks = dict[str, frozenset[int]]
TaskId = tuple[str, int]

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2      # "a static member leaves and will come back with its instance id"


class MemberState(IntEnum):
    """Kafka's streams MemberState, as the State byte of StreamsGroupCurrentMemberAssignmentValue
    holds it: it counts from 1, unlike the consumer group's."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127


class GroupState:
    """Kafka's StreamsGroupState names, as ListGroups and StreamsGroupDescribe report them
    (Kafka 4.4.0's enum: NotReady is one word; its lower-case alias is not_ready)."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


def freeze(pairs: Iterable[tuple[str, Iterable[int]]]) -> Tasks:
    """Tasks from (subtopology, partitions) pairs; an empty partition set is left out, so two
    equal assignments compare equal however they were built."""
    out: Tasks = {}
    for subtopology, partitions in pairs:
        ps = frozenset(partitions)
        if ps:
            out[subtopology] = out.get(subtopology, frozenset()) | ps
    return out


def task_ids(tasks: Tasks) -> Iterator[TaskId]:
    for subtopology in sorted(tasks):
        for p in sorted(tasks[subtopology]):
            yield subtopology, p


def from_task_ids(ids: Iterable[TaskId]) -> Tasks:
    grouped: dict[str, set[int]] = {}
    for subtopology, p in ids:
        grouped.setdefault(subtopology, set()).add(p)
    return {s: frozenset(ps) for s, ps in grouped.items()}


def size(tasks: Tasks) -> int:
    return sum(len(ps) for ps in tasks.values())


def minus(tasks: Tasks, other: Tasks) -> Tasks:
    return freeze((s, ps - other.get(s, frozenset())) for s, ps in tasks.items())


@frozen
class TaskSets:
    """Kafka's TasksTuple: the active, standby and warm-up tasks of one member."""

    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def holds(self, task: TaskId) -> bool:
        s, p = task
        return any(p in role.get(s, ()) for role in (self.active, self.standby, self.warmup))


EMPTY = TaskSets()


@frozen
class Endpoint:
    """A member's Interactive Query endpoint (UserEndpoint: Host, Port as uint16)."""

    host: str
    port: int


@frozen
class StreamsMember:
    member_id: str
    # StreamsGroupMemberMetadataValue
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: Endpoint | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    # StreamsGroupCurrentMemberAssignmentValue
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: TaskSets = EMPTY
    pending_revocation: TaskSets = EMPTY
    # the epoch each active task was given at (KIP-1251's AssignmentEpochs), for OffsetCommit
    active_epochs: dict[TaskId, int] = field(default_factory=dict)
    # the changelog offsets the member last reported (TaskOffsets, TaskEndOffsets); kept in
    # memory only, as Kafka keeps them, and reported again after a coordinator move
    task_offsets: dict[TaskId, int] = field(default_factory=dict, compare=False)
    task_end_offsets: dict[TaskId, int] = field(default_factory=dict, compare=False)

    def replace(self, **changes) -> StreamsMember:
        return dataclasses.replace(self, **changes)

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None

    @property
    def left_temporarily(self) -> bool:
        """A static member that said it will come back (epoch -2), until its session ends."""
        return self.member_epoch == STATIC_LEAVE_EPOCH

    def reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch


@dataclass(slots=True)
class StreamsGroup:
    group_id: str
    group_epoch: int = 0
    # StreamsGroupMetadataValue's other fields: what the topics looked like when the topology
    # was last configured (roster's own hash: Kafka only compares it), the topology epoch then
    # found valid, and the assignment configs of the last epoch bump. A new group starts at 0
    # for both epochs, as Kafka 4.4.0's StreamsGroup (its TimelineIntegers start at 0); a
    # record without ValidatedTopologyEpoch replays as -1, the schema's default
    metadata_hash: int = 0
    validated_topology_epoch: int = 0
    last_assignment_configs: tuple[tuple[str, str], ...] | None = None
    assignment_epoch: int = 0
    members: dict[str, StreamsMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)   # instance id -> member id
    target: dict[str, TaskSets] = field(default_factory=dict)      # member id -> its target
    topology: object = None          # topology.Topology once a member has sent one
    # member id -> when it must be heard from next (the session; the edge arms the timer)
    session_deadlines: dict[str, int] = field(default_factory=dict, compare=False)
    # when its target assignment was last computed (StreamsGroupTargetAssignmentMetadataValue's
    # AssignmentTimestamp, KIP-1263; 0: never, or written by a broker without it): the next
    # waits for streams.assignment.interval.ms after it
    assignment_timestamp: int = 0

    def state(self, topology_ready: bool) -> str:
        """`topology_ready`: the topology is configured against the topics as they are now
        (topology.configure(...).ready); until then the group is NotReady."""
        if not self.members:
            return GroupState.EMPTY
        if self.topology is None or not topology_ready:
            return GroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        for member in self.members.values():
            if not member.reconciled_to(self.assignment_epoch):
                return GroupState.RECONCILING
        return GroupState.STABLE

    def static_member(self, instance_id: str) -> StreamsMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def active_owner(self, task: TaskId) -> str | None:
        """The member holding an active task (assigned, or still to revoke it)."""
        s, p = task
        for member in self.members.values():
            if p in member.assigned.active.get(s, ()) \
                    or p in member.pending_revocation.active.get(s, ()):
                return member.member_id
        return None

    def processes(self) -> dict[str, list[str]]:
        """process id -> its member ids, in member id order."""
        out: dict[str, list[str]] = {}
        for member_id in sorted(self.members):
            out.setdefault(self.members[member_id].process_id, []).append(member_id)
        return out

    # -- changing (the replay of records calls these) -----------------------------------

    def put_member(self, member: StreamsMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None and old.instance_id is not None \
                and old.instance_id != member.instance_id \
                and self.static_members.get(old.instance_id) == old.member_id:
            del self.static_members[old.instance_id]
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        self.session_deadlines.pop(member_id, None)
        if old is not None and old.instance_id is not None \
                and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
