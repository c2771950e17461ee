"""SyncGroup (reference §5): followers wait for the leader; the leader's assignment is written as
a group record and handed out once durable; a Stable group answers with stored assignments
(which is how SkipAssignment leaders and replaced static members get theirs)."""
from __future__ import annotations

import logging

from roster.coordinator import records
from roster.coordinator.group import Group, discard
from roster.coordinator.messages import SyncReply, SyncRequest
from roster.coordinator.rebalance import (
    maybe_prepare_rebalance_or_complete_join,
    propagate_assignment,
    reset_assignments_with_error,
)
from roster.coordinator.results import AfterWrite, Parked, Result
from roster.coordinator.states import GroupState
from roster.coordinator.timers import sync_key
from roster.coordinator.validation import generation_member_error
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinator")
S = GroupState


def sync(ctx, request: SyncRequest, now: int) -> Result:
    result = Result()
    group = ctx.groups.get(request.group_id)
    error = _check(group, request)
    if error is not None:
        result.reply(request.token, SyncReply(error=error))
        return result
    member = group.members[request.member_id]
    if group.state is S.PREPARING_REBALANCE:
        result.reply(request.token, SyncReply(error=ErrorCode.rebalance_in_progress))
    elif group.state is S.COMPLETING_REBALANCE:
        group.park_sync(member, Parked(request.token, request.api_version))
        _synced(group, member.member_id, result)
        if group.is_leader(member.member_id):
            _write_leader_assignment(group, request, result)
    else:  # Stable
        _synced(group, member.member_id, result)
        result.reply(request.token, SyncReply(protocol_type=group.protocol_type,
                                              protocol_name=group.protocol_name,
                                              assignment=member.assignment))
    return result


def _synced(group: Group, member_id: str, result: Result) -> None:
    discard(group.pending_sync, member_id)
    if not group.pending_sync:  # everyone has synced: nobody is left for the deadline to evict
        result.cancel(sync_key(group.group_id))


def _check(group: Group | None, request: SyncRequest) -> ErrorCode | None:
    if not request.group_id:
        return ErrorCode.invalid_group_id
    if group is not None and group.state is S.EMPTY:  # Kafka answers this before all else
        return ErrorCode.unknown_member_id
    error = generation_member_error(group, request.member_id, request.group_instance_id,
                                    request.generation)
    if error is not None:
        return error
    if not _consistent(request.protocol_type, group.protocol_type) or \
            not _consistent(request.protocol_name, group.protocol_name):
        return ErrorCode.inconsistent_group_protocol
    return None


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
    result.after_write.append(AfterWrite("leader-assignment", group.group_id,
                                         {"generation": request.generation,
                                          "assignments": assignments}))


def leader_assignment_written(ctx, group: Group, data: dict, error: ErrorCode | None, now: int,
                              result: Result) -> None:
    # Someone may have joined while the write was in flight: only act on the same generation.
    if group.state is not S.COMPLETING_REBALANCE or group.generation != data["generation"]:
        return
    if error is not None:
        reset_assignments_with_error(ctx, group, now, result, error)
        maybe_prepare_rebalance_or_complete_join(
            ctx, group, now, result, f"error {error.name} storing the group's assignment")
        return
    for member_id, assignment in data["assignments"].items():
        if member_id in group.members:
            group.members[member_id].assignment = assignment
    propagate_assignment(group, now, result, ErrorCode.none)
    group.transition_to(S.STABLE, now)
    log.info("group %s is Stable in generation %d", group.group_id, group.generation)
