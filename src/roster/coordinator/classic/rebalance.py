"""Rebalances: starting one, completing the join phase, and the timers that drive both.

Every function here takes the coordinator context, the group, the time and the Result being
built, and records its effects in that Result (replies, timers, records).
"""
from __future__ import annotations

import logging

from roster.coordinator import facts
from roster.coordinator import triggers as tr
from roster.coordinator.classic import expectations, records, sessions
from roster.coordinator.classic.group import Group, Member
from roster.coordinator.classic.sessions import reschedule_heartbeat
from roster.coordinator.classic.states import CAN_REBALANCE, GroupState
from roster.coordinator.classic.timers import JoinDeadline, SyncDeadline, away_key, join_key, sync_key
from roster.coordinator.messages import JoinMember, JoinReply, SyncReply
from roster.coordinator.results import Result
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinator")
S = GroupState


# -- replies to parked requests -----------------------------------------------------------

def answer_join(result: Result, group: Group, member: Member, reply: JoinReply) -> None:
    parked = group.take_join(member)
    if parked is not None:
        result.reply(parked.token, reply)


def answer_sync(result: Result, group: Group, member: Member, reply: SyncReply) -> bool:
    parked = group.take_sync(member)
    if parked is None:
        return False
    result.reply(parked.token, reply)
    return True


