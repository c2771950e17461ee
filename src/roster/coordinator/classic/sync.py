"""SyncGroup: followers wait for the leader; the leader's assignment is written as
a group record and handed out once durable; a Stable group answers with stored assignments
(which is how SkipAssignment leaders and replaced static members get theirs)."""
from __future__ import annotations

import logging

from roster.coordinator import facts
from roster.coordinator.classic import records
from roster.coordinator.classic.continuations import LeaderAssignmentWritten
from roster.coordinator.classic.group import Group, discard
from roster.coordinator.classic.rebalance import (
    maybe_prepare_rebalance_or_complete_join,
    propagate_assignment,
    reset_assignments_with_error,
)
from roster.coordinator.classic.states import SYNC_GROUP, Action, GroupState, Refuse
from roster.coordinator.classic.timers import sync_key
from roster.coordinator.classic.validation import generation_member_error
from roster.coordinator.messages import SyncReply, SyncRequest
from roster.coordinator.results import Parked, Result
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinator")
S = GroupState


def sync(ctx, request: SyncRequest, now: int) -> Result:
    result = Result()
    group = ctx.groups.get(request.group_id)
    answer = _check(group, request)
    match answer:
        case ErrorCode():
            result.reply(request.token, SyncReply(error=answer))
        case Action.PARK_SYNC:
            member = group.members[request.member_id]
            group.park_sync(member, Parked(request.token, request.api_version))
            _synced(group, member.member_id, result)
            if group.is_leader(member.member_id):
                _write_leader_assignment(group, request, result)
        case Action.GIVE_STORED_ASSIGNMENT:
            member = group.members[request.member_id]
            _synced(group, member.member_id, result)
            result.reply(request.token, SyncReply(protocol_type=group.protocol_type,
                                                  protocol_name=group.protocol_name,
                                                  assignment=member.assignment))
        case _:
            raise ValueError(f"SyncGroup has no answer {answer!r}")
    return result


def _synced(group: Group, member_id: str, result: Result) -> None:
    discard(group.pending_sync, member_id)
    if not group.pending_sync:  # everyone has synced: nobody is left for the deadline to evict
        result.cancel(sync_key(group.group_id))


def _check(group: Group | None, request: SyncRequest) -> ErrorCode | Action:
    """An error to answer, or what to do (the state's cell of states.SYNC_GROUP)."""
    if not request.group_id:
        return ErrorCode.invalid_group_id
    if group is None:
        return ErrorCode.unknown_member_id
    answer = SYNC_GROUP[group.state]
    if type(answer) is Refuse:
        return answer.error
    error = generation_member_error(group, request.member_id, request.group_instance_id,
                                    request.generation)
    if error is not None:
        return error
    if not _consistent(request.protocol_type, group.protocol_type) or \
            not _consistent(request.protocol_name, group.protocol_name):
        return ErrorCode.inconsistent_group_protocol
    return answer


def _consistent(sent: str | None, ours: str | None) -> bool:
    return sent is None or ours is None or sent == ours


def _write_leader_assignment(group: Group, request: SyncRequest, result: Result) -> None:
    given = dict(request.assignments)
    assignments = {member_id: given.get(member_id, b"") for member_id in group.members}
    missing = sorted(m for m in group.members if m not in given)
    if missing:
        log.warning("leader of group %s sent no assignment for %s; they get an empty one",
                    group.group_id, ", ".join(missing))
    result.records.append(records.group_metadata(group, assignments))
    result.after_write.append(LeaderAssignmentWritten(group.group_id, request.generation,
                                                      assignments))


def leader_assignment_written(ctx, group: Group, step: LeaderAssignmentWritten,
                              error: ErrorCode | None, now: int, result: Result) -> None:
    # Someone may have joined while the write was in flight: only act on the same generation.
    if group.state is not S.COMPLETING_REBALANCE or group.generation != step.generation:
        return
    if error is not None:
        reset_assignments_with_error(ctx, group, now, result, error)
        maybe_prepare_rebalance_or_complete_join(
            ctx, group, now, result, f"error {error.name} storing the group's assignment")
        return
    for member_id, assignment in step.assignments.items():
        if member_id in group.members:
            group.members[member_id].assignment = assignment
    propagate_assignment(group, now, result, ErrorCode.none)
    group.transition_to(S.STABLE, now)
    log.info("group %s is Stable in generation %d", group.group_id, group.generation)
    result.facts.append(facts.GenerationStable.of(group, now))
