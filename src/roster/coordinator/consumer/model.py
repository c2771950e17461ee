"""The consumer group (KIP-848) state: the group, its members, their target and current
assignments.

Members are immutable values: an operation builds the member's next value and the group swaps
it in (through replay(), the same function a restart uses), so a group's state can be saved
and restored cheaply (`snapshot`/`restore`) when its records cannot be written.

Topic ids are 16-byte `bytes` here (the edge converts to and from uuid.UUID), assignments are
`{topic id: frozenset of partition indexes}`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Iterable, Protocol

from roster.frozen import frozen

Assignment = dict[bytes, frozenset[int]]
EMPTY: Assignment = {}
# (topic id, partition) -> the epoch at which the member was given the partition (KIP-1251)
PartitionEpochs = dict[tuple[bytes, int], int]

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class MemberState(IntEnum):
    """As Kafka's MemberState (the byte in ConsumerGroupCurrentMemberAssignmentValue.State)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class GroupState:
    """Kafka's ConsumerGroupState names, as ListGroups/ConsumerGroupDescribe report them."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class TopicImage(Protocol):
    """What the coordinator reads of the topic catalog (the edge passes the live one)."""

    def lookup(self, name: str) -> tuple[bytes, int] | None:
        """(topic id, number of partitions) of an existing topic."""

    def name_of(self, topic_id: bytes) -> str | None: ...

    def names(self) -> Iterable[str]: ...

    def version(self) -> int | None:
        """Changes whenever the catalog does; None (unknown): every heartbeat compares the
        group's topics with the catalog."""


class DictTopicImage:
    """A fixed catalog: {name: (id, partitions)}. For tests and benchmarks."""

    def __init__(self, topics: dict[str, tuple[bytes, int]] | None = None) -> None:
        self.topics = dict(topics or {})

    def lookup(self, name: str) -> tuple[bytes, int] | None:
        return self.topics.get(name)

    def name_of(self, topic_id: bytes) -> str | None:
        for name, (tid, _) in self.topics.items():
            if tid == topic_id:
                return name
        return None

    def names(self) -> Iterable[str]:
        return self.topics.keys()

    def version(self) -> None:
        return None   # it may be changed in place: compare every time


class DescribableTopics:
    """A catalog whose listing holds only the topics `may_describe(name)` allows: what a
    consumer group's regexes resolve against when the member whose ConsumerGroupHeartbeat or
    classic JoinGroup resolves them may not DESCRIBE every topic (Kafka 4.4, KAFKA-18813).
    Lookups by name or id are the whole catalog's: topics subscribed by name were admitted with
    the request, and the assignment reads the metadata of every member's topics."""

    __slots__ = ("_image", "_may_describe")

    def __init__(self, image, may_describe) -> None:
        self._image = image
        self._may_describe = may_describe

    def lookup(self, name: str) -> tuple[bytes, int] | None:
        return self._image.lookup(name)

    def name_of(self, topic_id: bytes) -> str | None:
        return self._image.name_of(topic_id)

    def names(self):
        return [name for name in self._image.names() if self._may_describe(name)]

    def version(self) -> int:
        return self._image.version()


class VersionedTopicImage(DictTopicImage):
    """A DictTopicImage that says when it changed, as the broker's catalog does: its user
    bumps `changes` after changing `topics`. For tests of what the coordinators keep between
    catalog changes."""

    def __init__(self, topics: dict[str, tuple[bytes, int]] | None = None) -> None:
        super().__init__(topics)
        self.changes = 0

    def version(self) -> int:
        return self.changes


@frozen
class ClassicMetadata:
    """What a member speaking the classic protocol (JoinGroup/SyncGroup/Heartbeat) inside a
    consumer group brings (Kafka's ClassicMemberMetadata): its session timeout and the
    protocols it joined with, `(name, ConsumerProtocolSubscription bytes)` in its order."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The protocol it is told the group uses: its first (Kafka's choice too)."""
        return self.protocols[0][0]


def topic_names(names) -> tuple[str, ...]:
    """A member's subscribed topic names as Kafka keeps them: sorted (ConsumerGroupMember's
    builder sorts them), so its records and ConsumerGroupDescribe list them in that order and a
    member that names them in another order has not changed its subscription."""
    return tuple(sorted(names))


