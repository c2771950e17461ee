"""Members speaking the classic protocol inside a consumer group: JoinGroup, SyncGroup, Heartbeat
and LeaveGroup from a consumer that has not restarted with group.protocol=consumer yet, while its
group is being upgraded (migration.py). As Kafka's GroupMetadataManager
classicGroup{Join,Sync,Heartbeat,Leave}ToConsumerGroup.

Such a member is an ordinary member of the consumer group (same target assignment, same
reconciliation), with its ClassicMetadata (session timeout, protocols) set:
- JoinGroup updates it from its ConsumerProtocolSubscription (topics, rack, owned partitions),
  moves the group on like a heartbeat would, and answers at once: generation = its member epoch,
  the protocol name it listed first, no leader and no member list (it is a follower);
- SyncGroup answers its current assignment (ConsumerProtocolAssignment, in the version of its
  subscription), unless the group moved on: REBALANCE_IN_PROGRESS, rejoin;
- Heartbeat says REBALANCE_IN_PROGRESS when it must rejoin to reconcile: its epoch is behind the
  group's, it has partitions to give up, or the partitions it waits for are free;
- its timers are Kafka's for classic members: the session (its own session timeout), a sync
  deadline after JoinGroup and a join deadline after being told to rejoin (its rebalance timeout);
  no consumer rebalance timeout.
"""
from __future__ import annotations

import logging

from roster.coordinator import facts
from roster.coordinator import triggers as tr
from roster.coordinator.consumer import migration
from roster.coordinator.consumer import records as rec
from roster.coordinator.consumer.model import (
    ClassicMetadata,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    TopicImage,
    topic_names,
)
from roster.coordinator.messages import (
    JoinReply,
    JoinRequest,
    LeaveMemberResult,
    LeaveReply,
    LeaveRequest,
    SyncReply,
    SyncRequest,
)
from roster.coordinator.results import Result
from roster.frozen import frozen
from roster.protocol import consumer_protocol as cp
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinator")

CONSUMER_PROTOCOL_TYPE = migration.CONSUMER_PROTOCOL_TYPE
MEMBER_ID_REQUIRED_FROM = 4   # JoinGroup v4+: a dynamic member first gets its id


@frozen
class ClassicJoinDeadline:
    """A classic member told to rejoin did not within its rebalance timeout: fenced."""

    group_id: str
    member_id: str


@frozen
class ClassicSyncDeadline:
    """A classic member that joined did not send SyncGroup within its rebalance timeout."""

    group_id: str
    member_id: str


def join_key(group_id: str, member_id: str) -> str:
    return f"consumer-classic-join:{group_id}:{member_id}"


def sync_key(group_id: str, member_id: str) -> str:
    return f"consumer-classic-sync:{group_id}:{member_id}"


class _Refused(Exception):
    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error


def session_ms(member: ConsumerMember) -> int | None:
    """A classic member's own session timeout; None: the group's (a consumer member)."""
    return None if member.classic is None else member.classic.session_timeout_ms


def replace_static_member(group: ConsumerGroup, existing: ConsumerMember, member_id: str,
                          records: list) -> ConsumerMember:
    """A static member returning under a new member id takes over its predecessor: same
    subscription, same target, same partitions, epoch 0; nothing else in the group changes
    (Kafka's replaceMember). Whichever protocol either speaks."""
    gid = group.group_id
    new = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
    records += [rec.current_tombstone(gid, existing.member_id),
                rec.target_tombstone(gid, existing.member_id),
                rec.member_tombstone(gid, existing.member_id),
                rec.member_record(gid, new),
                rec.target_record(gid, member_id, group.target.get(existing.member_id, {})),
                rec.current_record(gid, new)]
    return new


def failed_reply(reply, error: ErrorCode):
    """The answer to a classic member's request whose records could not be written; None
    when `reply` is not one."""
    if isinstance(reply, JoinReply):
        return JoinReply(error=error, member_id=reply.member_id)
    if isinstance(reply, LeaveReply):
        return LeaveReply(error=error)
    return None


