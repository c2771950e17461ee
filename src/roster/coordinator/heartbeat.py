"""Heartbeat (reference §5): keeps a member's session alive and tells it when to rejoin."""
from __future__ import annotations

from roster.coordinator.messages import HeartbeatRequest
from roster.coordinator.rebalance import reschedule_heartbeat
from roster.coordinator.results import Result
from roster.coordinator.states import HEARTBEAT, GroupState
from roster.coordinator.validation import generation_member_error
from roster.protocol.errors import ErrorCode


def heartbeat(ctx, request: HeartbeatRequest, now: int) -> Result:
    result = Result()
    result.reply(request.token, _answer(ctx, request, now, result))
    return result


def _answer(ctx, request: HeartbeatRequest, now: int, result: Result) -> ErrorCode:
    if not request.group_id:
        return ErrorCode.invalid_group_id
    group = ctx.groups.get(request.group_id)
    error = generation_member_error(group, request.member_id, request.group_instance_id,
                                    request.generation)
    if error is not None:
        return error
    answer = ErrorCode[HEARTBEAT[group.state]]
    if group.state is not GroupState.EMPTY:
        reschedule_heartbeat(result, group, group.members[request.member_id], now)
    return answer
