"""The consumer group coordinator (KIP-848): ConsumerGroupHeartbeat, ConsumerGroupDescribe,
session and rebalance timeouts, and loading from records.

Each operation takes `now` (and the topic catalog it needs) and returns a Result, like the
classic coordinator. An operation decides, builds the records of its change, and applies them
through replay() (the function a restart uses); its reply waits for the records to be written
(a continuation releases it), and if they cannot be, the group goes back to what it was (the
shard reverts the operation's changes; coordinator/changes.py).

What a heartbeat does (Kafka's GroupMetadataManager.consumerGroupHeartbeat):
1. validate the request; find or create the group, find or create the member (static rules);
2. update the member; a changed subscription, or a change in the subscribed topics' metadata,
   bumps the group epoch;
3. group epoch > target assignment epoch: compute a new target assignment (sticky assignor);
4. move the member's current assignment towards its target (reconcile.py);
5. move its session deadline; answer with its epoch and, when it changed or the request was a
   full one, its assignment.

Its parts: config.py (settings), timers.py (timer events, keys, the continuation),
operation.py (the Operation passed explicitly: records applied, each noted as the change that
puts it back, consumer/changes.py), validation.py (the request's
checks), subscriptions.py (regexes, topic metadata, the target assignment), member_sessions.py
(sessions, kept as the classic groups keep theirs: a deadline per member, one timer per group),
offset_rules.py (what the shard asks about offsets); classic_members.py and migration.py use the
interface marked below. A steady heartbeat (a member at its epoch with nothing to change,
nothing to reconcile, no new target) is answered by steady_heartbeat() without building an
operation at all: the edge tries it first, as it does the classic heartbeat.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from roster.coordinator import facts
from roster.coordinator import triggers as tr
from roster.coordinator.consumer import (
    classic_members,
    describing,
    member_sessions,
    migration,
    offset_rules,
    static_members,
    subscriptions,
)
from roster.coordinator.consumer import records as rec
from roster.coordinator.consumer.config import ConsumerConfig
from roster.coordinator.consumer.messages import DescribedGroup, HeartbeatReply, HeartbeatRequest
from roster.coordinator.consumer.model import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    DescribableTopics,
    DictTopicImage,
    MemberState,
    TopicImage,
    topic_names,
)
from roster.coordinator.consumer.operation import Operation
from roster.coordinator.consumer.reconcile import reconcile, reports_exactly
from roster.coordinator.consumer.replay import replay
from roster.coordinator.consumer.timers import (
    TIMER_RETRY_MS,
    ConsumerRebalanceDeadline,
    ConsumerSessionDeadline,
    ConsumerWritten,
    rebalance_key,
    session_key,
)
from roster.coordinator.consumer.validation import RequestError, check_epoch, fail, validate
from roster.coordinator.continuations import JoinAfterDeletion
from roster.coordinator.group_type import GroupsById
from roster.coordinator.messages import GroupDescription, GroupOverview
from roster.coordinator.results import Result
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinator")

# re-exported: their homes are config.py and timers.py
__all__ = ["ConsumerConfig", "ConsumerCoordinator", "ConsumerRebalanceDeadline",
           "ConsumerSessionDeadline", "ConsumerWritten", "rebalance_key", "session_key"]


class ConsumerCoordinator(GroupsById):
    name = "consumer"
    # classic requests on its ids are its classic-protocol members' (classic_members.py)
    accepts = frozenset({"consumer", "classic"})
    # ConsumerGroupHeartbeat (its new groups are its own), and classic requests on its ids
    serves = frozenset({"consumer", "classic"})
    # the timer events and continuations it schedules (the shard hands them back here)
    steps = (ConsumerSessionDeadline, ConsumerRebalanceDeadline, ConsumerWritten,
             *classic_members.DEADLINES)

    def __init__(self, config: ConsumerConfig | None = None,
                 new_member_id: Callable[[], str] | None = None,
                 classic=None) -> None:
        self.config = config or ConsumerConfig()
        self.groups: dict[str, ConsumerGroup] = {}
        self._new_member_id = new_member_id
        # the classic coordinator beside it (coordinator/classic/coordinator.py): a classic group with
        # members keeps its id from consumer members unless an online upgrade takes it over
        # (migration.py), and a memberless one gives way; None: no classic groups
        self.classic = classic

    # -- records ------------------------------------------------------------------------------

    def replay(self, record: rec.ConsumerRecord, now: int = -1) -> None:
        replay(self.groups, record, now)

    # -- the interface classic_members.py and migration.py use ----------------------------------
    # An operation begins (begin), changes groups through its Operation (operation.py), and is
    # either released (release_after_write) or abandoned; in between: converge, fence,
    # bump_epoch, heard_from and new_member_id (and `groups`, `config`; a downgrade also
    # uses `classic`, the classic coordinator beside it).

    def begin(self, now: int) -> Operation:
        return Operation(self.groups, None if self.classic is None else self.classic.groups, now)

    def release_after_write(self, op: Operation, group_id: str, token, reply,
                            result: Result) -> None:
        """Answer `reply` to `token` at once when nothing was written, else once the records
        are (and undo them if they cannot be)."""
        if result.records:
            result.facts.append(facts.ConsumerObserved.of(group_id, self.groups.get(group_id),
                                                          op.now))
            op.finish(result, group_id, token, reply)
        else:
            result.reply(token, reply)

    def abandon(self, op: Operation, result: Result) -> None:
        """The operation is refused: the group as it was before it, nothing to write."""
        op.revert()
        result.facts.append(facts.OperationUndone())
        result.records.clear()

    def new_member_id(self) -> str:
        return self._new_member_id() if self._new_member_id else ""

    # -- ConsumerGroupHeartbeat ---------------------------------------------------------------

    def heartbeat(self, request: HeartbeatRequest, image: TopicImage, now: int) -> Result:
        result = Result()
        version = image.version()
        op = self.begin(now)
        try:
            validate(request, self.config)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                reply = self._leave(op, request, result)
            else:
                reply = self._heartbeat(op, request, image, result)
        except RequestError as exc:
            self.abandon(op, result)
            result.reply(request.token, HeartbeatReply(error=exc.error,
                                                       error_message=exc.message))
            return result
        self.release_after_write(op, request.group_id, request.token, reply, result)
        if not result.records:
            group = self.groups.get(request.group_id)
            if group is not None and request.member_epoch >= 0:
                group.steady_version = version   # nothing to change as of this catalog
        return result

    def steady_heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                         client_id: str, client_host: str, catalog_version: object,
                         now: int, instance_id: str | None = None) -> int | None:
        """A heartbeat with every optional field null but the instance id (what members send
        between changes), answered only if heartbeat() would change nothing but the member's
        session: the member, at `member_epoch`, reconciled to a target that is current, its
        client id, host and instance id (if sent) as recorded, and the group found unchanged by
        a heartbeat at this catalog version. Returns the heartbeat interval to answer with (its
        session moved: the answer is its member id and epoch, no assignment), or None: then
        heartbeat() decides, as for any other request."""
        group = self.groups.get(group_id)
        if group is None or catalog_version is None or group.steady_version != catalog_version:
            return None
        member = group.members.get(member_id)
        if (member is None or member_epoch <= 0 or member.member_epoch != member_epoch
                or member.state is not MemberState.STABLE
                or member_epoch != group.assignment_epoch
                or group.group_epoch != group.assignment_epoch
                or member.client_id != client_id or member.client_host != client_host
                or member.classic is not None      # a classic member turning consumer
                or member_id in group.unacknowledged   # its answer repeats its assignment
                or group.session_timer_ms is None):
            return None
        if instance_id is not None and (member.instance_id != instance_id or
                                        group.static_members.get(instance_id) != member_id):
            return None
        # later than the armed timer's deadline (it is the earliest): no timer work
        config = self.config
        group.session_deadlines[member_id] = now + config.session_ms(group_id)
        return config.heartbeat_ms(group_id)

    def _classic_busy(self, group_id: str) -> bool:
        """Whether a classic group of this id has members (then it is not a consumer group)."""
        classic = None if self.classic is None else self.classic.groups.get(group_id)
        return classic is not None and bool(classic.members)

    def _group(self, op: Operation, group_id: str, create: bool,
               not_found: str = "Consumer group {} not found.") -> ConsumerGroup:
        """The group, made when `create`; GROUP_ID_NOT_FOUND when it is not a consumer group,
        in Kafka's words: a heartbeat's `not_found` is "Consumer group X not found.", a leave's
        "Group X not found." (its getOrMaybeCreateConsumerGroup and consumerGroup)."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if self._classic_busy(group_id):
            fail(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")
        if not create:
            fail(ErrorCode.group_id_not_found, not_found.format(group_id))
        if self.classic is not None and group_id in self.classic.groups:
            # a memberless (simple) classic group gives way, as Kafka converts it; its
            # offsets stay (kept by group id in the shard's OffsetStore)
            op.take_classic(group_id)
        # not stored until its first record is replayed
        return ConsumerGroup(group_id, created_ms=op.now)

    def _upgrade(self, op: Operation, group_id: str, image: TopicImage, result: Result) -> None:
        """A consumer member joins a classic group with members: it becomes a consumer group
        if it may (migration.py), else GROUP_ID_NOT_FOUND as before."""
        classic = None if self.classic is None else self.classic.groups.get(group_id)
        if classic is None:
            fail(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")
        try:
            tombstone, records = migration.upgrade_records(
                classic, self.config.migration_policy, self.config.max_size, image)
        except migration.UpgradeRefused as refused:
            log.info("%s", refused)
            fail(ErrorCode.group_id_not_found, str(refused))
        log.info("classic group %s (generation %d, %d members) becomes a consumer group",
                 group_id, classic.generation, len(classic.members))
        migration.retire_classic(classic, result)
        op.take_classic(group_id)
        result.records.append(tombstone)     # the classic coordinator's record, not replayed here
        op.write(records, result)
        group = self.groups[group_id]
        for member in group.members.values():
            self.heard_from(group, member.member_id, op.now, result,
                            member.classic.session_timeout_ms)

    def _heartbeat(self, op: Operation, q: HeartbeatRequest, image: TopicImage,
                   result: Result) -> HeartbeatReply:
        now = op.now
        joining = q.member_epoch == 0
        if joining and q.group_id not in self.groups and self._classic_busy(q.group_id):
            self._upgrade(op, q.group_id, image, result)
        group = self._group(op, q.group_id, joining)
        member_id = q.member_id or self.new_member_id()
        if len(group.members) >= self.config.max_size and member_id not in group.members:
            fail(ErrorCode.group_max_size_reached, "The consumer group has reached its maximum "
                 f"capacity of {self.config.max_size} members.")
        records: list = []
        is_new = member_id not in group.members
        if q.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    fail(ErrorCode.unknown_member_id,
                         f"Member {member_id} is not a member of group {q.group_id}.")
                member = ConsumerMember(member_id)
                log.info("member %s joins consumer group %s", member_id, q.group_id)
            else:
                check_epoch(member, q)
        else:
            member = static_members.static_member(group, member_id, q, records,
                                                   result.facts)
        before_assigned = member.assigned
        # a null field means "unchanged" (a steady heartbeat changes nothing: no copy)
        changes = {}
        if q.instance_id is not None and q.instance_id != member.instance_id:
            changes["instance_id"] = q.instance_id
        if q.rack_id is not None and q.rack_id != member.rack_id:
            changes["rack_id"] = q.rack_id
        if q.rebalance_timeout_ms != -1 and q.rebalance_timeout_ms != member.rebalance_timeout_ms:
            changes["rebalance_timeout_ms"] = q.rebalance_timeout_ms
        if q.server_assignor is not None and q.server_assignor != member.server_assignor:
            changes["server_assignor"] = q.server_assignor
        if q.subscribed_topic_names is not None:
            names = topic_names(q.subscribed_topic_names)
            if names != member.subscribed_topic_names:
                changes["subscribed_topic_names"] = names
        if q.subscribed_topic_regex is not None \
                and (q.subscribed_topic_regex or None) != member.subscribed_topic_regex:
            changes["subscribed_topic_regex"] = q.subscribed_topic_regex or None
        if q.client_id != member.client_id:
            changes["client_id"] = q.client_id
        if q.client_host != member.client_host:
            changes["client_host"] = q.client_host
        if member.classic is not None:   # it restarted with the consumer protocol
            changes["classic"] = None
        updated = member.replace(**changes) if changes else member
        bump = False
        if updated != member:
            records.append(rec.member_record(q.group_id, updated))
            bump = (updated.subscribed_topic_names != member.subscribed_topic_names
                    or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        member = self.converge(op, q.group_id, updated, records, bump, is_new, q.instance_id,
                               q.owned, image, result)
        group = self.groups[q.group_id]
        self.heard_from(group, member.member_id, now, result)
        full = joining or (q.rebalance_timeout_ms != -1 and q.subscribed_topic_names is not None
                           and q.owned is not None)
        # Kafka sends the assignment when it changed or the request is full. librdkafka resends
        # a heartbeat that timed out (its timeout is the heartbeat interval) as it was, not as a
        # full request: an answer carrying a new assignment that came late is dropped, and the
        # member would never learn it (a revocation stalls for good). So an assignment is
        # repeated in every answer until the member reports owning it.
        unacknowledged = group.unacknowledged
        if reports_exactly(q.owned, member.assigned):
            unacknowledged.discard(member.member_id)
        elif member.assigned != before_assigned:
            unacknowledged.add(member.member_id)
        send = full or member.member_id in unacknowledged
        return HeartbeatReply(
            member_id=member.member_id, member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_ms(q.group_id),
            assignment=describing.pairs(member.assigned) if send else None)

    def converge(self, op: Operation, group_id: str, updated: ConsumerMember, records: list,
                 subscription_changed: bool, is_new: bool, instance_id: str | None, owned,
                 image: TopicImage, result: Result) -> ConsumerMember:
        """Write the member's change (`records`), then move the group on as any member's
        request does: the subscribed topics' metadata, the group epoch, a new target
        assignment, and this member's reconciliation towards its target given what it reports
        it owns. Shared by ConsumerGroupHeartbeat and a classic member's JoinGroup
        (classic_members.py)."""
        bump = subscription_changed
        now = op.now
        # apply the member change now so that the group's view includes it
        op.write(records, result)
        group = self.groups[group_id]
        records = []
        # the topics the group subscribes to, and their metadata
        op.write(subscriptions.resolve_regexes(group, image, now), result)
        metadata = subscriptions.metadata(group, image)
        if metadata != group.subscription_metadata:
            records.append(rec.subscription_metadata_record(group_id, metadata))
            bump = True
        if bump:
            if is_new:
                kind = tr.STATIC_MEMBER_JOINED if instance_id else tr.MEMBER_JOINED
            else:
                kind = tr.SUBSCRIPTION_CHANGED if subscription_changed else tr.METADATA_CHANGED
            result.facts.append(facts.EpochCause(
                group_id, tr.Trigger(kind, updated.member_id, instance_id), now))
            records.append(rec.epoch_record(group_id, group.group_epoch + 1))
            log.info("consumer group %s: epoch %d", group_id, group.group_epoch + 1)
        op.write(records, result)
        if group.group_epoch > group.assignment_epoch:
            op.write(subscriptions.target_records(group, self.config), result)
        member = group.members[updated.member_id]
        target = group.target.get(member.member_id, {})
        if not member.reconciled_to(group.assignment_epoch):
            before = member
            member = reconcile(member, group.assignment_epoch, target, group.partition_epoch,
                               owned)
            if member != before:
                op.write([rec.current_record(group_id, member)], result)
                if not self._arm_rebalance_deadline(group_id, member, now, result):
                    result.cancel(rebalance_key(group_id, member.member_id))
        return member

    @staticmethod
    def _arm_rebalance_deadline(group_id: str, member: ConsumerMember, now: int,
                                result: Result) -> bool:
        """A consumer-protocol member with partitions to revoke is fenced if it has not within
        its rebalance timeout; whether that timer is armed. (Classic members have join and
        sync deadlines instead: classic_members.py.)"""
        if member.state is not MemberState.UNREVOKED_PARTITIONS or member.classic is not None:
            return False
        result.schedule(rebalance_key(group_id, member.member_id),
                        now + max(member.rebalance_timeout_ms, 0),
                        ConsumerRebalanceDeadline(group_id, member.member_id,
                                                  member.member_epoch))
        return True

    # -- leaving and being removed ------------------------------------------------------------

    def _leave(self, op: Operation, q: HeartbeatRequest, result: Result) -> HeartbeatReply:
        now = op.now
        group = self._group(op, q.group_id, False, not_found="Group {} not found.")
        reply = HeartbeatReply(member_id=q.member_id, member_epoch=q.member_epoch)
        if q.instance_id is None:
            member = group.members.get(q.member_id)
            if member is None:
                fail(ErrorCode.unknown_member_id,
                     f"Member {q.member_id} is not a member of group {q.group_id}.")
            log.info("member %s left consumer group %s", q.member_id, q.group_id)
            result.facts.append(facts.EpochCause(q.group_id, tr.Trigger(tr.MEMBER_LEFT, q.member_id),
                                                 now))
            self.fence(op, group, member, result)
            return reply
        member = group.static_member(q.instance_id)
        if member is None:
            fail(ErrorCode.unknown_member_id, f"Instance id {q.instance_id} is unknown.")
        if member.member_id != q.member_id:
            fail(ErrorCode.fenced_instance_id,
                 f"Static member {q.member_id} with instance id {q.instance_id} was fenced by "
                 f"member {member.member_id}.")
        if q.member_epoch == STATIC_LEAVE_EPOCH:
            log.info("static member %s (instance %s) temporarily left consumer group %s",
                     q.member_id, q.instance_id, q.group_id)
            leaving = member.replace(member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
            op.write([rec.current_record(q.group_id, leaving)], result)
            return reply
        log.info("static member %s (instance %s) left consumer group %s", q.member_id,
                 q.instance_id, q.group_id)
        result.facts.append(facts.EpochCause(
            q.group_id, tr.Trigger(tr.MEMBER_LEFT, q.member_id, q.instance_id), now))
        self.fence(op, group, member, result)
        return reply

    def fence(self, op: Operation, group: ConsumerGroup, member: ConsumerMember,
              result: Result, bump_epoch: bool = True) -> bool:
        """Remove a member (it left, or its session or rebalance timeout passed): the group
        moves to a new epoch, or becomes a classic group again (migration.py). With
        `bump_epoch` False the caller writes the new epoch once for several members removed as
        one change (a LeaveGroup naming several: Kafka bumps once). Whether the group is still
        a consumer group afterwards."""
        gid = group.group_id
        if migration.downgrades(self, group, member):   # its last consumer-protocol member
            migration.downgrade(self, op, group, member, result)
            result.cancel(rebalance_key(gid, member.member_id))
            op.fenced += (member.member_id,)
            return False
        records = [rec.current_tombstone(gid, member.member_id),
                   rec.target_tombstone(gid, member.member_id),
                   rec.member_tombstone(gid, member.member_id)]
        op.write(records, result)
        group = self.groups[gid]
        # regexes nobody subscribes with any more
        op.write([rec.regex_tombstone(gid, regex)
                  for regex in sorted(set(group.resolved_regex) - group.regexes())], result)
        metadata = subscriptions.metadata_without_image(group)
        records = []
        if metadata != group.subscription_metadata:
            records.append(rec.subscription_metadata_record(gid, metadata))
        if bump_epoch:
            records.append(rec.epoch_record(gid, group.group_epoch + 1))
        op.write(records, result)
        # its session deadline went with it (ConsumerGroup.remove_member)
        result.cancel(rebalance_key(gid, member.member_id))
        op.fenced += (member.member_id,)
        return True

    def bump_epoch(self, op: Operation, group: ConsumerGroup, result: Result) -> None:
        """The new group epoch after members removed with `fence(bump_epoch=False)`."""
        op.write([rec.epoch_record(group.group_id, group.group_epoch + 1)], result)

    # -- sessions -------------------------------------------------------------------------------

    def heard_from(self, group: ConsumerGroup, member_id: str, now: int, result: Result,
                   timeout_ms: int | None = None) -> None:
        """The member's session ends one session timeout (or `timeout_ms`) from now."""
        member_sessions.heard_from(group, member_id, now + (
            self.config.session_ms(group.group_id) if timeout_ms is None else timeout_ms),
            result)

    def expire(self, event, now: int) -> Result:
        result = Result()
        group = self.groups.get(event.group_id)
        if group is None:
            return result
        if isinstance(event, ConsumerSessionDeadline):
            member = member_sessions.lapsed(group, now)
            if member is None:
                member_sessions.rearm(group, result)
                return result
            log.info("member %s of consumer group %s fenced: its session expired",
                     member.member_id, group.group_id)
            kind = tr.SESSION_EXPIRED
        elif isinstance(event, classic_members.DEADLINES):
            member = classic_members.deadline_passed(self, group, event)
            if member is None:
                return result
            kind = tr.REBALANCE_TIMEOUT
        else:
            member = group.members.get(event.member_id)
            if member is None or member.member_epoch != event.member_epoch \
                    or member.state is not MemberState.UNREVOKED_PARTITIONS:
                return result
            log.info("member %s of consumer group %s fenced: it did not revoke its partitions "
                     "within its rebalance timeout (%d ms)", member.member_id, group.group_id,
                     member.rebalance_timeout_ms)
            kind = tr.REBALANCE_TIMEOUT
        op = self.begin(now)
        result.facts.append(facts.EpochCause(
            group.group_id, tr.Trigger(kind, member.member_id, member.instance_id), now))
        self.fence(op, group, member, result)
        member_sessions.rearm(group, result)
        result.facts.append(facts.ConsumerObserved.of(group.group_id,
                                                      self.groups.get(group.group_id), now))
        op.finish(result, group.group_id, None, None)
        return result

    def write_completed(self, step: ConsumerWritten, error: ErrorCode | None,
                        now: int) -> Result:
        result = Result()
        if error is None:
            if step.token is not None:
                result.reply(step.token, step.reply)
            return result
        group = self.groups.get(step.group_id)   # as it was: the shard reverted the changes
        if group is not None:
            member_sessions.rearm(group, result)   # a deadline put back may need the group's timer
            # still members: a timeout's fencing is tried again shortly (Kafka's timers retry
            # a failed operation after a backoff); after a leave that failed (a classic
            # LeaveGroup may remove several), their sessions run out as if it never came
            for member_id in step.fenced:
                member = group.members.get(member_id)
                if member is not None:
                    delay = TIMER_RETRY_MS if step.token is None \
                        else classic_members.session_ms(member)
                    self.heard_from(group, member_id, now, result, delay)
        for made in step.classic_made:   # put back as the consumer group it was
            classic_members.answer_parked(made, error, result)
        if step.token is not None:
            failed = classic_members.failed_reply(step.reply, error)
            if failed is None:
                failed = error if isinstance(step.reply, ErrorCode) else HeartbeatReply(error=error)
            result.reply(step.token, failed)
        return result

    def groups_loaded(self, group_ids, now: int) -> Result:
        """After replay: every member's session starts now; a member still revoking gets its
        rebalance timeout again."""
        result = Result()
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is None:
                continue
            for member in group.members.values():
                self.heard_from(group, member.member_id, now, result,
                                 classic_members.session_ms(member))
                self._arm_rebalance_deadline(group_id, member, now, result)
        return result

    # -- what the shard asks of a group type (coordinator/group_type.py) ------------------------

    def being_deleted(self, group_id: str) -> bool:
        return False   # its deletion is applied at once (and undone if unwritten)

    def listed(self) -> list[GroupOverview]:
        return describing.listed(self.groups, self.name)

    def describe_group(self, group_id: str) -> GroupDescription:
        """DescribeGroups, the classic API: Kafka answers a consumer group as one that does not
        exist (Dead; from v6 GROUP_ID_NOT_FOUND, saying it is not a classic group)."""
        return GroupDescription(group_id, ErrorCode.group_id_not_found, "Dead", "", "", (),
                                error_message=f"Group {group_id} is not a classic group.")

    def subscribed_topics(self, group_id: str):
        group = self.groups.get(group_id)
        return set() if group is None or not group.members else group.subscribed_names()

    def validate_offset_commit(self, request, now: int, result: Result) -> ErrorCode | None:
        return offset_rules.validate_commit(self.groups[request.group_id], request)

    def validate_offset_fetch(self, group_id: str, member_id: str | None,
                              epoch: int) -> ErrorCode | None:
        return offset_rules.validate_fetch(self.groups[group_id], member_id, epoch)

    def validate_offset_delete(self, group_id: str) -> ErrorCode | None:
        return None

    def offset_expiry(self, group_id: str):
        return offset_rules.expiry(self.groups[group_id])

    def goes_with_its_offsets(self, group_id: str) -> bool:
        return False   # an empty consumer group stays when its last offset goes

    def validate_delete_group(self, group_id: str) -> ErrorCode | None:
        """DeleteGroups: only an empty consumer group goes."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.group_id_not_found
        return ErrorCode.non_empty_group if group.members else None

    def delete_group(self, group_id: str, now: int, result: Result) -> tuple:
        """Delete an empty consumer group: its tombstones, in Kafka's order (target assignment
        epoch, subscription metadata, group epoch), applied at once and undone if they cannot
        be written. Its committed offsets are the shard's."""
        group = self.groups[group_id]
        op = self.begin(now)
        op.write([rec.target_epoch_tombstone(group_id),
                  rec.subscription_metadata_tombstone(group_id),
                  rec.group_tombstone(group_id)], result)
        op.finish(result, group_id, None, None)
        log.info("consumer group %s deleted", group_id)
        result.facts.append(facts.GroupDeleted(self.name, group_id, group.group_epoch, now))
        return ()

    def own(self, record) -> rec.ConsumerRecord | None:
        return rec.as_consumer_record(record)

    # -- reading --------------------------------------------------------------------------------

    def describe(self, group_ids) -> list[DescribedGroup]:
        return describing.describe(self.groups, self.config, group_ids)

    def console_view(self, group_id: str):
        return describing.console_view(self.groups, group_id)

    # -- classic members inside consumer groups (classic_members.py) -----------------------------

    def serves_classic(self, group_id: str) -> bool:
        """Whether JoinGroup/SyncGroup/Heartbeat/LeaveGroup for this group id are this
        coordinator's: it is a consumer group with members (an empty one gives way to a
        classic group, as in Kafka)."""
        return not self.is_empty(group_id)

    # the classic protocol's requests on the ids it holds (the shard routes them here): its
    # classic-protocol members' while it has members; an empty group gives way to a classic
    # group, as in Kafka (a JoinGroup deletes it first, then joins once that is written)

    def join(self, request, now: int) -> Result:
        if self.serves_classic(request.group_id):
            image = self.classic.topics or DictTopicImage()
            if request.may_describe is not None:
                image = DescribableTopics(image, request.may_describe)
            return self.classic_join(request, image, now)
        result = Result()
        self.delete_group(request.group_id, now, result)
        result.after_write.append(JoinAfterDeletion(request))
        return result

    def sync(self, request, now: int) -> Result:
        if self.serves_classic(request.group_id):
            return self.classic_sync(request, now)
        return self.classic.sync(request, now)

    def leave(self, request, now: int) -> Result:
        if self.serves_classic(request.group_id):
            return self.classic_leave(request, now)
        return self.classic.leave(request, now)

    def check_in(self, group_id: str, generation: int, member_id: str,
                 instance_id: str | None, now: int, result: Result) -> ErrorCode:
        if self.serves_classic(group_id):
            return self.classic_heartbeat(group_id, generation, member_id, instance_id, now,
                                          result)
        return self.classic.check_in(group_id, generation, member_id, instance_id, now, result)

    # -- ConsumerGroupHeartbeat and ConsumerGroupDescribe, as the shard routes them ---------------

    def refuse(self, request: HeartbeatRequest, why: str) -> Result:
        """A ConsumerGroupHeartbeat on an id a type that does not take it holds."""
        result = Result()
        result.reply(request.token, HeartbeatReply(error=ErrorCode.group_id_not_found,
                                                    error_message=why))
        return result

    def describe_family(self, group_ids, holder) -> list[DescribedGroup]:
        """ConsumerGroupDescribe; `holder(group_id)`: the type holding it, or None (a group
        another type holds is "not a consumer group")."""
        described = []
        for group_id in group_ids:
            held = holder(group_id)
            described.append(self.describe([group_id])[0] if held is self
                             else describing.not_described(group_id, held is not None))
        return described

    def classic_join(self, request, image: TopicImage, now: int) -> Result:
        return classic_members.join(self, request, image, now)

    def classic_sync(self, request, now: int) -> Result:
        return classic_members.sync(self, request, now)

    def classic_heartbeat(self, group_id: str, generation: int, member_id: str,
                          instance_id: str | None, now: int, result: Result) -> ErrorCode:
        return classic_members.heartbeat(self, group_id, generation, member_id, instance_id,
                                         now, result)

    def classic_leave(self, request, now: int) -> Result:
        return classic_members.leave(self, request, now)