@frozen
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    # the current assignment (ConsumerGroupCurrentMemberAssignmentValue)
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # the assignment epoch of each partition in `assigned` and `pending_revocation`: an
    # OffsetCommit at an older member epoch is accepted for a partition held since then
    assignment_epochs: PartitionEpochs = field(default_factory=dict)
    # None: the member speaks the consumer protocol; set: the classic protocol (an online
    # upgrade in progress, consumer/classic_members.py)
    classic: ClassicMetadata | None = None

    def replace(self, **changes) -> ConsumerMember:
        return dataclasses.replace(self, **changes)

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None

    def reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def assignment_epoch(self, topic_id: bytes, partition: int) -> int | None:
        """The epoch the member was given a partition it holds (assigned or still revoking),
        None for one it does not hold. A partition without a recorded epoch (a record written
        before assignment epochs) counts from the member's epoch, as Kafka's replay does."""
        if partition not in self.assigned.get(topic_id, ()) \
                and partition not in self.pending_revocation.get(topic_id, ()):
            return None
        return self.assignment_epochs.get((topic_id, partition), max(self.member_epoch, 0))


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    # a new group starts at epoch 1, so its first member's join bumps it to 2 (Kafka 4.4's
    # ModernGroup constructor sets 1; a restart replays the stored epoch over it)
    group_epoch: int = 1
    assignment_epoch: int = 0          # the target assignment's epoch (-1 once deleted)
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)   # instance id -> member id
    target: dict[str, Assignment] = field(default_factory=dict)    # member id -> assignment
    # (topic id, partition) -> the member that currently holds it (assigned, or still
    # revoking it); a partition absent here is free to be given to its new owner
    owners: dict[tuple[bytes, int], str] = field(default_factory=dict)
    # what the last target assignment was computed from: {topic name: (id, partitions)}
    subscription_metadata: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    # regex -> resolved topic names, and the catalog names it was resolved against
    resolved_regex: dict[str, frozenset[str]] = field(default_factory=dict)
    # the catalog version the regexes were resolved against
    regex_version: object = field(default=None, compare=False)
    created_ms: int = field(default=-1, compare=False)
    # subscribed_names() and regexes(), until a member changes
    subscribed_cache: frozenset[str] | None = field(default=None, compare=False)
    regex_cache: frozenset[str] | None = field(default=None, compare=False)
    # sessions, as the classic groups keep them (coordinator/classic/sessions.py): member id -> when
    # it must be heard from next, and the deadline the group's one session timer is armed for;
    # a heartbeat only moves its member's deadline later: no timer work
    session_deadlines: dict[str, int] = field(default_factory=dict, compare=False)
    session_timer_ms: int | None = field(default=None, compare=False)
    # the topic catalog version (TopicImage.version) at which a heartbeat last found nothing
    # to change in this group; None after any change. While it holds, a member's heartbeat
    # that changes nothing of its own is answered without the full operation
    # (ConsumerCoordinator.steady_heartbeat)
    steady_version: object = field(default=None, compare=False)
    # members sent an assignment they have not yet reported owning (ConsumerCoordinator
    # ._heartbeat): every answer repeats it until they do. Kept in memory only: after a
    # restart a member's full request brings its assignment again
    unacknowledged: set[str] = field(default_factory=set, compare=False)
    # the timer keys of its classic members' join and sync deadlines (classic_members.py)
    # that are armed: they go with the group, so a timer left from an earlier group of the
    # same id (downgraded, then upgraded again) is known stale when it fires
    classic_timers: set[str] = field(default_factory=set, compare=False)

    # -- reading -------------------------------------------------------------------------

    def state(self) -> str:
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        for member in self.members.values():
            if not member.reconciled_to(self.assignment_epoch):
                return GroupState.RECONCILING
        return GroupState.STABLE

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def partition_epoch(self, topic_id: bytes, partition: int) -> int:
        """The epoch of the member holding the partition, -1 when it is free."""
        owner = self.owners.get((topic_id, partition))
        return -1 if owner is None else self.members[owner].member_epoch

    def member_topics(self, member: ConsumerMember) -> set[str]:
        """The topic names a member subscribes to, by name or through its resolved regex."""
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            names.update(self.resolved_regex.get(member.subscribed_topic_regex, ()))
        return names

    def subscribed_names(self) -> frozenset[str]:
        """Every topic name the members subscribe to (cached until a subscription or a
        regex resolution changes)."""
        if self.subscribed_cache is None:
            names: set[str] = set()
            for member in self.members.values():
                names.update(member.subscribed_topic_names)
            for regex in self.regexes():
                names.update(self.resolved_regex.get(regex, ()))
            self.subscribed_cache = frozenset(names)
        return self.subscribed_cache

    def regexes(self) -> frozenset[str]:
        """The regexes the members subscribe with (cached like subscribed_names())."""
        if self.regex_cache is None:
            self.regex_cache = frozenset(m.subscribed_topic_regex for m in self.members.values()
                                         if m.subscribed_topic_regex)
        return self.regex_cache

    # -- changing (only replay.py calls these) -----------------------------------------------

    def put_member(self, member: ConsumerMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            if old.instance_id is not None and old.instance_id != member.instance_id \
                    and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._hold(member)

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        self.session_deadlines.pop(member_id, None)
        self.unacknowledged.discard(member_id)
        if old is None:
            return
        self._release(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def _hold(self, member: ConsumerMember) -> None:
        member_id = member.member_id
        owners = self.owners
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    owners[(topic_id, p)] = member_id

    def _release(self, member: ConsumerMember) -> None:
        owners = self.owners
        member_id = member.member_id
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    if owners.get((topic_id, p)) == member_id:
                        del owners[(topic_id, p)]

    # -- saving and restoring (a write that failed) ------------------------------------------

    def snapshot(self) -> ConsumerGroup:
        return ConsumerGroup(
            self.group_id, self.group_epoch, self.assignment_epoch, dict(self.members),
            dict(self.static_members), dict(self.target), dict(self.owners),
            dict(self.subscription_metadata), dict(self.resolved_regex), self.regex_version,
            self.created_ms, self.subscribed_cache, self.regex_cache)


def assignment_size(assignment: Assignment) -> int:
    return sum(len(p) for p in assignment.values())


def freeze(pairs: Iterable[tuple[bytes, Iterable[int]]]) -> Assignment:
    out: Assignment = {}
    for topic_id, partitions in pairs:
        ps = frozenset(partitions)
        if ps:
            out[topic_id] = out.get(topic_id, frozenset()) | ps
    return out
