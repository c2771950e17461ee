"""A classic group and its members: the data, and the small questions asked of it.

Decisions (who joins, when a phase completes) live in join.py, sync.py, etc.; this module only
keeps the group consistent: one member per instance id, a leader that is a member, legal state
transitions.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from roster.coordinator.classic.states import GroupState, check_transition, check_undo
from roster.coordinator.results import Parked
from roster.protocol.consumer_protocol import ConsumerProtocolError, decode_subscription

Protocols = tuple[tuple[str, bytes], ...]


@dataclass(eq=False, slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: Protocols   # (the protocol type is the group's: every member must share it)
    assignment: bytes = b""
    # when the member's session ends unless it is heard from (sessions.py); None: not watched
    session_deadline_ms: int | None = None
    # What a member is doing right now (a parked JoinGroup or SyncGroup, its first join) is
    # kept by its group (Group.joining, .syncing, .new_members): most members, most of the
    # time, are doing none of it, and a field each would cost every idle member 8 bytes.

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def vote(self, candidates: set[str]) -> str:
        """The first of this member's protocols, in its own order, that everyone supports."""
        return next(name for name, _ in self.protocols if name in candidates)


def discard(members: dict[str, object], member_id: str) -> object:
    """Remove a member id from a table of them, giving back the table's memory once it is
    empty: `joining`, `syncing` and `pending_sync` fill up during every rebalance and are empty
    in between, and a dict does not shrink by itself (a group of 10 would keep ~0.5 KB of empty
    slots per table for as long as it is idle). Returns what the id mapped to, or None."""
    value = members.pop(member_id, None)
    if not members:
        members.clear()
    return value


def rename(members: dict[str, object], old_id: str, new_id: str) -> None:
    if old_id in members:
        members[new_id] = members.pop(old_id)


