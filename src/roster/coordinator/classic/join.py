"""JoinGroup, as released Kafka decides it: checks, new members (KIP-394 pending
ids for dynamic members, immediate entry for static ones), known members by state, and static
member replacement (KIP-345) with the KIP-814 SkipAssignment answer."""
from __future__ import annotations

import logging

from roster.coordinator import facts
from roster.coordinator import triggers as tr
from roster.coordinator.classic import records
from roster.coordinator.classic.changes import StaticIdReplaced
from roster.coordinator.classic.continuations import StaticMemberReplaced
from roster.coordinator.classic.group import Group, Member
from roster.coordinator.classic.rebalance import (
    answer_join,
    answer_sync,
    current_generation_reply,
    maybe_complete_join,
    maybe_prepare_rebalance_or_complete_join,
    member_list,
    prepare_rebalance,
    reschedule_heartbeat,
)
from roster.coordinator.classic.sessions import add_pending
from roster.coordinator.classic.sharing import shared_int, shared_str
from roster.coordinator.classic.states import (
    CAN_REBALANCE,
    JOIN_GROUP_KNOWN_MEMBER,
    JOIN_GROUP_NEW_MEMBER,
    Action,
    GroupState,
    IllegalTransition,
    Refuse,
)
from roster.coordinator.classic.validation import member_error
from roster.coordinator.messages import JoinReply, JoinRequest, SyncReply
from roster.coordinator.results import Parked, Result
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinator")
S = GroupState
KNOWN_MEMBER_ID_REQUIRED_FROM = 4   # KIP-394
SKIP_ASSIGNMENT_FROM = 9            # KIP-814


def join(ctx, request: JoinRequest, now: int) -> Result:
    result = Result()
    error = _precheck(ctx, request)
    if error is not None:
        result.reply(request.token, JoinReply(error=error, member_id=request.member_id))
        return result
    new_member = request.member_id == ""
    group = ctx.groups.get(request.group_id)
    created = False
    if group is None:
        if not new_member:
            result.reply(request.token, JoinReply(error=ErrorCode.unknown_member_id,
                                                  member_id=request.member_id))
            return result
        group = ctx.create_group(request.group_id, now)
        created = True

    if not _accepts_joining_member(ctx, group, request.member_id):
        group.remove(request.member_id)
        group.pending_members.pop(request.member_id, None)
        result.reply(request.token, JoinReply(error=ErrorCode.group_max_size_reached))
    elif new_member:
        _join_new_member(ctx, group, request, now, result)
    else:
        _join_known_member(ctx, group, request, now, result)

    if created and not result.records:
        result.records.append(records.empty_group(group))
    return result


def _precheck(ctx, request: JoinRequest) -> ErrorCode | None:
    if not request.group_id:
        return ErrorCode.invalid_group_id
    config = ctx.config
    if not config.min_session_timeout_ms <= request.session_timeout_ms <= \
            config.max_session_timeout_ms:
        return ErrorCode.invalid_session_timeout
    return None


def _accepts_joining_member(ctx, group: Group, member_id: str) -> bool:
    """group.max.size (KIP-389), counted the way Kafka counts it in each state."""
    limit = ctx.config.max_size
    member = group.members.get(member_id)
    if group.state in (S.EMPTY, S.DEAD):
        return True
    if group.state is S.PREPARING_REBALANCE:
        return (member is not None and group.is_joining(member)) or \
            group.awaiting_join_count() < limit
    return member is not None or len(group.members) < limit


# -- new members (member id "") -----------------------------------------------------------

def _join_new_member(ctx, group: Group, request: JoinRequest, now: int, result: Result) -> None:
    answer = JOIN_GROUP_NEW_MEMBER[group.state]
    if type(answer) is Refuse:
        result.reply(request.token, JoinReply(error=answer.error))
        return
    if not group.supports(request.protocol_type, request.protocols):
        result.reply(request.token, JoinReply(error=ErrorCode.inconsistent_group_protocol))
        return
    if isinstance(answer, ErrorCode):
        result.reply(request.token, JoinReply(error=answer))
        return
    prefix = request.group_instance_id or request.client_id
    new_id = ctx.new_member_id(prefix)
    if request.group_instance_id is not None:
        existing = group.static_member_id(request.group_instance_id)
        if existing is not None:
            log.info("static member %s rejoins group %s with a new id %s (was %s)",
                     request.group_instance_id, group.group_id, new_id, existing)
            _replace_static_member(ctx, group, request, existing, new_id, answer, now, result)
        else:
            _add_member(ctx, group, request, new_id, now, result)
        return
    if request.api_version >= KNOWN_MEMBER_ID_REQUIRED_FROM:
        # KIP-394: hand out an id and expect the member to come back with it
        add_pending(result, group, new_id, now + request.session_timeout_ms)
        result.reply(request.token, JoinReply(error=ErrorCode.member_id_required, member_id=new_id))
        return
    _add_member(ctx, group, request, new_id, now, result)


