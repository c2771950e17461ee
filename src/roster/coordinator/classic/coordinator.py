"""The classic coordinator's facade: owns the classic groups (simple groups included), and
routes requests, timer events and write completions to the modules that decide them. Time comes
in with every call; member ids come from the injected generator. It is one of the shard's group
types (group_type.py, shard.py): offsets live in the shard's OffsetStore, and the classic rules
for them in offsets.py."""
from __future__ import annotations

from collections.abc import Callable

from roster.coordinator import facts
from roster.coordinator.classic import (
    admin,
    away,
    expectations,
    heartbeat,
    join,
    leave,
    metadata_watch,
    offsets,
    rebalance,
    sync,
    tombstones,
)
from roster.coordinator.classic import replay as classic_replay
from roster.coordinator.classic.continuations import (
    ClassicContinuation,
    LeaderAssignmentWritten,
    StaticMemberReplaced,
)
from roster.coordinator.classic.group import Group
from roster.coordinator.classic.states import GroupState
from roster.coordinator.classic.timers import AwayCheck, JoinDeadline, SessionDeadline, SyncDeadline
from roster.coordinator.config import GroupConfig
from roster.coordinator.group_type import GroupsById
from roster.coordinator.messages import (
    CommitRequest,
    GroupDescription,
    GroupOverview,
    JoinRequest,
    LeaveRequest,
    SyncRequest,
)
from roster.coordinator.offset_store import OffsetExpiry
from roster.coordinator.results import Result
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import GroupKey, Record


class Coordinator(GroupsById):
    name = "classic"
    steps = ()   # the shard hands it every timer event and continuation no other type claims
    # a ConsumerGroupHeartbeat on its ids goes to the consumer type, which converts the group
    accepts = frozenset({"classic", "consumer"})
    serves = frozenset({"classic"})

    def __init__(self, config: GroupConfig, new_member_id: Callable[[str], str],
                 topics=None, expected=None) -> None:
        self.config = config
        self.groups: dict[str, Group] = {}
        self._new_member_id = new_member_id
        # the topic catalog (consumer.model.TopicImage): what metadata_watch.py compares
        # subscriptions against; None: nothing is watched
        self.topics = topics
        # group id -> expectations.Expected | None (pre-registered static members), from the
        # group configs
        self.expected = expected

    # -- context used by the operation modules ----------------------------------------------

    def new_member_id(self, prefix: str) -> str:
        return self._new_member_id(prefix)

    def create_group(self, group_id: str, now: int) -> Group:
        group = self.groups[group_id] = Group(group_id, state_timestamp=now)
        return group

    def give_way(self, group_id: str) -> None:
        """A group of another type replayed for this id replaces a memberless classic group of
        it (a simple group whose offsets came first, while loading), as Kafka converts it."""
        group = self.groups.get(group_id)
        if group is not None and not group.members:
            del self.groups[group_id]

    def own(self, record: Record) -> Record | None:
        return record if type(record.key) is GroupKey else None

    def replay(self, record: Record, now: int = -1) -> None:
        classic_replay.replay(self.groups, record, now)

    # -- requests ---------------------------------------------------------------------------

    def join(self, request: JoinRequest, now: int) -> Result:
        refused = expectations.screen(self, request, now)
        if refused is not None:
            return refused
        first = metadata_watch.before_static_rejoin(self, request, now)
        result = join.join(self, request, now)
        metadata_watch.after(self, request.group_id, now)
        return result if first is None else first.merge(result)

    def sync(self, request: SyncRequest, now: int) -> Result:
        return sync.sync(self, request, now)

    def check_in(self, group_id: str, generation: int, member_id: str,
                 group_instance_id: str | None, now: int, result: Result) -> ErrorCode:
        """Heartbeat: returns the answer at once (it writes nothing, so it never waits; no
        reply token); timer changes go into `result` (see heartbeat.check_in)."""
        return heartbeat.check_in(self, group_id, generation, member_id, group_instance_id, now,
                                  result)

    def leave(self, request: LeaveRequest, now: int) -> Result:
        result = leave.leave(self, request, now)
        metadata_watch.after(self, request.group_id, now)
        return result

    # -- what the shard asks of a group type (group_type.py) ----------------------------------

    def being_deleted(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and group.state is GroupState.DEAD

    def listed(self) -> list[GroupOverview]:
        return admin.listed(self)

    def describe_group(self, group_id: str) -> GroupDescription | None:
        return admin.describe(self, group_id)

    def console_view(self, group_id: str):
        return admin.console_view(self, group_id)

    def subscribed_topics(self, group_id: str):
        return offsets.subscribed(self.groups.get(group_id))

    def validate_offset_commit(self, request: CommitRequest, now: int,
                               result: Result) -> ErrorCode | None:
        return offsets.validate_commit(self, request, now, result)

    def validate_offset_fetch(self, group_id: str, member_id: str | None,
                              epoch: int) -> ErrorCode | None:
        return None   # a classic OffsetFetch names no member to check

    def validate_offset_delete(self, group_id: str) -> ErrorCode | None:
        return offsets.validate_delete(self.groups.get(group_id))

    def offset_expiry(self, group_id: str) -> OffsetExpiry | None:
        return offsets.expiry(self.groups.get(group_id))

    def goes_with_its_offsets(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and group.state is GroupState.EMPTY and not group.members

    def validate_delete_group(self, group_id: str) -> ErrorCode | None:
        return admin.validate_delete(self.groups.get(group_id))

    def delete_group(self, group_id: str, now: int, result: Result) -> tuple[Record, ...]:
        group = self.groups[group_id]
        # noted now; its event waits for the tombstone's write (and goes if that fails)
        result.facts.append(facts.GroupDeleted(self.name, group_id, group.generation, now))
        return tombstones.bury(group, now, result)

    def groups_loaded(self, group_ids: list[str], now: int) -> Result:
        """After replay: every member's session starts now (one that never returns expires
        after one session timeout), and a group over group.max.size must rebalance."""
        result = Result()
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is not None:
                rebalance.on_loaded(self, group, now, result)
                metadata_watch.after(self, group_id, now)
        return result

    # -- timers and writes --------------------------------------------------------------------

    def expire(self, event, now: int) -> Result:
        result = Result()
        group = self.groups.get(event.group_id)
        if group is None:
            return result
        match event:
            case SessionDeadline():
                rebalance.sessions_lapsed(self, group, now, result)
            case JoinDeadline():
                rebalance.join_deadline(self, group, event, now, result)
            case SyncDeadline():
                rebalance.sync_deadline(self, group, event, now, result)
            case AwayCheck():
                away.check(self, group, now, result)
        metadata_watch.after(self, event.group_id, now)
        return result

    def write_completed(self, step: ClassicContinuation, error: ErrorCode | None, now: int) -> Result:
        """Continue an operation whose records were written (error None) or failed to be. The
        error is already the one clients are told (the edge maps storage errors)."""
        result = Result()
        match step:
            case LeaderAssignmentWritten():
                group = self._live(step.group_id)
                if group is not None:
                    sync.leader_assignment_written(self, group, step, error, now, result)
            case StaticMemberReplaced():
                group = self._live(step.group_id)
                if group is not None:
                    join.static_replacement_written(self, group, step, error, now, result)
            case _:
                raise TypeError(f"not a continuation: {step!r}")
        return result

    def _live(self, group_id: str) -> Group | None:
        """The group, unless it is gone or being deleted (then a continuation has no one left
        to answer)."""
        group = self.groups.get(group_id)
        return None if group is None or group.state is GroupState.DEAD else group