def answer_parked(group, error: ErrorCode, result: Result) -> None:
    """A classic group dropped by a failed write (a downgrade that was never written): the
    JoinGroup and SyncGroup requests parked in it since were decided on a state that is gone,
    and are answered `error`, as the operations queued behind the failed write are."""
    for member_id, parked in group.joining.items():
        result.reply(parked.token, JoinReply(error=error, member_id=member_id))
    for parked in group.syncing.values():
        result.reply(parked.token, SyncReply(error=error))
    group.joining.clear()
    group.syncing.clear()


# -- JoinGroup ---------------------------------------------------------------------------------

def join(ctx, q: JoinRequest, image: TopicImage, now: int) -> Result:
    result = Result()
    op = ctx.begin(now)
    try:
        reply = _join(ctx, op, q, image, result)
    except _Refused as refused:
        ctx.abandon(op, result)
        result.reply(q.token, JoinReply(error=refused.error, member_id=q.member_id))
        return result
    ctx.release_after_write(op, q.group_id, q.token, reply, result)
    return result


def _join(ctx, op, q: JoinRequest, image: TopicImage, result: Result) -> JoinReply:
    now = op.now
    group = ctx.groups.get(q.group_id)
    if group is None or not group.members:
        raise _Refused(ErrorCode.unknown_member_id)
    limits = None if ctx.classic is None else ctx.classic.config   # checked before anything
    if limits is not None and not (limits.min_session_timeout_ms <= q.session_timeout_ms
                                   <= limits.max_session_timeout_ms):
        raise _Refused(ErrorCode.invalid_session_timeout)
    member_id = q.member_id or ctx.new_member_id()
    if len(group.members) >= ctx.config.max_size and member_id not in group.members:
        raise _Refused(ErrorCode.group_max_size_reached)
    if not _supported(group, q.protocol_type, q.protocols):
        raise _Refused(ErrorCode.inconsistent_group_protocol)
    if not q.member_id and q.group_instance_id is None \
            and q.api_version >= MEMBER_ID_REQUIRED_FROM:
        return JoinReply(error=ErrorCode.member_id_required, member_id=member_id)
    try:
        subscription = cp.decode_subscription(q.protocols[0][1])
    except cp.ConsumerProtocolError:
        raise _Refused(ErrorCode.inconsistent_group_protocol) from None
    records: list = []
    member, replaced = _joining_member(group, q, member_id, records)
    # the last consumer-protocol member replaced by this classic one: back to a classic group
    downgrade = replaced is not None and migration.downgrades(ctx, group, replaced,
                                                              replaced=True)
    is_new = member.member_id not in group.members
    changes = {"rebalance_timeout_ms": q.rebalance_timeout_ms,
               "subscribed_topic_names": topic_names(subscription.topics),
               "client_id": q.client_id, "client_host": q.client_host,
               "classic": ClassicMetadata(q.session_timeout_ms, tuple(q.protocols))}
    if q.group_instance_id is not None:
        changes["instance_id"] = q.group_instance_id
    if subscription.rack_id is not None:
        changes["rack_id"] = subscription.rack_id
    updated = member.replace(**changes)
    subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names
    if updated != member or is_new:
        records.append(rec.member_record(q.group_id, updated))
    owned = tuple((found[0], tuple(ps)) for name, ps in subscription.owned_partitions
                  if (found := image.lookup(name)) is not None)
    member = ctx.converge(op, q.group_id, updated, records, subscription_changed, is_new,
                          q.group_instance_id, owned, image, result)
    group = ctx.groups[q.group_id]
    _cancel_deadline(group, result, join_key(q.group_id, member.member_id))
    if downgrade:   # the classic coordinator takes the member's session from here
        migration.downgrade(ctx, op, group, None, result)
    else:
        ctx.heard_from(group, member.member_id, now, result, q.session_timeout_ms)
        key = sync_key(q.group_id, member.member_id)
        group.classic_timers.add(key)
        result.schedule(key, now + q.rebalance_timeout_ms,
                        ClassicSyncDeadline(q.group_id, member.member_id))
    return JoinReply(generation=member.member_epoch, protocol_type=CONSUMER_PROTOCOL_TYPE,
                     protocol_name=member.classic.protocol_name, leader="",
                     member_id=member.member_id, members=())