def member_list(group: Group) -> tuple[JoinMember, ...]:
    """What the leader gets to run the assignment: every member's metadata for the protocol."""
    return tuple(JoinMember(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                 for m in group.members.values())


def current_generation_reply(group: Group, member_id: str, members=(), leader=None,
                             skip_assignment: bool = False) -> JoinReply:
    return JoinReply(generation=group.generation, protocol_type=group.protocol_type,
                     protocol_name=group.protocol_name,
                     leader=(group.leader_id if leader is None else leader) or "",
                     skip_assignment=skip_assignment, member_id=member_id, members=members)


# -- starting a rebalance -----------------------------------------------------------------

def prepare_rebalance(ctx, group: Group, now: int, result: Result, reason: str,
                      trigger: tr.Trigger | None = None) -> None:
    result.facts.append(facts.RebalanceStarted.of(group, trigger, reason, now))
    if group.state is S.COMPLETING_REBALANCE:
        reset_assignments_with_error(ctx, group, now, result, ErrorCode.rebalance_in_progress)
    cancel_pending_sync(group, result)
    initial = group.state is S.EMPTY
    group.transition_to(S.PREPARING_REBALANCE, now)
    log.info("preparing to rebalance group %s in generation %d: %s",
             group.group_id, group.generation, reason)
    forming = expectations.forming_complete(ctx, group) if initial else None
    if forming is not None:
        # pre-registered static members: wait for them, not for a delay (expectations.py)
        if forming:
            result.cancel(join_key(group.group_id))
            complete_join(ctx, group, now, result)
        else:
            result.schedule(join_key(group.group_id), now + group.rebalance_timeout_ms(),
                            JoinDeadline(group.group_id))
    elif initial:
        delay = ctx.config.initial_rebalance_delay_ms
        remaining = max(group.rebalance_timeout_ms() - delay, 0)
        group.new_member_added = False
        result.schedule(join_key(group.group_id), now + delay,
                        JoinDeadline(group.group_id, delay, remaining))
    elif group.all_joined() and not expectations.holds_back(ctx, group):
        result.cancel(join_key(group.group_id))
        complete_join(ctx, group, now, result)
    else:
        result.schedule(join_key(group.group_id), now + group.rebalance_timeout_ms(),
                        JoinDeadline(group.group_id))


def maybe_prepare_rebalance_or_complete_join(ctx, group: Group, now: int, result: Result,
                                             reason: str,
                                             trigger: tr.Trigger | None = None) -> None:
    if group.state in CAN_REBALANCE:
        prepare_rebalance(ctx, group, now, result, reason, trigger)
    else:
        result.facts.append(facts.AlsoRebalancing(group.group_id))
        maybe_complete_join(ctx, group, now, result)


# -- completing the join phase -------------------------------------------------------------

def maybe_complete_join(ctx, group: Group, now: int, result: Result) -> None:
    """Complete early once everyone has rejoined, except during an initial rebalance, which
    only its delay timer completes."""
    if group.state is not S.PREPARING_REBALANCE or not group.all_joined():
        return
    expected = expectations.forming_complete(ctx, group)
    if group.previous_state is not S.EMPTY if expected is None else expected:
        result.cancel(join_key(group.group_id))
        complete_join(ctx, group, now, result)


def complete_join(ctx, group: Group, now: int, result: Result) -> None:
    if group.state is not S.PREPARING_REBALANCE:
        return
    away = group.away   # None unless the metadata watch started this rebalance (away.py)
    for member in [m for m in group.members.values() if not group.is_joining(m)]:
        # static members keep their place while they are away, and so does any member a
        # watch-started rebalance counts as away
        if not member.is_static and (away is None or member.member_id not in away):
            log.info("removing member %s of group %s: it did not rejoin in time",
                     member.member_id, group.group_id)
            group.remove(member.member_id)  # and with it, its session deadline

    if not _elect_joined_leader(group) and group.members:
        # Nobody has rejoined: wait another rebalance timeout; session expiry clears the rest.
        result.schedule(join_key(group.group_id), now + group.rebalance_timeout_ms(),
                        JoinDeadline(group.group_id))
        return

    # A rebalance the metadata watch started: the members that did not rejoin (away, or
    # static) are reserved their place (away.py), neither expected to sync nor given a new
    # session.
    reserved = () if away is None else \
        {m for m, member in group.members.items() if not group.is_joining(member)}
    if away is not None:
        group.away = None
        result.cancel(away_key(group.group_id))
    group.generation += 1
    if not group.members:
        group.protocol_name = None
        group.transition_to(S.EMPTY, now)
        result.records.append(records.group_metadata(group))
        result.facts.append(facts.GenerationFormed.of(group, now))
        log.info("group %s is empty in generation %d", group.group_id, group.generation)
        return

    group.protocol_name = group.select_protocol()
    group.transition_to(S.COMPLETING_REBALANCE, now)
    result.facts.append(facts.GenerationFormed.of(group, now))
    log.info("group %s enters generation %d with %d members (protocol %s)", group.group_id,
             group.generation, len(group.members), group.protocol_name)
    everyone = member_list(group)
    for member in group.members.values():
        answer_join(result, group, member, current_generation_reply(
            group, member.member_id, everyone if group.is_leader(member.member_id) else ()))
        if member.member_id in reserved:
            continue
        reschedule_heartbeat(result, group, member, now)
        group.pending_sync[member.member_id] = None
    group.new_members.clear()  # through the join phase: nobody is new any more
    result.schedule(sync_key(group.group_id), now + group.rebalance_timeout_ms(),
                    SyncDeadline(group.group_id, group.generation))


def _elect_joined_leader(group: Group) -> bool:
    """Keep a leader that rejoined, else promote any member that did; False if nobody did."""
    if group.leader_id is None:
        return False
    if group.leader_id in group.joining:
        return True
    for member_id in group.members:
        if member_id in group.joining:
            group.leader_id = member_id
            return True
    return False


# -- sync phase ----------------------------------------------------------------------------

def cancel_pending_sync(group: Group, result: Result) -> None:
    group.pending_sync.clear()
    result.cancel(sync_key(group.group_id))


def reset_assignments_with_error(ctx, group: Group, now: int, result: Result,
                                 error: ErrorCode) -> None:
    for member in group.members.values():
        member.assignment = b""
    propagate_assignment(group, now, result, error)


def propagate_assignment(group: Group, now: int, result: Result, error: ErrorCode) -> None:
    # An error answer carries no protocol type or name (Kafka's propagateAssignment).
    ok = error is ErrorCode.none
    for member in group.members.values():
        reply = SyncReply(error=error, protocol_type=group.protocol_type if ok else None,
                          protocol_name=group.protocol_name if ok else None,
                          assignment=member.assignment)
        if answer_sync(result, group, member, reply):
            # A session that lapsed while the member waited was ignored; expect heartbeats again.
            reschedule_heartbeat(result, group, member, now)


# -- removing members ----------------------------------------------------------------------

def remove_member_and_update_group(ctx, group: Group, member: Member, now: int, result: Result,
                                   reason: str, trigger: tr.Trigger | None = None) -> None:
    # A member removed while parked in JoinGroup is told to rejoin from scratch.
    answer_join(result, group, member, JoinReply(error=ErrorCode.unknown_member_id))
    group.remove(member.member_id)
    log.info("removed member %s from group %s: %s", member.member_id, group.group_id, reason)
    if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
        prepare_rebalance(ctx, group, now, result, reason, trigger)
    elif (group.state is S.PREPARING_REBALANCE and group.all_joined()
          and not expectations.holds_back(ctx, group)):
        result.cancel(join_key(group.group_id))
        complete_join(ctx, group, now, result)


# -- timer expiries ------------------------------------------------------------------------

def sessions_lapsed(ctx, group: Group, now: int, result: Result) -> None:
    """The group's session timer fired: expire, earliest first, every member and pending id
    whose session has ended, then watch the next earliest deadline."""
    for _, member_id, pending in sessions.lapsed(group, now):
        if group.state is S.DEAD:
            continue  # the deadline is cleared; nothing else changes (Kafka ignores it too)
        if pending:
            # still pending, and not given a new deadline by an earlier expiry
            if member_id in group.pending_members and group.pending_members[member_id] is None:
                _pending_member_expired(ctx, group, member_id, now, result)
            continue
        member = group.members.get(member_id)
        # gone already, or heard from since (an earlier expiry's rebalance answered it)
        if member is not None and member.session_deadline_ms is None:
            _member_expired(ctx, group, member, now, result)
    sessions.rearm(result, group)


def _pending_member_expired(ctx, group: Group, member_id: str, now: int, result: Result) -> None:
    del group.pending_members[member_id]
    log.info("pending member %s of group %s did not rejoin in time", member_id, group.group_id)
    # Like a member's expiry below (Kafka's removePendingMemberAndUpdateClassicGroup), this
    # completes the join phase once everyone left has joined, even during an initial
    # rebalance's delay: only JoinGroup and LeaveGroup wait for the delay timer.
    if (group.state is S.PREPARING_REBALANCE and group.all_joined()
            and not expectations.holds_back(ctx, group)):
        result.cancel(join_key(group.group_id))
        complete_join(ctx, group, now, result)


def _member_expired(ctx, group: Group, member: Member, now: int, result: Result) -> None:
    alive = not group.is_new(member) and (group.is_joining(member) or group.is_syncing(member))
    if not alive:
        remove_member_and_update_group(ctx, group, member, now, result,
                                       "its session timed out",
                                       tr.Trigger(tr.SESSION_EXPIRED, member.member_id,
                                                  member.group_instance_id))


def join_deadline(ctx, group: Group, event: JoinDeadline, now: int, result: Result) -> None:
    if group.state is not S.PREPARING_REBALANCE:
        return
    if event.delay_ms is not None and group.new_member_added and event.remaining_ms:
        # Members are still arriving: wait one more delay, within the rebalance timeout.
        group.new_member_added = False
        delay = min(event.delay_ms, event.remaining_ms)
        remaining = max(event.remaining_ms - event.delay_ms, 0)
        result.schedule(join_key(group.group_id), now + delay,
                        JoinDeadline(group.group_id, delay, remaining))
        return
    expectations.log_missing(ctx, group)
    complete_join(ctx, group, now, result)


def sync_deadline(ctx, group: Group, event: SyncDeadline, now: int, result: Result) -> None:
    if event.generation != group.generation:
        return
    if group.state not in (S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync:
        return
    laggards = sorted(group.pending_sync)
    for member_id in laggards:
        group.remove(member_id)
    prepare_rebalance(ctx, group, now, result,
                      f"removing {', '.join(laggards)}: no SyncGroup within the rebalance timeout",
                      tr.Trigger(tr.REBALANCE_TIMEOUT, laggards[0] if len(laggards) == 1 else None))


def on_loaded(ctx, group: Group, now: int, result: Result) -> None:
    for member in group.members.values():
        reschedule_heartbeat(result, group, member, now)
    if len(group.members) > ctx.config.max_size:
        prepare_rebalance(ctx, group, now, result,
                          f"{len(group.members)} members exceed group.max.size after loading")
