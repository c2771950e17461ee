"""The share group coordinator (KIP-932 membership): ShareGroupHeartbeat, what
ShareGroupDescribe reads, sessions, and what the shard asks of every group type
(coordinator/group_type.py). The share-partition state (what is delivered, acquired,
acknowledged) is not here: the coordinator asks the edge for it through effects (effects.py).

What a heartbeat does (Kafka 4.4.0's GroupMetadataManager.shareGroupHeartbeat):
1. find or create the group (a join creates it: "Share group X not found." otherwise), refuse a
   new member of a full group (group.share.max.size), find or create the member (a join
   creates it; "Member X is not a member of group Y." otherwise), check its epoch;
2. update the member's metadata (rack, subscribed topic names, client id and host): a changed
   subscription, or a change in the subscribed topics' partitions (the metadata hash), bumps
   the group epoch;
3. group epoch > target assignment epoch: a new target (assignor.py, Kafka's SimpleAssignor);
   the share state of its partitions is initialised (the `ShareStateWanted` effect, carried
   out once the records are durable and before the answer, broker/groups/share_group.py);
4. the member takes its target at once (share groups have no revocation): its epoch becomes
   the target assignment epoch, its partitions the target's of the topics it subscribes to;
5. its session runs one share session timeout from now.
A leave (epoch -1), an expired session or DeleteGroups removes members. A member's acquired
records stay with it until its share session ends (ShareAcknowledge or ShareFetch at epoch -1,
or its connection closes) or their locks expire, as in Kafka 4.4, whose share sessions, not its
group membership, release them (SharePartitionManager's listener on the session cache); the
edge is told of a deleted group only (`ShareGroupGone`), to drop its share state.

Kafka assigns a partition only once its share state is initialised, a heartbeat later; roster
initialises the partitions of a new target before it answers the heartbeat that computed it
and assigns them in that answer (initialisation is idempotent).

Mutation: the group touched is put back as a whole when the operation is refused or its
records are not written (changes.py's `GroupPutBack`, one change per operation: members are
immutable values, so the copy costs one dict per member map).
"""
from __future__ import annotations

import hashlib
import logging

from roster.coordinator import facts as shared_facts
from roster.coordinator import triggers as tr
from roster.coordinator.changes import MemberWritten, WholeGroupOperation
from roster.coordinator.consumer.validation import RequestError, fail
from roster.coordinator.group_type import GroupsById
from roster.coordinator.messages import GroupDescription, GroupOverview, GroupView, MemberView
from roster.coordinator.no_classic_members import NoClassicMembers
from roster.coordinator.results import Result
from roster.coordinator.share import messages as text
from roster.coordinator.share import records as rec
from roster.coordinator.share.assignor import assign
from roster.coordinator.share.effects import ShareGroupGone, ShareStateWanted
from roster.coordinator.share.facts import ShareEpochCause, ShareObserved, ShareView
from roster.coordinator.share.messages import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    ShareConfig,
    ShareHeartbeat,
    ShareHeartbeatReply,
    validate,
)
from roster.coordinator.share.model import (
    STABLE_MEMBER,
    Assignment,
    ShareGroup,
    ShareMember,
    freeze,
    pairs,
)
from roster.coordinator.share.replay import replay
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode
from roster.protocol.java_order import hash_set_order

log = logging.getLogger("roster.coordinator")

TIMER_RETRY_MS = 500


@frozen
class ShareSessionDeadline:
    group_id: str
    member_id: str


class _Op(WholeGroupOperation):
    def copy(self, group: ShareGroup) -> ShareGroup:
        return group.copy()

    def replay(self, record) -> None:
        replay(self.groups, record)


def session_key(group_id: str, member_id: str) -> str:
    return f"share-session:{group_id}:{member_id}"


class ShareWritten(MemberWritten):
    """A share member operation's continuation (its own type: the shard routes continuations
    to their group type by type)."""
    __slots__ = ()


def _retry_fencing(result: Result, group_id: str, member_id: str, now: int) -> None:
    """A session timeout's fencing whose records could not be written is tried again."""
    result.schedule(session_key(group_id, member_id), now + TIMER_RETRY_MS,
                    ShareSessionDeadline(group_id, member_id))