def _supported(group: ConsumerGroup, protocol_type: str, protocols) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: a "consumer" protocol name that every
    classic member of the group supports."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not protocols:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    return any(all(any(n == name for n, _ in c.protocols) for c in classic)
               for name, _ in protocols)


def _joining_member(group: ConsumerGroup, q: JoinRequest, member_id: str,
                    records: list) -> tuple[ConsumerMember, ConsumerMember | None]:
    """The member joining, and the static member it replaces (if it does)."""
    if q.group_instance_id is None:
        return group.members.get(member_id) or ConsumerMember(member_id), None
    existing = group.static_member(q.group_instance_id)
    if not q.member_id:   # a (re)starting static member: it takes over its instance id
        if existing is None:
            return ConsumerMember(member_id, instance_id=q.group_instance_id), None
        return replace_static_member(group, existing, member_id, records), existing
    if existing is None:
        raise _Refused(ErrorCode.unknown_member_id)
    if existing.member_id != member_id:
        raise _Refused(ErrorCode.fenced_instance_id)
    return existing, None


# -- SyncGroup and Heartbeat ---------------------------------------------------------------------

def sync(ctx, q: SyncRequest, now: int) -> Result:
    result = Result()
    try:
        member = _classic_member(ctx, q.group_id, q.member_id, q.group_instance_id, q.generation)
        protocol = member.classic.protocol_name
        if (q.protocol_type is not None and q.protocol_type != CONSUMER_PROTOCOL_TYPE) or \
                (q.protocol_name is not None and q.protocol_name != protocol):
            raise _Refused(ErrorCode.inconsistent_group_protocol)
        group = ctx.groups[q.group_id]
        if group.group_epoch > member.member_epoch \
                and member.state is not MemberState.UNREVOKED_PARTITIONS:
            _arm_join_deadline(result, group, member, now)
            raise _Refused(ErrorCode.rebalance_in_progress)
    except _Refused as refused:
        result.reply(q.token, SyncReply(error=refused.error))
        return result
    _cancel_deadline(group, result, sync_key(q.group_id, member.member_id))
    ctx.heard_from(group, member.member_id, now, result, member.classic.session_timeout_ms)
    result.reply(q.token, SyncReply(protocol_type=q.protocol_type, protocol_name=q.protocol_name,
                                    assignment=_assignment_bytes(group, member)))
    return result


def heartbeat(ctx, group_id: str, generation: int, member_id: str, instance_id: str | None,
              now: int, result: Result) -> ErrorCode:
    try:
        member = _classic_member(ctx, group_id, member_id, instance_id, generation)
    except _Refused as refused:
        return refused.error
    group = ctx.groups[group_id]
    ctx.heard_from(group, member.member_id, now, result, member.classic.session_timeout_ms)
    if member.member_epoch < group.group_epoch \
            or member.state is MemberState.UNREVOKED_PARTITIONS \
            or (member.state is MemberState.UNRELEASED_PARTITIONS
                and not _waiting_on_unreleased(group, member)):
        _arm_join_deadline(result, group, member, now)
        return ErrorCode.rebalance_in_progress
    return ErrorCode.none


def _classic_member(ctx, group_id: str, member_id: str, instance_id: str | None,
                    generation: int) -> ConsumerMember:
    group = ctx.groups.get(group_id)
    if group is None or not group.members:
        raise _Refused(ErrorCode.unknown_member_id)
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise _Refused(ErrorCode.unknown_member_id)
    else:
        member = group.static_member(instance_id)
        if member is None:
            raise _Refused(ErrorCode.unknown_member_id)
        if member.member_id != member_id:
            raise _Refused(ErrorCode.fenced_instance_id)
    if member.classic is None:
        raise _Refused(ErrorCode.unknown_member_id)   # it speaks the consumer protocol
    if generation != member.member_epoch:
        raise _Refused(ErrorCode.illegal_generation)
    return member


