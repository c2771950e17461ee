"""The coordinator facade: owns the groups, and routes requests, timer events and write
completions to the modules that decide them. Time comes in with every call; member ids come
from the injected generator."""
from __future__ import annotations

from collections.abc import Callable

from roster.coordinator import (
    admin,
    away,
    expectations,
    expiry,
    heartbeat,
    join,
    leave,
    metadata_watch,
    offsets,
    rebalance,
    sync,
    tombstones,
)
from roster.coordinator.config import GroupConfig
from roster.coordinator.continuations import (
    Continuation,
    GroupsDeleted,
    LeaderAssignmentWritten,
    OffsetsCommitted,
    OffsetsDeleted,
    OffsetsExpired,
    StaticMemberReplaced,
)
from roster.coordinator.group import Group
from roster.coordinator.messages import CommitRequest, JoinRequest, LeaveRequest, SyncRequest
from roster.coordinator.replay import replay
from roster.coordinator.results import Result
from roster.coordinator.states import GroupState
from roster.coordinator.timers import AwayCheck, JoinDeadline, SessionDeadline, SyncDeadline
from roster.observability.recorder import ClassicRecorder
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import Record


class Coordinator:
    def __init__(self, config: GroupConfig, new_member_id: Callable[[str], str]) -> None:
        self.config = config
        self.groups: dict[str, Group] = {}
        self._new_member_id = new_member_id
        self.recorder = ClassicRecorder()  # flight recorder (docs/observability.md)
        # the topic catalog (consumer.model.TopicImage), set by the edge: what
        # metadata_watch.py compares subscriptions against; None: nothing is watched
        self.topics = None
        # group id -> expectations.Expected | None (pre-registered static members), set by
        # the edge from the group configs
        self.expected = None

    # -- context used by the operation modules ----------------------------------------------

    def new_member_id(self, prefix: str) -> str:
        return self._new_member_id(prefix)

    def create_group(self, group_id: str, now: int) -> Group:
        group = self.groups[group_id] = Group(group_id, state_timestamp=now)
        return group

    def replay(self, record: Record, now: int = -1) -> None:
        replay(self.groups, record, now)

    # -- requests ---------------------------------------------------------------------------

    def join(self, request: JoinRequest, now: int) -> Result:
        refused = expectations.screen(self, request, now)
        if refused is not None:
            return refused
        first = metadata_watch.before_static_rejoin(self, request, now)
        result = join.join(self, request, now)
        metadata_watch.after(self, request.group_id, now)
        return result if first is None else metadata_watch.merged(first, result)

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

    def commit_offsets(self, request: CommitRequest, now: int) -> Result:
        return offsets.commit(self, request, now)

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]], now: int,
                       token=None) -> Result:
        return offsets.delete(self, group_id, partitions, now, token)

    def fetch_offsets(self, group_id: str, wanted: list[tuple[str, int]] | None):
        return offsets.fetch(self, group_id, wanted)

    def describe(self, group_id: str):
        return admin.describe(self, group_id)

    def list_groups(self, states: set[str] | None = None, types: set[str] | None = None):
        return admin.list_groups(self, states, types)

    def delete_groups(self, group_ids: list[str], now: int, token=None) -> Result:
        return admin.delete(self, group_ids, now, token)

    def expire_offsets(self, now: int) -> Result:
        return expiry.expire_offsets(self, now)

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

    def write_completed(self, step: Continuation, error: ErrorCode | None, now: int) -> Result:
        """Continue an operation whose records were written (error None) or failed to be. The
        error is already the one clients are told (the edge maps storage errors)."""
        result = Result()
        match step:
            case OffsetsCommitted():
                offsets.commit_written(self, step, error, result)
            case OffsetsDeleted():
                offsets.deletion_written(self, step, error, now, result)
            case GroupsDeleted():
                admin.deletion_written(self, step, error, now, result)
            case OffsetsExpired():
                tombstones.settle(self, step.tombstones, error, now)
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