def _add_member(ctx, group: Group, request: JoinRequest, member_id: str, now: int,
                result: Result) -> None:
    member = Member(
        member_id=member_id, group_instance_id=request.group_instance_id,
        client_id=shared_str(request.client_id), client_host=shared_str(request.client_host),
        rebalance_timeout_ms=shared_int(request.rebalance_timeout_ms),
        session_timeout_ms=shared_int(request.session_timeout_ms),
        protocols=request.protocols)
    if group.state is S.PREPARING_REBALANCE and group.previous_state is S.EMPTY:
        group.new_member_added = True  # extends the initial rebalance delay
    group.pending_members.pop(member_id, None)
    group.add(member, shared_str(request.protocol_type))
    group.new_members[member_id] = None
    group.park_join(member, Parked(request.token, request.api_version))
    # A new member cannot heartbeat while its JoinGroup is parked, so it gets the (long)
    # new-member join timeout instead of its session timeout.
    reschedule_heartbeat(result, group, member, now, ctx.config.new_member_join_timeout_ms)
    maybe_prepare_rebalance_or_complete_join(
        ctx, group, now, result, _with_client_reason(request, f"adding new member {member_id}"
        + (f" with group instance id {member.group_instance_id}" if member.is_static else "")),
        tr.Trigger(tr.STATIC_MEMBER_JOINED if member.is_static else tr.MEMBER_JOINED,
                   member_id, member.group_instance_id, request.reason))


def _with_client_reason(request: JoinRequest, reason: str) -> str:
    """Ours, and the client's own when it gave one (JoinGroup v8+, KIP-800), as Kafka logs
    both: why the client rejoined is often the real cause of the rebalance."""
    return f"{reason} (client reason: {request.reason})" if request.reason else reason


# -- known members ------------------------------------------------------------------------

def _join_known_member(ctx, group: Group, request: JoinRequest, now: int,
                       result: Result) -> None:
    member_id = request.member_id
    answer = JOIN_GROUP_KNOWN_MEMBER[group.state]
    if type(answer) is Refuse:
        result.reply(request.token, JoinReply(error=answer.error, member_id=member_id))
        return
    if not group.supports(request.protocol_type, request.protocols):
        result.reply(request.token, JoinReply(error=ErrorCode.inconsistent_group_protocol,
                                              member_id=member_id))
        return
    if member_id in group.pending_members:
        if request.group_instance_id is not None:
            # Kafka throws here; no real client can get a pending id and also be static
            result.reply(request.token, JoinReply(error=ErrorCode.unknown_member_id,
                                                  member_id=member_id))
            return
        _add_member(ctx, group, request, member_id, now, result)
        return
    error = member_error(group, member_id, request.group_instance_id)
    if error is not None:
        result.reply(request.token, JoinReply(error=error, member_id=member_id))
        return

    member = group.members[member_id]
    unchanged = member.protocols == request.protocols
    match answer:
        case ErrorCode():   # Empty: a member id the group no longer knows
            result.reply(request.token, JoinReply(error=answer, member_id=member_id))
        case Action.UPDATE_AND_WAIT:
            _update_member(ctx, group, member, request, now, result,
                           "member {} joins during PreparingRebalance", tr.MEMBER_JOINED)
        case Action.ANSWER_OR_REBALANCE_IF_CHANGED:
            if unchanged:  # most likely it missed our JoinGroup answer: send it again
                members = member_list(group) if group.is_leader(member_id) else ()
                result.reply(request.token, current_generation_reply(group, member_id, members))
            else:
                _update_member(ctx, group, member, request, now, result,
                               "member {} changed its metadata during CompletingRebalance",
                               tr.SUBSCRIPTION_CHANGED)
        case Action.REBALANCE_FOR_LEADER_OR_CHANGE:
            if group.is_leader(member_id):
                # lets the leader force a rebalance, e.g. when topic metadata changed
                _update_member(ctx, group, member, request, now, result,
                               "leader {} rejoins a Stable group", tr.LEADER_REJOIN)
            elif not unchanged:
                _update_member(ctx, group, member, request, now, result,
                               "member {} changed its metadata", tr.SUBSCRIPTION_CHANGED)
            else:
                result.reply(request.token, current_generation_reply(group, member_id))
        case _:
            raise ValueError(f"JoinGroup has no answer {answer!r}")