def _waiting_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Whether a partition of its target is still held by another member."""
    for topic_id, partitions in group.target.get(member.member_id, {}).items():
        mine = member.assigned.get(topic_id, frozenset())
        for p in partitions:
            if p not in mine and group.partition_epoch(topic_id, p) != -1:
                return True
    return False


def _assignment_bytes(group: ConsumerGroup, member: ConsumerMember) -> bytes:
    return migration.encode_assignment(group, member.assigned, member.classic.protocols[0][1])


def _arm_join_deadline(result: Result, group: ConsumerGroup, member: ConsumerMember,
                       now: int) -> None:
    """Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent: the first REBALANCE_IN_PROGRESS starts
    the member's rebalance timeout; telling it again does not move the deadline."""
    key = join_key(group.group_id, member.member_id)
    if key not in group.classic_timers:
        group.classic_timers.add(key)
        result.schedule(key, now + max(member.rebalance_timeout_ms, 0),
                        ClassicJoinDeadline(group.group_id, member.member_id))


def _cancel_deadline(group: ConsumerGroup, result: Result, key: str) -> None:
    if key in group.classic_timers:
        group.classic_timers.discard(key)
        result.cancel(key)


DEADLINES = (ClassicJoinDeadline, ClassicSyncDeadline)


def deadline_passed(ctx, group: ConsumerGroup, event) -> ConsumerMember | None:
    """A classic member's join or sync deadline fired: the member to fence, if it is still
    there (a timer whose member rejoined or synced in time was cancelled) and the timer is
    this group's (not one left by an earlier group of this id)."""
    if isinstance(event, ClassicJoinDeadline):
        key, what = join_key(event.group_id, event.member_id), "rejoin"
    else:
        key, what = sync_key(event.group_id, event.member_id), "send SyncGroup"
    if key not in group.classic_timers:
        return None
    group.classic_timers.discard(key)
    member = group.members.get(event.member_id)
    if member is None or member.classic is None:
        return None
    log.info("classic member %s of consumer group %s fenced: it did not %s within its "
             "rebalance timeout (%d ms)", member.member_id, group.group_id, what,
             member.rebalance_timeout_ms)
    return member


# -- LeaveGroup ----------------------------------------------------------------------------------

def leave(ctx, q: LeaveRequest, now: int) -> Result:
    result = Result()
    op = ctx.begin(now)
    answers = []
    removed = False
    for identity in q.members:
        group = ctx.groups.get(q.group_id)
        member = None
        error = ErrorCode.none
        if group is None:
            error = ErrorCode.unknown_member_id
        elif identity.group_instance_id is None:
            member = group.members.get(identity.member_id)
        else:
            member = group.static_member(identity.group_instance_id)
            if member is not None and identity.member_id \
                    and member.member_id != identity.member_id:
                error = ErrorCode.fenced_instance_id
        # any member, of either protocol: an admin's LeaveGroup by instance id
        # (Admin.removeMembersFromConsumerGroup) removes consumer-protocol members too, as
        # Kafka's classicGroupLeaveToConsumerGroup does
        if error is ErrorCode.none and member is None:
            error = ErrorCode.unknown_member_id
        if error is not ErrorCode.none:
            answers.append(LeaveMemberResult(identity.member_id, identity.group_instance_id,
                                             error))
            continue
        result.facts.append(facts.EpochCause(
            q.group_id, tr.Trigger(tr.MEMBER_LEFT, member.member_id, member.instance_id), now))
        # every member named goes in one change: one new epoch for all of them, as Kafka's
        # classicGroupLeaveToConsumerGroup writes (written after the loop)
        removed = ctx.fence(op, group, member, result, bump_epoch=False)
        _cancel_deadline(group, result, join_key(q.group_id, member.member_id))
        _cancel_deadline(group, result, sync_key(q.group_id, member.member_id))
        # the identity as asked (member id "" for one named by instance id), as Kafka answers:
        # Admin.removeMembersFromConsumerGroup matches its members to the answers by it
        answers.append(LeaveMemberResult(identity.member_id, identity.group_instance_id,
                                         ErrorCode.none))
    group = ctx.groups.get(q.group_id)
    if removed and group is not None:   # not turned into a classic group by the last removal
        ctx.bump_epoch(op, group, result)
    # should the write fail, the members stay (op.fenced: every member fence removed), and
    # their sessions run out as if they had not left (ConsumerCoordinator.write_completed)
    ctx.release_after_write(op, q.group_id, q.token, LeaveReply(members=tuple(answers)),
                            result)
    return result