class ShareCoordinator(NoClassicMembers, GroupsById):
    name = "share"
    # ShareGroupHeartbeat makes its groups; the classic protocol's requests on its ids are
    # answered as Kafka answers them (NoClassicMembers), not refused GROUP_ID_NOT_FOUND
    accepts = frozenset({"share", "classic"})
    serves = frozenset({"share", "classic"})
    steps = (ShareSessionDeadline, ShareWritten)

    def __init__(self, config: ShareConfig | None = None, topics=None) -> None:
        self.config = config or ShareConfig()
        self.topics = topics            # the topic catalog (consumer.model.TopicImage)
        self.groups: dict[str, ShareGroup] = {}
        # group id -> (its subscribed topic names, the catalog's version, their hash): a steady
        # heartbeat does not hash the topics again until either changes
        self._hashes: dict[str, tuple] = {}

    # -- what the share-partition state and the fetch path ask ----------------------------------

    def is_member(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members

    def assigned(self, group_id: str, member_id: str) -> Assignment:
        """The partitions the member was last told it holds ({} when none or not a member)."""
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        return {} if member is None else member.assigned

    # -- ShareGroupHeartbeat --------------------------------------------------------------------

    def refuse(self, q: ShareHeartbeat, why: str) -> Result:
        """A ShareGroupHeartbeat on an id another type holds (Kafka: GROUP_ID_NOT_FOUND, 'Group
        X is not a share group.')."""
        result = Result()
        result.reply(q.token, ShareHeartbeatReply(
            error=ErrorCode.group_id_not_found,
            error_message=text.NOT_A_SHARE_GROUP.format(q.group_id)))
        return result

    def heartbeat(self, q: ShareHeartbeat, image, now: int) -> Result:
        result = Result()
        op = _Op(self.groups, now)
        try:
            refused = validate(q)
            if refused is not None:
                fail(*refused)
            if q.member_epoch == LEAVE_EPOCH:
                reply = self._leave(op, q, result)
            else:
                reply = self._heartbeat(op, q, image, result)
        except RequestError as exc:
            op.revert()
            result.records.clear()
            result.effects = ()
            result.facts.clear()
            result.timers.clear()
            result.reply(q.token, ShareHeartbeatReply(error=exc.error,
                                                      error_message=exc.message))
            return result
        self._finish(op, q.group_id, q.token, reply, result)
        return result

    def _finish(self, op: _Op, group_id: str, token, reply, result: Result,
                fenced: tuple[str, ...] = ()) -> None:
        if result.records:
            # what the flight recorder follows: the group as this operation left it
            group = self.groups.get(group_id)
            result.facts.append(ShareObserved(
                group_id, None if group is None else ShareView.of(group, self._name), op.now))
            result.changes += op.changes
            result.after_write.append(ShareWritten(group_id, token, reply, fenced))
        elif token is not None:
            result.reply(token, reply)

    def _heartbeat(self, op: _Op, q: ShareHeartbeat, image, result: Result) -> ShareHeartbeatReply:
        gid, mid, now = q.group_id, q.member_id, op.now
        joining = q.member_epoch == JOIN_EPOCH
        group = self.groups.get(gid)
        if group is None:
            if not joining:
                fail(ErrorCode.group_id_not_found, text.SHARE_GROUP_NOT_FOUND.format(gid))
            group = ShareGroup(gid)       # stored by its first record
        if len(group.members) >= self.config.max_size and mid not in group.members:
            fail(ErrorCode.group_max_size_reached,
                 text.MAX_SIZE_REACHED.format(self.config.max_size))
        old = group.members.get(mid)
        if old is None:
            if not joining:
                fail(ErrorCode.unknown_member_id, text.UNKNOWN_MEMBER.format(mid, gid))
            member = ShareMember(mid)
            log.info("member %s joins share group %s", mid, gid)
        else:
            member = old
            _check_epoch(member, q.member_epoch)
        changes = {}
        if q.rack_id is not None and q.rack_id != member.rack_id:
            changes["rack_id"] = q.rack_id
        # the same names in another order are no change; new ones are held as Kafka holds
        # them, in the order of a HashSet made from its record's sorted list (replay.py)
        names = q.subscribed_topic_names
        if names is not None and set(names) != set(member.subscribed):
            changes["subscribed"] = hash_set_order(sorted(set(names)))
        if q.client_id != member.client_id:
            changes["client_id"] = q.client_id
        if q.client_host != member.client_host:
            changes["client_host"] = q.client_host
        updated = member.replace(**changes) if changes else member
        subscription_changed = old is None or updated.subscribed != member.subscribed
        if old is None or updated != member:
            op.write([rec.member_record(gid, updated)], result)
        group = self.groups.get(gid) or group
        metadata_hash = self._metadata_hash(group, image)
        if subscription_changed or metadata_hash != group.metadata_hash:
            cause = tr.Trigger(tr.MEMBER_JOINED, mid) if old is None else \
                tr.Trigger(tr.SUBSCRIPTION_CHANGED, mid) if subscription_changed else \
                tr.Trigger(tr.METADATA_CHANGED, detail="the subscribed topics changed")
            result.facts.append(ShareEpochCause(gid, cause, now))
            op.write([rec.epoch_record(gid, group.group_epoch + 1, metadata_hash)], result)
            log.info("share group %s: epoch %d", gid, group.group_epoch)
        wanted: dict = {}
        if group.group_epoch > group.assignment_epoch:
            self._new_target(op, group, image, result, wanted)
        member = group.members[mid]
        reconciled = self._reconcile(op, group, member, subscription_changed, image, result)
        result.schedule(session_key(gid, mid), now + self.config.session_ms(gid),
                        ShareSessionDeadline(gid, mid))
        send = joining or q.subscribed_topic_names is not None \
            or reconciled.assigned != member.assigned
        assignment = None
        if send:
            assignment = tuple((tid, tuple(sorted(ps)))
                               for tid, ps in sorted(reconciled.assigned.items()))
            wanted.update(dict.fromkeys(pairs(reconciled.assigned)))
        if wanted:
            result.effects = (*result.effects, ShareStateWanted(gid, tuple(wanted)))
        return ShareHeartbeatReply(member_id=mid, member_epoch=reconciled.member_epoch,
                                   heartbeat_interval_ms=self.config.heartbeat_ms(gid),
                                   assignment=assignment)

    def _metadata_hash(self, group: ShareGroup, image) -> int:
        names = frozenset(group.subscribed_names())
        version = None if image is None else image.version()
        kept = self._hashes.get(group.group_id)
        if version is not None and kept is not None and kept[0] == names \
                and kept[1] == version:
            return kept[2]
        value = _metadata_hash(names, image)
        self._hashes[group.group_id] = (names, version, value)
        return value

    def _new_target(self, op: _Op, group: ShareGroup, image, result: Result,
                    wanted: dict) -> None:
        """The group's target at its epoch (Kafka writes a member's target record only when it
        changed), the partitions in it recorded as initialised (ShareGroupStatePartitionMetadata)
        and asked of the share state."""
        gid = group.group_id
        counts: dict[bytes, int] = {}
        names: dict[bytes, str] = {}
        for name in group.subscribed_names():
            found = None if image is None else image.lookup(name)
            if found is not None:
                counts[found[0]], names[found[0]] = found[1], name
        ids = {n: t for t, n in names.items()}
        subscriptions = {m.member_id: frozenset(ids[n] for n in m.subscribed if n in ids)
                         for m in group.members.values()}
        targets = assign(subscriptions, counts, group.target)
        records = [rec.target_record(gid, mid, target) for mid, target in sorted(targets.items())
                   if group.target.get(mid) != target]
        records.append(rec.target_epoch_record(gid, group.group_epoch, op.now))
        # a deleted topic's partitions leave the initialised set (Kafka cleans its share
        # group state metadata up when a topic goes)
        initialized = {tid: v for tid, v in group.initialized.items()
                       if image is None or image.name_of(tid) is not None}
        for target in targets.values():
            for tid, ps in target.items():
                have = initialized.get(tid, (names[tid], frozenset()))[1]
                initialized[tid] = (names[tid], have | ps)
        if initialized != group.initialized:
            records.append(rec.state_partitions_record(gid, initialized, group.initializing,
                                                       group.deleting))
        op.write(records, result)
        for target in targets.values():
            wanted.update(dict.fromkeys(pairs(target)))

    def _reconcile(self, op: _Op, group: ShareGroup, member: ShareMember,
                   subscription_changed: bool, image, result: Result) -> ShareMember:
        """Kafka's ShareGroupAssignmentBuilder: the member takes the target at once."""
        epoch = group.assignment_epoch
        if member.state == STABLE_MEMBER and member.member_epoch == epoch \
                and not subscription_changed:
            return member
        target = _only_subscribed(group.target.get(member.member_id, {}), member.subscribed,
                                  image)
        if member.member_epoch != epoch:
            updated = member.replace(member_epoch=epoch,
                                     previous_member_epoch=member.member_epoch,
                                     state=STABLE_MEMBER, assigned=target)
        else:
            updated = member.replace(assigned=target)
        if updated != member:
            op.write([rec.current_record(group.group_id, updated)], result)
        return group.members[member.member_id]

    def _leave(self, op: _Op, q: ShareHeartbeat, result: Result) -> ShareHeartbeatReply:
        gid, mid = q.group_id, q.member_id
        group = self.groups.get(gid)
        if group is None:
            fail(ErrorCode.group_id_not_found, text.GROUP_NOT_FOUND.format(gid))
        if mid not in group.members:
            fail(ErrorCode.unknown_member_id, text.UNKNOWN_MEMBER.format(mid, gid))
        log.info("member %s left share group %s", mid, gid)
        self._remove(op, group, mid, result, tr.Trigger(tr.MEMBER_LEFT, mid))
        return ShareHeartbeatReply(member_id=mid, member_epoch=LEAVE_EPOCH)

    def _remove(self, op: _Op, group: ShareGroup, member_id: str, result: Result,
                cause: tr.Trigger) -> None:
        """Kafka's shareGroupFenceMember: the member's records go, the epoch is bumped (the
        target assignment epoch with it when it was the last member), what it acquired stays
        acquired until its share session ends or the locks expire, as in Kafka."""
        gid = group.group_id
        result.facts.append(ShareEpochCause(gid, cause, op.now))
        last = len(group.members) == 1
        op.write(rec.member_tombstones(gid, member_id), result)
        group = self.groups[gid]
        metadata_hash = self._metadata_hash(group, self.topics)
        records = [rec.epoch_record(gid, group.group_epoch + 1, metadata_hash)]
        if last:
            records.append(rec.target_epoch_record(gid, group.group_epoch + 1))
        op.write(records, result)
        result.cancel(session_key(gid, member_id))

    # -- timers and continuations ---------------------------------------------------------------

    def expire(self, event: ShareSessionDeadline, now: int) -> Result:
        result = Result()
        group = self.groups.get(event.group_id)
        if group is None or event.member_id not in group.members:
            return result
        log.info("member %s of share group %s fenced: its session expired", event.member_id,
                 event.group_id)
        op = _Op(self.groups, now)
        self._remove(op, group, event.member_id, result,
                     tr.Trigger(tr.SESSION_EXPIRED, event.member_id))
        self._finish(op, event.group_id, None, None, result, (event.member_id,))
        return result

    def write_completed(self, step: ShareWritten, error: ErrorCode | None, now: int) -> Result:
        return step.completed(error, self.groups, now, _retry_fencing,
                              lambda error: ShareHeartbeatReply(error=error))

    def groups_loaded(self, group_ids, now: int) -> Result:
        """After replay: every member's session starts now."""
        result = Result()
        for gid in group_ids:
            group = self.groups.get(gid)
            for member_id in ({} if group is None else group.members):
                result.schedule(session_key(gid, member_id), now + self.config.session_ms(gid),
                                ShareSessionDeadline(gid, member_id))
        return result

    # -- records --------------------------------------------------------------------------------

    def own(self, record):
        return rec.as_share_record(record)

    def replay(self, record, now: int = -1) -> None:
        replay(self.groups, record)

    # -- reading --------------------------------------------------------------------------------

    def listed(self):
        return [GroupOverview(gid, self.name, "share", g.state, len(g.members), g.group_epoch)
                for gid, g in self.groups.items()]

    def describe_group(self, group_id: str) -> GroupDescription:
        """DescribeGroups (the classic API), as Kafka answers it for a group that is not a
        classic one."""
        return GroupDescription(group_id, ErrorCode.group_id_not_found, "Dead", "", "", (),
                                error_message=f"Group {group_id} is not a classic group.")

    def group(self, group_id: str) -> ShareView | None:
        """The group as its flight recorder reads it (its loading after a restart)."""
        group = self.groups.get(group_id)
        return None if group is None else ShareView.of(group, self._name)

    def describe(self, group_id: str) -> ShareGroup | None:
        """The group, for ShareGroupDescribe (None: no such share group)."""
        return self.groups.get(group_id)

    def console_view(self, group_id: str):
        group = self.groups.get(group_id)
        if group is None:
            return None
        members = tuple(MemberView(
            m.member_id, None, m.client_id, m.client_host,
            tuple((self._name(tid), tuple(sorted(ps))) for tid, ps in sorted(m.assigned.items())),
            note=f"epoch {m.member_epoch}")
            for _, m in sorted(group.members.items()))
        return GroupView(group.state, "share", group.group_epoch, members)

    def _name(self, topic_id: bytes) -> str:
        name = None if self.topics is None else self.topics.name_of(topic_id)
        return name if name is not None else topic_id.hex()

    # -- what the shard asks about offsets and deletion -----------------------------------------

    def being_deleted(self, group_id: str) -> bool:
        return False      # its deletion is applied at once (and put back if unwritten)

    def subscribed_topics(self, group_id: str):
        group = self.groups.get(group_id)
        return set() if group is None else group.subscribed_names()

    def validate_offset_commit(self, request, now: int, result: Result) -> ErrorCode | None:
        return ErrorCode.group_id_not_found     # ShareGroup.validateOffsetCommit

    def validate_offset_fetch(self, group_id: str, member_id: str | None,
                              epoch: int) -> ErrorCode | None:
        """Kafka's ShareGroup.validateOffsetFetch refuses GROUP_ID_NOT_FOUND, which its
        OffsetMetadataManager.fetchOffsets takes as "no offsets": answered without error."""
        return None

    def validate_offset_delete(self, group_id: str) -> ErrorCode | None:
        return ErrorCode.group_id_not_found     # ShareGroup.validateOffsetDelete

    def offset_expiry(self, group_id: str):
        return None            # a share group commits no offsets to __consumer_offsets

    def goes_with_its_offsets(self, group_id: str) -> bool:
        return False

    def validate_delete_group(self, group_id: str) -> ErrorCode | None:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.group_id_not_found
        return ErrorCode.non_empty_group if group.members else None

    def delete_group(self, group_id: str, now: int, result: Result) -> tuple:
        op = _Op(self.groups, now)
        group = self.groups.get(group_id)
        result.facts.append(shared_facts.GroupDeleted(
            self.name, group_id, 0 if group is None else group.group_epoch, now))
        members = () if group is None else sorted(group.members)
        op.write(rec.group_tombstones(group_id, members), result)
        result.changes += op.changes
        result.effects = (*result.effects, ShareGroupGone(group_id))
        self._hashes.pop(group_id, None)
        log.info("share group %s deleted", group_id)
        return ()


def _check_epoch(member: ShareMember, epoch: int) -> None:
    """Kafka's throwIfShareGroupMemberEpochIsInvalid (a join at epoch 0 always passes)."""
    if epoch == JOIN_EPOCH:
        return
    if epoch > member.member_epoch:
        fail(ErrorCode.fenced_member_epoch, text.GREATER_EPOCH.format(epoch, member.member_epoch))
    if epoch < member.member_epoch and epoch != member.previous_member_epoch:
        fail(ErrorCode.fenced_member_epoch,
             text.SMALLER_EPOCH.format(epoch, member.member_epoch, member.previous_member_epoch))


def _only_subscribed(target: Assignment, subscribed: tuple[str, ...], image) -> Assignment:
    """The target's partitions of the topics the member subscribes to (Kafka's
    filterAssignedPartitions)."""
    if image is None:
        return dict(target)
    wanted = set(subscribed)
    return freeze((tid, ps) for tid, ps in target.items() if image.name_of(tid) in wanted)


def _metadata_hash(names, image) -> int:
    """What the subscribed topics look like (name, id and partition count), as a signed 64-bit
    number: a change bumps the group epoch (Kafka only compares its own hash too)."""
    if not names or image is None:
        return 0
    digest = hashlib.blake2b(digest_size=8)
    for name in sorted(names):
        found = image.lookup(name)
        digest.update(f"{name}:{'-' if found is None else found[0].hex()}:"
                      f"{-1 if found is None else found[1]};".encode())
    return int.from_bytes(digest.digest(), "big", signed=True)
