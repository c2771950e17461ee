"""Heartbeat: keeps a member's session alive and tells it when to rejoin."""
from __future__ import annotations

from roster.coordinator.classic import metadata_watch
from roster.coordinator.classic.rebalance import reschedule_heartbeat
from roster.coordinator.classic.states import HEARTBEAT, GroupState, Refuse
from roster.coordinator.classic.validation import generation_member_error
from roster.coordinator.results import Result
from roster.protocol.errors import ErrorCode

WATCH_INTERVAL_MS = metadata_watch.CHECK_INTERVAL_MS


def check_in(ctx, group_id: str, generation: int, member_id: str, group_instance_id: str | None,
             now: int, result: Result) -> ErrorCode:
    """The heartbeat's answer (states.HEARTBEAT); a valid heartbeat also moves the member's
    session deadline, and any timer that needs adds to `result`. Writes no records, so the
    answer is final at once: the edge calls this directly, without a reply token. (A rebalance
    it starts because the subscribed topics changed answers no parked request: a Stable group
    has none, and the rebalance waits for its members to rejoin.)"""
    if not group_id:
        return ErrorCode.invalid_group_id
    group = ctx.groups.get(group_id)
    if group is None:
        return ErrorCode.unknown_member_id
    answer = HEARTBEAT[group.state]
    if type(answer) is Refuse:
        return answer.error
    error = generation_member_error(group, member_id, group_instance_id, generation)
    if error is not None:
        return error
    if group.state is not GroupState.EMPTY:   # an Empty group keeps no sessions
        reschedule_heartbeat(result, group, group.members[member_id], now)
    # The subscribed topics' note is compared at most once a second: most heartbeats stop at
    # this test, made here rather than by a call into metadata_watch.due.
    if group.watched is not None and now - group.watch_checked_ms >= WATCH_INTERVAL_MS \
            and group.state is GroupState.STABLE:
        found = metadata_watch.due(ctx, group, now)
        if found:
            # roster's: the subscribed topics changed, leader or not (metadata_watch.py). The
            # rebalance starts here; this member learns of it like any other, from its answer.
            metadata_watch.start_rebalance(ctx, group, now, result, found, member_id,
                                           group_instance_id)
            return HEARTBEAT[group.state]
    return answer