@dataclass(eq=False, slots=True)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.DEAD
    state_timestamp: int = -1
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)   # instance id -> member id
    # KIP-394: ids handed out, each with the deadline by which it must rejoin (sessions.py)
    pending_members: dict[str, int | None] = field(default_factory=dict)
    # Sets of member ids are dicts (keys only): an empty dict is 64 bytes, an empty set 216,
    # and an idle group holds them all empty.
    pending_sync: dict[str, None] = field(default_factory=dict)   # joined, no SyncGroup yet
    # members parked in JoinGroup, with the request to answer: "has everyone rejoined?" is
    # asked on every join, so it must not scan the members (a 10,000-member rebalance would be
    # quadratic)
    joining: dict[str, Parked] = field(default_factory=dict)
    syncing: dict[str, Parked] = field(default_factory=dict)   # members parked in SyncGroup
    # members added by this join phase, not yet through it: while their JoinGroup is parked
    # they are not kept alive by it when their (new-member) session timer fires
    new_members: dict[str, None] = field(default_factory=dict)
    # how many members support each protocol name: candidates are those all members support,
    # asked on every join, so kept up to date rather than recomputed (Kafka does the same)
    protocol_counts: Counter = field(default_factory=Counter)
    new_member_added: bool = False        # during an initial rebalance's delay
    session_timer_ms: int | None = None   # the deadline the group's session timer is armed for
    recent_protocols: Protocols = ()      # see share_protocols
    # the subscribed topics' (id, partitions) when the generation formed (metadata_watch.py);
    # None: not watched
    watched: dict | None = None
    watched_generation: int = -1
    watch_checked_ms: int = 0
    # During a rebalance the metadata watch started: the members it no longer waits for
    # (away.py). None during any other join phase, and between join phases.
    away: dict[str, None] | None = None

    # -- state ---------------------------------------------------------------------------

    def transition_to(self, target: GroupState, now_ms: int, *, undo: bool = False) -> None:
        """Every change of state comes through here. `undo` goes back on a step whose records
        failed to be written (states.UNDOABLE: a deletion's Dead): not a transition of Kafka's
        table, and the state timestamp stays that of the step undone."""
        if undo:
            check_undo(self.state, target)
        else:
            check_transition(self.state, target)
            self.state_timestamp = now_ms
        self.previous_state, self.state = self.state, target

    # -- membership ----------------------------------------------------------------------

    def static_member_id(self, instance_id: str | None) -> str | None:
        return self.static_members.get(instance_id) if instance_id is not None else None

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member, protocol_type: str | None = None) -> None:
        """Add a member that joined with `protocol_type` (None: keep the group's)."""
        if not self.members and protocol_type is not None:
            self.protocol_type = protocol_type  # the first member fixes the group's type
        self.members[member.member_id] = member
        member.protocols = self.share_protocols(member.protocols)
        self.protocol_counts.update(_names(member.protocols))
        if member.is_static:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        for table in (self.pending_sync, self.joining, self.syncing, self.new_members):
            discard(table, member_id)
        if self.away:
            discard(self.away, member_id)
        if member is None:
            return None
        self._uncount(member.protocols)
        if member.is_static and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static(self, old_id: str, new_id: str) -> Member:
        """Give a static member a new id, keeping everything else (KIP-345 replacement)."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        # Kafka builds a fresh member object here, which is not "new": while its JoinGroup is
        # parked, the replacement counts as alive when its session timer fires.
        discard(self.new_members, old_id)
        self.members[new_id] = member
        self.static_members[member.group_instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        for table in (self.pending_sync, self.joining, self.syncing):
            rename(table, old_id, new_id)
        if self.away:
            rename(self.away, old_id, new_id)
        return member

    def set_protocols(self, member: Member, protocols: Protocols) -> None:
        self._uncount(member.protocols)
        member.protocols = self.share_protocols(protocols)
        self.protocol_counts.update(_names(protocols))

    def share_protocols(self, protocols: Protocols) -> Protocols:
        """The object already held for equal protocols, if the member before sent the same.
        Members of a group usually subscribe alike, and each copy of a subscription (tuples,
        names and metadata bytes) costs a few hundred bytes per member."""
        if protocols == self.recent_protocols:
            return self.recent_protocols
        self.recent_protocols = protocols
        return protocols

    def _uncount(self, protocols: Protocols) -> None:
        for name in _names(protocols):
            self.protocol_counts[name] -= 1
            if self.protocol_counts[name] <= 0:
                del self.protocol_counts[name]

    def park_join(self, member: Member, parked: Parked) -> None:
        self.joining[member.member_id] = parked
        if self.away:   # it came back: it is waited for like anyone who rejoined
            discard(self.away, member.member_id)

    def take_join(self, member: Member) -> Parked | None:
        """The member's parked JoinGroup, now no longer parked (None if there was none)."""
        return discard(self.joining, member.member_id)

    def park_sync(self, member: Member, parked: Parked) -> None:
        self.syncing[member.member_id] = parked

    def take_sync(self, member: Member) -> Parked | None:
        """The member's parked SyncGroup, now no longer parked (None if there was none)."""
        return discard(self.syncing, member.member_id)

    def is_joining(self, member: Member) -> bool:
        return member.member_id in self.joining

    def is_syncing(self, member: Member) -> bool:
        return member.member_id in self.syncing

    def is_new(self, member: Member) -> bool:
        return member.member_id in self.new_members

    def awaiting_join_count(self) -> int:
        return len(self.joining)

    def all_joined(self) -> bool:
        """Everyone the join phase waits for (known and pending members, except those a
        metadata-watch rebalance counts as away: away.py) has rejoined: it may complete early."""
        away = len(self.away) if self.away else 0
        return not self.pending_members and \
            self.awaiting_join_count() + away == len(self.members)

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols -----------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        everyone = len(self.members)
        return {name for name, count in self.protocol_counts.items() if count == everyone} \
            if everyone else set()

    def supports(self, protocol_type: str, protocols: Protocols) -> bool:
        """Could a member with these protocols join (Kafka's supportsProtocols)?"""
        # Kafka asks whether the group is in the Empty *state*, not whether it has members: a
        # group whose members all left during its join phase keeps its protocol type, and a
        # member of another type is refused until the group is Empty again.
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        if not self.members:  # every name is "supported by all" zero members
            return bool(protocols)
        candidates = self.candidate_protocols()
        return any(name in candidates for name, _ in protocols)

    def subscribed_topics(self) -> set[str] | None:
        """The topics the members subscribe to in the selected protocol (a "consumer" group's
        subscriptions), or None if one cannot be read: then callers must assume any topic may
        be consumed, as Kafka does."""
        topics: set[str] = set()
        for member in self.members.values():
            try:
                topics.update(decode_subscription(member.metadata(self.protocol_name)).topics)
            except (ConsumerProtocolError, KeyError):
                return None
        return topics

    def select_protocol(self) -> str:
        """The protocol most members vote for (each votes its first common preference)."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id} has no protocol every member supports")
        votes = Counter(m.vote(candidates) for m in self.members.values())
        # ties go to the name that sorts first, so the choice is deterministic
        return max(sorted(votes), key=lambda name: votes[name])


def _names(protocols: Protocols) -> set[str]:
    """A member's protocol names, each once: JoinGroup may list a name twice (Kafka's
    collection allows it), and Kafka counts a member's protocols as a set."""
    return {name for name, _ in protocols}