def _update_member(ctx, group: Group, member: Member, request: JoinRequest, now: int,
                   result: Result, reason: str, kind: str = tr.OTHER) -> None:
    """`reason`: why this join would start a rebalance, "{}" standing for the member id."""
    _update_metadata(group, member, request)
    group.park_join(member, Parked(request.token, request.api_version))
    if group.state not in CAN_REBALANCE:
        # Already rebalancing (in an eager rebalance, every join but the first): the reason and
        # trigger would not be read, so neither is built.
        maybe_prepare_rebalance_or_complete_join(ctx, group, now, result, "")
        return
    maybe_prepare_rebalance_or_complete_join(
        ctx, group, now, result, _with_client_reason(request, reason.format(member.member_id)),
        tr.Trigger(kind, member.member_id, member.group_instance_id, request.reason))


def _update_metadata(group: Group, member: Member, request: JoinRequest) -> None:
    group.set_protocols(member, request.protocols)
    member.rebalance_timeout_ms = shared_int(request.rebalance_timeout_ms)
    member.session_timeout_ms = shared_int(request.session_timeout_ms)


# -- static member replacement (KIP-345) --------------------------------------------------

def _replace_static_member(ctx, group: Group, request: JoinRequest, old_id: str, new_id: str,
                           answer: Action, now: int, result: Result) -> None:
    if answer is Action.ADD_FIRST_MEMBER:
        # An Empty group has no members, so one that still maps this instance id is corrupt.
        # Kafka throws IllegalStateException here; refuse before changing anything, rather than
        # park a JoinGroup that no join phase would ever answer.
        raise IllegalTransition(f"group {group.group_id} is Empty but still maps static member "
                                f"{request.group_instance_id} to {old_id}")
    old_member = group.members[old_id]
    # Whoever still waits under the old id is a duplicate of this instance: fence it.
    answer_join(result, group, old_member, JoinReply(error=ErrorCode.fenced_instance_id,
                                              member_id=old_id))
    answer_sync(result, group, old_member, SyncReply(error=ErrorCode.fenced_instance_id))
    leader_before = group.leader_id
    previous = (old_member.protocols, old_member.rebalance_timeout_ms,
                old_member.session_timeout_ms)
    member = group.replace_static(old_id, new_id)
    reschedule_heartbeat(result, group, member, now)  # the old id's timer will find nobody
    _update_metadata(group, member, request)
    group.park_join(member, Parked(request.token, request.api_version))
    replaced = tr.Trigger(tr.STATIC_MEMBER_REPLACED, new_id, request.group_instance_id,
                          request.reason, old_id)

    match answer:
        case Action.ADD_OR_REPLACE_KEEPING_GENERATION:
            if group.select_protocol() == group.protocol_name:
                # Same assignor: no rebalance. Persist the new id, answer once it is written.
                result.records.append(records.group_metadata(group))
                result.changes.append(StaticIdReplaced(group, old_id, new_id, previous))
                result.after_write.append(StaticMemberReplaced(
                    group.group_id, old_id, new_id, leader_before, request.api_version))
                result.facts.append(facts.StaticMemberSaved(
                    group.group_id, group.generation, facts.classic_members(group),
                    request.group_instance_id, new_id, old_id, request.reason, now))
            else:
                prepare_rebalance(ctx, group, now, result,
                                  f"static member {request.group_instance_id} changed protocols",
                                  replaced)
        case Action.ADD_OR_REPLACE_AND_REBALANCE:
            prepare_rebalance(ctx, group, now, result,
                              f"static member {request.group_instance_id} rejoined during sync",
                              replaced)
        case Action.ADD_OR_REPLACE_AND_WAIT:
            maybe_complete_join(ctx, group, now, result)
        case _:
            raise ValueError(f"JoinGroup has no answer {answer!r}")


def static_replacement_written(ctx, group: Group, step: StaticMemberReplaced,
                               error: ErrorCode | None, now: int, result: Result) -> None:
    if error is not None:
        # The shard put the old id back (changes.StaticIdReplaced): the joiner, parked under
        # it now, must try again.
        restored = group.members.get(step.old_id)
        if restored is None:
            return   # the member left meanwhile
        parked = group.take_join(restored)
        reschedule_heartbeat(result, group, restored, now)
        if parked is not None:
            result.reply(parked.token, JoinReply(
                error=error, generation=group.generation, protocol_type=group.protocol_type,
                protocol_name=group.protocol_name, leader=step.leader_before or ""))
        return
    new_id = step.new_id
    member = group.members.get(new_id)
    if member is None:
        return
    if step.api_version >= SKIP_ASSIGNMENT_FROM:
        leader = group.is_leader(new_id)
        answer_join(result, group, member, current_generation_reply(
            group, new_id, member_list(group) if leader else (), skip_assignment=leader))
    else:
        # Older clients would run a throw-away assignment if told they lead: name the old
        # leader id so this member acts as a follower and just fetches its assignment.
        answer_join(result, group, member, current_generation_reply(
            group, new_id, leader=step.leader_before))
