"""Heartbeat (reference §5): keeps a member's session alive and tells it when to rejoin."""
from __future__ import annotations

from roster.coordinator.messages import HeartbeatRequest
from roster.coordinator.rebalance import reschedule_heartbeat
from roster.coordinator.results import Result
from roster.coordinator.states import HEARTBEAT, GroupState
from roster.coordinator.validation import member_error
from roster.protocol.errors import ErrorCode


def heartbeat(ctx, request: HeartbeatRequest, now: int) -> Result:
    result = Result()
    result.reply(request.token, _answer(ctx, request, now, result))
    return result


def _answer(ctx, request: HeartbeatRequest, now: int, result: Result) -> ErrorCode:
    if not request.group_id:
        return ErrorCode.invalid_group_id
    group = ctx.groups.get(request.group_id)
    if group is None:
        return ErrorCode.unknown_member_id
    if group.state is GroupState.DEAD:
        return ErrorCode.coordinator_not_available
    error = member_error(group, request.member_id, request.group_instance_id)
    if error is not None:
        return error
    if request.generation != group.generation:
        return ErrorCode.illegal_generation
    answer = ErrorCode[HEARTBEAT[group.state]]
    if group.state is not GroupState.EMPTY:
        reschedule_heartbeat(result, group, group.members[request.member_id], now)
    return answer
