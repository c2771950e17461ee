"""LeaveGroup: members leaving by id, and the admin path of KIP-345 that removes
static members by group.instance.id (member id "")."""
from __future__ import annotations

import logging

from roster.coordinator import triggers as tr
from roster.coordinator.classic.group import Group
from roster.coordinator.classic.rebalance import (
    answer_join,
    maybe_complete_join,
    maybe_prepare_rebalance_or_complete_join,
)
from roster.coordinator.classic.states import LEAVE_GROUP, Action, GroupState, Refuse
from roster.coordinator.classic.validation import member_error
from roster.coordinator.messages import JoinReply, LeaveMemberResult, LeaveReply, LeaveRequest
from roster.coordinator.results import Result
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinator")
S = GroupState


def leave(ctx, request: LeaveRequest, now: int) -> Result:
    result = Result()
    if not request.group_id:
        result.reply(request.token, LeaveReply(error=ErrorCode.invalid_group_id))
        return result
    group = ctx.groups.get(request.group_id)
    if group is None:
        result.reply(request.token, LeaveReply(members=tuple(
            LeaveMemberResult(m.member_id, m.group_instance_id, ErrorCode.unknown_member_id)
            for m in request.members)))
        return result
    answer = LEAVE_GROUP[group.state]
    match answer:
        case Refuse(error=error) | (ErrorCode() as error):
            result.reply(request.token, LeaveReply(error=error))
            return result

    outcomes = []
    for identity in request.members:
        error = _remove(group, identity, result)
        outcomes.append(LeaveMemberResult(identity.member_id, identity.group_instance_id, error))
    removed = [o.member_id or o.group_instance_id for o in outcomes if o.error is ErrorCode.none]
    if removed:
        match answer:
            case Action.REMOVE_AND_REBALANCE:
                reason = f"LeaveGroup for {', '.join(str(r) for r in removed)}"
                maybe_prepare_rebalance_or_complete_join(ctx, group, now, result, reason,
                                                         _trigger(request, outcomes))
            case Action.REMOVE_AND_COMPLETE_JOIN:
                maybe_complete_join(ctx, group, now, result)
            case Action.REMOVE_MEMBERS:
                pass
            case _:
                raise ValueError(f"LeaveGroup has no answer {answer!r}")
    result.reply(request.token, LeaveReply(members=tuple(outcomes)))
    return result


def _trigger(request: LeaveRequest, outcomes) -> tr.Trigger:
    """Who left, for the flight recorder: an admin removal names instance ids only."""
    gone = [(i, o) for i, o in zip(request.members, outcomes) if o.error is ErrorCode.none]
    identity, _ = gone[0]
    kind = tr.ADMIN_REMOVAL if identity.member_id == "" else tr.MEMBER_LEFT
    return tr.Trigger(kind, identity.member_id or None, identity.group_instance_id,
                      identity.reason or None,
                      detail=", ".join(i.member_id or str(i.group_instance_id) for i, _ in gone))


def _remove(group: Group, identity, result: Result) -> ErrorCode:
    if identity.member_id == "":
        member_id = group.static_member_id(identity.group_instance_id)
        if member_id is None:
            return ErrorCode.unknown_member_id
        _remove_member(group, member_id, result, "removed by group instance id")
        return ErrorCode.none
    if identity.member_id in group.pending_members:
        del group.pending_members[identity.member_id]  # and with it, its deadline
        return ErrorCode.none
    error = member_error(group, identity.member_id, identity.group_instance_id)
    if error is not None:
        return error
    _remove_member(group, identity.member_id, result, identity.reason or "it left")
    return ErrorCode.none


def _remove_member(group: Group, member_id: str, result: Result, reason: str) -> None:
    member = group.members[member_id]
    answer_join(result, group, member, JoinReply(error=ErrorCode.unknown_member_id))
    group.remove(member_id)
    log.info("member %s left group %s: %s", member_id, group.group_id, reason)
