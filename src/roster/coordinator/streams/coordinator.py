"""The streams group coordinator (KIP-1071): StreamsGroupHeartbeat, StreamsGroupDescribe's
groups, sessions, and what the shard asks of every group type (coordinator/group_type.py).

What a heartbeat does (Kafka's GroupMetadataManager.streamsGroupHeartbeat):
1. validate the request; find or create the group (a join creates it), find or create the
   member (static members: static_members.py);
2. at join, the member's topology: the group's first (or a newer epoch) is stored (record 23);
3. update the member's metadata (process, endpoint, rack, client tags, topology epoch); a new
   member, a changed one (static_members.bumps_group_epoch), a new topology or a change in the
   partition counts of the topics the topology names bumps the group epoch;
4. configure the topology against the topics (topology.py): the internal topics missing are
   asked of the edge (`InternalTopicsWanted` in Result.effects, created once the result is
   durable), and the heartbeat reports the status;
5. group epoch > target assignment epoch: a new target (the sticky assignor; nothing while the
   topology is not ready);
6. move the member's current tasks towards its target (reconcile.py: revoked before they are
   given to another);
7. its session runs one session timeout from now (a timer per member; a static member that
   left with epoch -2 keeps its tasks until it ends).

Mutation: the group touched is put back as a whole when the operation is refused or its
records are not written (changes.py's `GroupPutBack`, one change per operation: its members are
immutable values, so the copy costs one dict per member map, not the members).
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import replace

from roster.coordinator import facts as shared_facts
from roster.coordinator import triggers as tr
from roster.coordinator.changes import MemberWritten, WholeGroupOperation
from roster.coordinator.consumer.validation import RequestError, fail
from roster.coordinator.group_type import GroupsById
from roster.coordinator.messages import GroupDescription, GroupOverview, GroupView, MemberView
from roster.coordinator.no_classic_members import NoClassicMembers
from roster.coordinator.offset_store import OffsetExpiry
from roster.coordinator.results import Result
from roster.coordinator.streams import messages as text
from roster.coordinator.streams import records as rec
from roster.coordinator.streams import static_members
from roster.coordinator.streams.assignor import MemberSpec, SubtopologySpec, assign
from roster.coordinator.streams.effects import InternalTopicsWanted
from roster.coordinator.streams.endpoints import endpoint_partitions
from roster.coordinator.streams.facts import (
    StreamsAway,
    StreamsEpochCause,
    StreamsObserved,
    StreamsSaved,
)
from roster.coordinator.streams.heartbeat import (
    EndpointAnswer,
    StreamsHeartbeat,
    StreamsHeartbeatReply,
)
from roster.coordinator.streams.messages import StreamsConfig
from roster.coordinator.streams.model import (
    EMPTY,
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    MemberState,
    StreamsGroup,
    StreamsMember,
    TaskSets,
    task_ids,
)
from roster.coordinator.streams.reconcile import reconcile
from roster.coordinator.streams.replay import replay
from roster.coordinator.streams.topology import (
    ConfiguredTopology,
    InvalidTopology,
    Status,
    Topology,
    configure,
    invalid_topology,
    required_topics,
)
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinator")


@frozen
class StreamsSessionDeadline:
    group_id: str
    member_id: str


@frozen
class StreamsRebalanceDeadline:
    """A member told to revoke tasks had its rebalance timeout to do it."""
    group_id: str
    member_id: str
    member_epoch: int


@frozen
class StreamsInitialRebalance:
    """A new group's initial rebalance delay is over: its first target is computed."""
    group_id: str


def _copy(group: StreamsGroup) -> StreamsGroup:
    return StreamsGroup(group.group_id, group.group_epoch, group.metadata_hash,
                        group.validated_topology_epoch, group.last_assignment_configs,
                        group.assignment_epoch, dict(group.members), dict(group.static_members),
                        dict(group.target), group.topology, dict(group.session_deadlines),
                        group.assignment_timestamp)


class _Op(WholeGroupOperation):
    def copy(self, group: StreamsGroup) -> StreamsGroup:
        return _copy(group)

    def replay(self, record) -> None:
        replay(self.groups, record)


def session_key(group_id: str, member_id: str) -> str:
    return f"streams-session:{group_id}:{member_id}"


class StreamsWritten(MemberWritten):
    """A streams member operation's continuation (its own type: the shard routes continuations
    to their group type by type)."""
    __slots__ = ()


def _retry_fencing(result: Result, group_id: str, member_id: str, now: int) -> None:
    """A session timeout's fencing whose records could not be written is tried again."""
    result.schedule(session_key(group_id, member_id), now + TIMER_RETRY_MS,
                    StreamsSessionDeadline(group_id, member_id))


def rebalance_key(group_id: str, member_id: str) -> str:
    return f"streams-rebalance:{group_id}:{member_id}"


def initial_rebalance_key(group_id: str) -> str:
    return f"streams-initial-rebalance:{group_id}"


TIMER_RETRY_MS = 500


def _tasks_of(pairs) -> dict | None:
    return None if pairs is None else {s: frozenset(ps) for s, ps in pairs.items() if ps}


class StreamsCoordinator(NoClassicMembers, GroupsById):
    name = "streams"
    # StreamsGroupHeartbeat makes its groups; the classic protocol's requests on its ids are
    # answered as Kafka answers them (NoClassicMembers), not refused GROUP_ID_NOT_FOUND
    accepts = frozenset({"streams", "classic"})
    serves = frozenset({"streams", "classic"})
    steps = (StreamsSessionDeadline, StreamsRebalanceDeadline, StreamsInitialRebalance,
             StreamsWritten)

    def __init__(self, config: StreamsConfig | None = None, topics=None) -> None:
        self.config = config or StreamsConfig()
        self.topics = topics            # the topic catalog (consumer.model.TopicImage)
        self.groups: dict[str, StreamsGroup] = {}
        # in memory only, as Kafka keeps them: the epoch of the endpoint-to-partitions map
        # (bumped when any member's tasks change) and the groups asked to shut down
        self._endpoint_epochs: dict[str, int] = {}
        self._shutdown: set[str] = set()
        # the groups whose initial rebalance delay runs (in memory, as Kafka's timer: a group
        # replayed at start has members, and only an empty group's first epoch is delayed)
        self._delayed: set[str] = set()
        # group id -> (its topology, the catalog's version, the topology configured against
        # it, the topics' hash): see _configuration
        self._configured: dict[str, tuple] = {}

    # -- StreamsGroupHeartbeat ------------------------------------------------------------------

    def refuse(self, q: StreamsHeartbeat, why: str) -> Result:
        """A StreamsGroupHeartbeat on an id a type that does not take it holds."""
        result = Result()
        result.reply(q.token, StreamsHeartbeatReply(error=ErrorCode.group_id_not_found,
                                                    error_message=why, member_id=q.member_id))
        return result

    def heartbeat(self, q: StreamsHeartbeat, image, now: int) -> Result:
        result = Result()
        op = _Op(self.groups, now)
        try:
            _validate(q)
            if q.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                reply = self._leave(op, q, result)
            else:
                reply = self._heartbeat(op, q, image, result)
        except RequestError as exc:
            op.revert()
            result.records.clear()
            result.effects = ()
            result.facts.clear()          # nothing it noted happened
            # (Kafka's refusals carry no member id)
            result.reply(q.token, StreamsHeartbeatReply(error=exc.error,
                                                        error_message=exc.message))
            return result
        self._finish(op, q.group_id, q.token, reply, result)
        return result

    def _finish(self, op: _Op, group_id: str, token, reply, result: Result,
                fenced: tuple[str, ...] = ()) -> None:
        if result.records:
            # what the flight recorder follows: the group as this operation left it
            result.facts.append(StreamsObserved.of(group_id, self.groups.get(group_id), op.now))
            result.changes += op.changes
            result.after_write.append(StreamsWritten(group_id, token, reply, fenced))
        elif token is not None:
            result.reply(token, reply)

    def _heartbeat(self, op: _Op, q: StreamsHeartbeat, image, result: Result):
        gid, mid, now = q.group_id, q.member_id, op.now
        joining = q.member_epoch == JOIN_EPOCH
        group = self.groups.get(gid)
        if group is None:
            if not joining:
                fail(ErrorCode.group_id_not_found, text.GROUP_NOT_FOUND.format(gid))
            group = StreamsGroup(gid)     # stored by its first record
        static_members.check_group_size(group, mid, q.instance_id, self.config.max_size)
        was_empty = not group.members
        records: list = []
        old: StreamsMember | None
        if q.instance_id is None:
            old = group.members.get(mid)
            if old is None:
                if not joining:
                    fail(ErrorCode.unknown_member_id,
                         f"Member {mid} is not a member of group {gid}.")
                member = StreamsMember(mid)
                log.info("member %s joins streams group %s", mid, gid)
            else:
                member = old
                if not joining:
                    _check_epoch(member, q)
        else:
            join = static_members.static_member(group, mid, q.instance_id, q.member_epoch)
            member = join.member
            if join.replaced is not None:
                old = group.members[join.replaced]
                log.info("static member %s (instance %s) rejoins streams group %s in place of "
                         "%s", mid, q.instance_id, gid, join.replaced)
                op.write(static_members.rejoin_records(gid, join), result)
                result.facts.append(StreamsSaved(gid, q.instance_id, mid, join.replaced))
                group = self.groups[gid]
                member = group.members[mid]
                result.cancel(session_key(gid, join.replaced))
            else:
                old = group.members.get(mid)
                if old is not None and not joining:
                    _check_epoch(member, q)
        bump = old is None
        # why the epoch is bumped, for the flight recorder: the first cause found
        cause = None if old is not None else tr.Trigger(
            tr.STATIC_MEMBER_JOINED if q.instance_id else tr.MEMBER_JOINED, mid, q.instance_id)
        # the topology, sent at join: the first initializes the group's; as in Kafka 4.4 it is
        # never replaced (a member behind it is told its topology is stale; any other is refused,
        # even into an emptied group, until the group is deleted)
        if q.topology is not None:
            if group.topology is None:
                why = invalid_topology(q.topology)
                if why is not None:
                    fail(ErrorCode.streams_invalid_topology, why)
                records.append(rec.topology_record(gid, q.topology))   # with the first
                bump = True                                               # member's join
            elif q.topology.epoch >= group.topology.epoch and q.topology != group.topology:
                fail(ErrorCode.invalid_request, text.TOPOLOGY_UPDATES_UNSUPPORTED)
        # the member's metadata; a null field is unchanged
        changes = {}
        for name, value in (("instance_id", q.instance_id), ("rack_id", q.rack_id),
                            ("process_id", q.process_id), ("user_endpoint", q.user_endpoint),
                            ("client_tags", q.client_tags)):
            if value is not None and value != getattr(member, name):
                changes[name] = value
        if q.rebalance_timeout_ms != -1 and q.rebalance_timeout_ms != member.rebalance_timeout_ms:
            changes["rebalance_timeout_ms"] = q.rebalance_timeout_ms
        if q.topology is not None and q.topology.epoch != member.topology_epoch:
            changes["topology_epoch"] = q.topology.epoch
        if q.client_id != member.client_id:
            changes["client_id"] = q.client_id
        if q.client_host != member.client_host:
            changes["client_host"] = q.client_host
        updated = member.replace(**changes) if changes else member
        if old is not None and static_members.bumps_group_epoch(old, updated):
            bump = True
            cause = cause or tr.Trigger(tr.MEMBER_CHANGED, mid, q.instance_id)
        if old is None or updated is not member:   # a change made a new member value
            records.append(rec.member_record(gid, updated))
        op.write(records, result)
        group = self.groups.get(gid) or group
        configured, metadata_hash = self._configuration(group, image)
        if metadata_hash != group.metadata_hash:
            bump = True
            cause = cause or tr.Trigger(tr.METADATA_CHANGED,
                                        detail="the topology's topics changed")
        if bump:
            result.facts.append(StreamsEpochCause(gid, cause or tr.Trigger(tr.OTHER), now))
            validated = configured.epoch if configured is not None and configured.ready else -1
            op.write([rec.epoch_record(gid, group.group_epoch + 1, metadata_hash, validated)],
                     result)
            log.info("streams group %s: epoch %d", gid, group.group_epoch + 1)
            if was_empty:
                self._delay_first_assignment(gid, now, result)
        if configured is not None and configured.to_create:
            refused = () if q.create_refused is None else sorted(
                q.create_refused(configured.to_create))
            if refused:   # as Kafka: none is created, and the status says why
                configured = _create_refused(configured, refused)
            else:
                result.effects += (InternalTopicsWanted(gid,
                                                        tuple(configured.to_create.values())),)
        # reported while the initial delay runs whatever the epochs, as Kafka checks it first
        delayed = text.DELAYED_BY_INITIAL_DELAY if gid in self._delayed else None
        if delayed is None and group.group_epoch > group.assignment_epoch:
            delayed = self._assignment_delayed(group, now)
            if delayed is None:
                op.write(self._target_records(group, configured, now), result)
        member = group.members[mid]
        if q.task_offsets is not None or q.task_end_offsets is not None:
            member = self._offsets_reported(group, member, q)
        before = member.assigned
        owned = None
        if q.active is not None or q.standby is not None or q.warmup is not None:
            owned = TaskSets(q.active or {}, q.standby or {}, q.warmup or {})
        target, target_epoch = group.target.get(mid, EMPTY), group.assignment_epoch
        if gid in self._delayed:
            # as Kafka 4.4: while the delay runs no target is written, and a member waits at
            # the first epoch (or the group's last assignment's) with no tasks
            target, target_epoch = EMPTY, max(1, group.assignment_epoch)
        reconciled = reconcile(member, target_epoch, target,
                               lambda task, me: _active_elsewhere(group, task, me), owned)
        if reconciled != member:
            op.write([rec.current_record(gid, reconciled)], result)
            member = group.members[mid]
            self._arm_rebalance_deadline(gid, member, now, result)
        if member.assigned != before:
            self._endpoint_epochs[gid] = self._endpoint_epochs.get(gid, 0) + 1
        result.schedule(session_key(gid, mid), now + self.config.session_ms(gid),
                        StreamsSessionDeadline(gid, mid))
        if q.shutdown_application:
            log.info(text.SHUTDOWN_REQUESTED.format(mid))
            self._shutdown.add(gid)
        # the tasks go back when they changed, and at join (Kafka leaves them null otherwise,
        # whatever the member reported)
        full = joining or member.assigned != before
        return self._reply(group, member, q, configured, image, full, delayed)

    @staticmethod
    def _arm_rebalance_deadline(gid: str, member: StreamsMember, now: int,
                                result: Result) -> None:
        """A member with tasks to revoke is removed if it has not within its rebalance
        timeout (as the consumer type fences one that keeps its partitions)."""
        if member.state is MemberState.UNREVOKED_TASKS:
            result.schedule(rebalance_key(gid, member.member_id),
                            now + max(member.rebalance_timeout_ms, 0),
                            StreamsRebalanceDeadline(gid, member.member_id, member.member_epoch))
        else:
            result.cancel(rebalance_key(gid, member.member_id))

    def _delay_first_assignment(self, gid: str, now: int, result: Result) -> None:
        """A new (or emptied) group's first target waits streams.initial.rebalance.delay.ms
        for more members to join (Kafka's scheduleIfAbsent: a delay running is not moved)."""
        delay = self.config.initial_delay_ms(gid)
        if delay > 0 and gid not in self._delayed:
            self._delayed.add(gid)
            result.schedule(initial_rebalance_key(gid), now + delay,
                            StreamsInitialRebalance(gid))

    def _assignment_delayed(self, group: StreamsGroup, now: int) -> str | None:
        """Why the group's new target is not computed now (Kafka's status detail), or None:
        at most one per streams.assignment.interval.ms (the next heartbeat after it computes
        it: Kafka has no timer for the interval either)."""
        interval = self.config.assignment_interval(group.group_id)
        last = group.assignment_timestamp
        if last == 0 or interval == 0 or now >= last + interval:
            return None
        return text.DELAYED_BY_INTERVAL

    def _initial_rebalance(self, event: StreamsInitialRebalance, now: int) -> Result:
        """The delay is over: the first target, members learning it on their next heartbeat
        (nothing if the group emptied, or has no topology, as Kafka)."""
        result = Result()
        gid = event.group_id
        self._delayed.discard(gid)
        group = self.groups.get(gid)
        if group is None or not group.members or group.group_epoch <= group.assignment_epoch:
            return result
        op = _Op(self.groups, now)
        try:
            configured, _ = self._configuration(group, self.topics)
        except RequestError as exc:
            log.warning("streams group %s: no delayed target assignment: %s", gid, exc.message)
            return result
        if configured is None:
            log.warning("streams group %s: no delayed target assignment: no topology", gid)
            return result
        if group.group_epoch <= max(1, group.assignment_epoch):
            # the members waited at the group's epoch (a lone member's, here, where Kafka's
            # first heartbeats bump twice): a target at that epoch would not reach them
            result.facts.append(StreamsEpochCause(gid, tr.Trigger(
                tr.OTHER, detail="the initial rebalance delay ended"), now))
            op.write([rec.epoch_record(gid, group.group_epoch + 1, group.metadata_hash,
                                       group.validated_topology_epoch)], result)
            group = self.groups[gid]
        op.write(self._target_records(group, configured, now), result)
        self._finish(op, gid, None, None, result)
        return result

    def _configuration(self, group: StreamsGroup, image) -> tuple[ConfiguredTopology | None, int]:
        """The group's topology configured against the topics, and the hash of what its topics
        look like: both depend on nothing else, so they are kept until the topology or the
        catalog (its version) changes, and a steady heartbeat does not work them out again."""
        version = None if image is None else image.version()
        known = self._configured.get(group.group_id)
        if version is not None and known is not None and known[0] is group.topology \
                and known[1] == version:
            return known[2], known[3]
        configured = self._configure(group, image)
        metadata_hash = _metadata_hash(group.topology, image)
        if version is not None:
            self._configured[group.group_id] = (group.topology, version, configured,
                                                metadata_hash)
        return configured, metadata_hash

    def _configure(self, group: StreamsGroup, image) -> ConfiguredTopology | None:
        if group.topology is None:
            return None
        try:
            return configure(group.topology, image)
        except InvalidTopology as exc:
            fail(ErrorCode.streams_invalid_topology, str(exc))

    def _target_records(self, group: StreamsGroup,
                        configured: ConfiguredTopology | None, now: int) -> list:
        """The new target of every member at the group epoch (nothing to run while the
        topology is not ready: every target empty)."""
        gid = group.group_id
        if configured is not None and configured.ready:
            specs = {m.member_id: MemberSpec(m.process_id, m.assigned,
                                             _offset_sums(m)) for m in group.members.values()}
            subtopologies = [SubtopologySpec(s.subtopology_id, s.partitions, s.stateful)
                             for s in configured.subtopologies.values()]
            targets = assign(specs, subtopologies, self.config.standby_replicas(gid))
        else:
            targets = {}
        records = [rec.target_record(gid, member_id, targets.get(member_id, EMPTY))
                   for member_id in sorted(group.members)
                   if group.target.get(member_id) != targets.get(member_id, EMPTY)]
        records.append(rec.target_epoch_record(gid, group.group_epoch, now))
        return records

    def _offsets_reported(self, group: StreamsGroup, member: StreamsMember,
                          q: StreamsHeartbeat) -> StreamsMember:
        """Changelog offsets: kept in memory only (Kafka writes no record of them)."""
        changes = {}
        if q.task_offsets is not None:
            changes["task_offsets"] = {(s, p): o for s, p, o in q.task_offsets}
        if q.task_end_offsets is not None:
            changes["task_end_offsets"] = {(s, p): o for s, p, o in q.task_end_offsets}
        member = member.replace(**changes)
        group.members[member.member_id] = member
        return member

    def _reply(self, group: StreamsGroup, member: StreamsMember, q: StreamsHeartbeat,
               configured: ConfiguredTopology | None, image, full: bool,
               delayed: str | None = None):
        gid = group.group_id
        status = []
        if configured is not None and configured.status is not None:
            code, detail = configured.status
            status.append((int(code), detail))
        if delayed is not None:
            status.append((int(Status.ASSIGNMENT_DELAYED), delayed))
        if group.topology is not None and member.topology_epoch < group.topology.epoch:
            status.append((int(Status.STALE_TOPOLOGY), text.STALE_TOPOLOGY.format(
                member.topology_epoch, group.topology.epoch)))
        tags = self.config.rack_tags(gid)
        if tags:
            held = {key for key, _ in member.client_tags}
            missing = [t for t in tags if t not in held]
            if missing:
                status.append((int(Status.MISSING_CLIENT_TAGS),
                               text.MISSING_CLIENT_TAGS.format(f"[{', '.join(missing)}]")))
        if gid in self._shutdown:
            status.append((int(Status.SHUTDOWN_APPLICATION),
                           text.SHUTDOWN_REQUESTED.format(member.member_id)))
        if q.api_version < 1:
            status = [s for s in status if s[0] != Status.MISSING_CLIENT_TAGS]
        endpoint_epoch = self._endpoint_epochs.get(gid, 0)
        endpoints = None
        if q.endpoint_information_epoch < endpoint_epoch and group.topology is not None:
            subtopologies = {s.subtopology_id: s for s in group.topology.subtopologies}
            found = [endpoint_partitions(m, subtopologies, image)
                     for _, m in sorted(group.members.items())]
            endpoints = tuple(EndpointAnswer(e.endpoint, e.active, e.standby)
                              for e in found if e is not None)
        assigned = member.assigned
        return StreamsHeartbeatReply(
            member_id=member.member_id, member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_ms(gid),
            acceptable_recovery_lag=self.config.recovery_lag(gid),
            task_offset_interval_ms=self.config.task_offset_interval(gid),
            status=tuple(status),
            active=assigned.active if full else None,
            standby=assigned.standby if full else None,
            warmup=assigned.warmup if full else None,
            endpoint_information_epoch=endpoint_epoch,
            partitions_by_user_endpoint=endpoints)

    # -- leaving and being removed --------------------------------------------------------------

    def _leave(self, op: _Op, q: StreamsHeartbeat, result: Result):
        gid = q.group_id
        group = self.groups.get(gid)
        if group is None:
            fail(ErrorCode.group_id_not_found, text.GROUP_NOT_FOUND.format(gid))
        reply = StreamsHeartbeatReply(member_id=q.member_id, member_epoch=q.member_epoch)
        if q.instance_id is None:
            member = group.members.get(q.member_id)
            if member is None:
                fail(ErrorCode.unknown_member_id,
                     f"Member {q.member_id} is not a member of group {gid}.")
        else:
            member = group.static_member(q.instance_id)
            if member is None:
                fail(ErrorCode.unknown_member_id, f"Instance id {q.instance_id} is unknown.")
            if member.member_id != q.member_id:
                fail(ErrorCode.fenced_instance_id,
                     f"Static member {q.member_id} with instance id {q.instance_id} was fenced "
                     f"by member {member.member_id}.")
            if q.member_epoch == STATIC_LEAVE_EPOCH:
                log.info("static member %s (instance %s) temporarily left streams group %s",
                         q.member_id, q.instance_id, gid)
                op.write([rec.current_record(gid, static_members.leave_temporarily(member))],
                         result)
                result.facts.append(StreamsAway(gid, q.member_id, q.instance_id, op.now))
                return reply
        log.info("member %s left streams group %s", q.member_id, gid)
        result.facts.append(StreamsEpochCause(
            gid, tr.Trigger(tr.MEMBER_LEFT, q.member_id, q.instance_id), op.now))
        self._remove(op, group, member.member_id, result)
        return reply

    def _remove(self, op: _Op, group: StreamsGroup, member_id: str, result: Result) -> None:
        gid = group.group_id
        op.write(rec.member_tombstones(gid, member_id), result)
        group = self.groups[gid]
        op.write([rec.epoch_record(gid, group.group_epoch + 1, group.metadata_hash,
                                   group.validated_topology_epoch)], result)
        result.cancel(session_key(gid, member_id))
        result.cancel(rebalance_key(gid, member_id))
        if not group.members:
            self._shutdown.discard(gid)

    def expire(self, event, now: int) -> Result:
        if isinstance(event, StreamsInitialRebalance):
            return self._initial_rebalance(event, now)
        result = Result()
        group = self.groups.get(event.group_id)
        member = None if group is None else group.members.get(event.member_id)
        if member is None:
            return result
        if isinstance(event, StreamsRebalanceDeadline):
            if member.state is not MemberState.UNREVOKED_TASKS \
                    or member.member_epoch != event.member_epoch:
                return result
            log.info("member %s of streams group %s fenced: it did not revoke its tasks within "
                     "its rebalance timeout (%d ms)", event.member_id, event.group_id,
                     member.rebalance_timeout_ms)
            trigger = tr.Trigger(tr.REBALANCE_TIMEOUT, member.member_id, member.instance_id,
                                 detail="its tasks not revoked within its rebalance timeout "
                                        f"({member.rebalance_timeout_ms} ms)")
        else:
            log.info("member %s of streams group %s fenced: its session expired",
                     event.member_id, event.group_id)
            trigger = tr.Trigger(tr.SESSION_EXPIRED, member.member_id, member.instance_id)
        result.facts.append(StreamsEpochCause(event.group_id, trigger, now))
        op = _Op(self.groups, now)
        self._remove(op, group, event.member_id, result)
        self._finish(op, event.group_id, None, None, result, (event.member_id,))
        return result

    def write_completed(self, step: StreamsWritten, error: ErrorCode | None, now: int) -> Result:
        return step.completed(error, self.groups, now, _retry_fencing,
                              lambda error: StreamsHeartbeatReply(error=error))

    def groups_loaded(self, group_ids, now: int) -> Result:
        """After replay: every member's session starts now (a static member that left with
        -2 too: it has one session timeout to come back)."""
        result = Result()
        for gid in group_ids:
            group = self.groups.get(gid)
            for member_id, member in ({} if group is None else group.members).items():
                result.schedule(session_key(gid, member_id),
                                now + self.config.session_ms(gid),
                                StreamsSessionDeadline(gid, member_id))
                if member.state is MemberState.UNREVOKED_TASKS:
                    self._arm_rebalance_deadline(gid, member, now, result)
        return result

    # -- records --------------------------------------------------------------------------------

    def own(self, record):
        return rec.as_streams_record(record)

    def replay(self, record, now: int = -1) -> None:
        replay(self.groups, record)

    # -- reading --------------------------------------------------------------------------------

    def state(self, group: StreamsGroup) -> str:
        ready = group.topology is not None and self.topics is not None \
            and _ready(group.topology, self.topics)
        return group.state(ready)

    def listed(self):
        return [GroupOverview(gid, self.name, "streams", self.state(g), len(g.members),
                              g.group_epoch, _work(g)) for gid, g in self.groups.items()]

    def describe_group(self, group_id: str) -> GroupDescription:
        return GroupDescription(group_id, ErrorCode.group_id_not_found, "Dead", "", "", (),
                                error_message=f"Group {group_id} is not a classic group.")

    def console_view(self, group_id: str):
        group = self.groups.get(group_id)
        if group is None:
            return None
        members = tuple(MemberView(
            m.member_id, m.instance_id, m.client_id, m.client_host,
            tuple((f"{role} {s}", tuple(sorted(ps)))
                  for role, tasks in (("active", m.assigned.active),
                                      ("standby", m.assigned.standby),
                                      ("warm-up", m.assigned.warmup))
                  for s, ps in sorted(tasks.items())),
            note=_member_note(m))
            for _, m in sorted(group.members.items()))
        return GroupView(self.state(group), "streams", group.group_epoch, members, _work(group))

    # -- what the shard asks about offsets and deletion -------------------------------------------

    def being_deleted(self, group_id: str) -> bool:
        return False   # its deletion is applied at once (and put back if unwritten)

    def subscribed_topics(self, group_id: str):
        group = self.groups.get(group_id)
        if group is None or not group.members or group.topology is None:
            return set()
        return {n for s in group.topology.subtopologies
                for n in (*s.source_topics, *(t.name for t in s.repartition_source_topics))}

    def validate_offset_commit(self, request, now: int, result: Result) -> ErrorCode | None:
        """As Kafka's StreamsGroup.validateOffsetCommit: the member at its epoch commits; an
        older epoch only for tasks it has held since then (their assignment epochs)."""
        group = self.groups[request.group_id]
        epoch = request.generation
        if epoch < 0 and not group.members:
            return None                      # an admin commit to an empty group
        member = group.members.get(request.member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if request.predates_member_epochs:
            return ErrorCode.unsupported_version
        if epoch == member.member_epoch:
            return None
        if epoch > member.member_epoch:
            return ErrorCode.stale_member_epoch
        for offset in request.offsets:
            since = [e for (s, p), e in member.active_epochs.items()
                     if p == offset.partition and offset.topic in self._sources(group, s)]
            if not since or epoch < min(since):
                return ErrorCode.stale_member_epoch
        return None

    @staticmethod
    def _sources(group: StreamsGroup, subtopology_id: str) -> set[str]:
        for s in group.topology.subtopologies if group.topology is not None else ():
            if s.subtopology_id == subtopology_id:
                return {*s.source_topics, *(t.name for t in s.repartition_source_topics)}
        return set()

    def validate_offset_fetch(self, group_id: str, member_id: str | None,
                              epoch: int) -> ErrorCode | None:
        if epoch < 0:
            return None
        member = self.groups[group_id].members.get(member_id or "")
        if member is None:
            return ErrorCode.unknown_member_id
        return None if epoch == member.member_epoch else ErrorCode.stale_member_epoch

    def validate_offset_delete(self, group_id: str) -> ErrorCode | None:
        return None

    def offset_expiry(self, group_id: str):
        return OffsetExpiry(kept=self.subscribed_topics(group_id))

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
        op.write(rec.group_tombstones(group_id), result)
        self._finish(op, group_id, None, None, result)
        self._endpoint_epochs.pop(group_id, None)
        # a group made again under this id starts a delay of its own, as Kafka cancels the
        # deleted group's timers
        self._delayed.discard(group_id)
        self._configured.pop(group_id, None)
        result.cancel(initial_rebalance_key(group_id))
        log.info("streams group %s deleted", group_id)
        return ()

    # -- StreamsGroupDescribe -----------------------------------------------------------------

    def describe(self, group_id: str) -> tuple[StreamsGroup, str] | None:
        """The group and its state, for StreamsGroupDescribe (None: no such group)."""
        group = self.groups.get(group_id)
        return None if group is None else (group, self.state(group))


def _work(group: StreamsGroup) -> tuple[tuple[str, int], ...]:
    """The tasks its members hold now, by role (the console and /metrics count them)."""
    counts = {"active": 0, "standby": 0, "warmup": 0}
    for m in group.members.values():
        for role in counts:
            counts[role] += sum(len(ps) for ps in getattr(m.assigned, role).values())
    return tuple(counts.items())


def _member_note(member: StreamsMember) -> str:
    """Its epoch and where it stands; a static member away with -2, and tasks it still has
    to revoke, said in words."""
    if member.left_temporarily:
        return f"away (left with epoch -2, was at epoch {member.previous_member_epoch})"
    note = f"epoch {member.member_epoch}, {member.state.name.lower().replace('_', ' ')}"
    pending = sum(len(ps) for role in ("active", "standby", "warmup")
                  for ps in getattr(member.pending_revocation, role).values())
    return note + (f", {pending} to revoke" if pending else "")


def _create_refused(configured: ConfiguredTopology, refused) -> ConfiguredTopology:
    """The topology's MISSING_INTERNAL_TOPICS status (which topics to create always gives it)
    with Kafka's note on those the member may not create."""
    note = f"Unauthorized to CREATE on topics {', '.join(refused)}."
    status = configured.status
    if status is not None and status[0] is Status.MISSING_INTERNAL_TOPICS:
        return replace(configured, status=(status[0], f"{status[1]}; {note}"))
    return replace(configured, status=(Status.MISSING_INTERNAL_TOPICS, note))


def _validate(q: StreamsHeartbeat) -> None:
    """StreamsGroupHeartbeat's request checks, in Kafka 4.4's order and words (its
    GroupCoordinatorService: the unsupported features first, then the request's shape)."""
    if q.topology is not None and any(s.source_topic_regex for s in q.topology.subtopologies):
        fail(ErrorCode.invalid_request,
             "Regular expressions for source topics are not supported yet.")
    for value, name in ((q.member_id, "MemberId"), (q.group_id, "GroupId"),
                        (q.instance_id, "InstanceId"), (q.rack_id, "RackId")):
        if value is not None and not value.strip():
            fail(ErrorCode.invalid_request, f"{name} can't be empty.")
    if q.member_epoch == JOIN_EPOCH:
        if q.rebalance_timeout_ms == -1:
            fail(ErrorCode.invalid_request,
                 "RebalanceTimeoutMs must be provided in first request.")
        for tasks, role in ((q.active, "ActiveTasks"), (q.standby, "StandbyTasks"),
                            (q.warmup, "WarmupTasks")):
            if tasks:
                fail(ErrorCode.invalid_request, f"{role} must be empty when (re-)joining.")
        if q.topology is None:
            fail(ErrorCode.invalid_request, "Topology must be non-null when (re-)joining.")
        for s in q.topology.subtopologies:
            for changelog in s.state_changelog_topics:
                if changelog.partitions != 0:
                    fail(ErrorCode.streams_invalid_topology,
                         f"Changelog topic {changelog.name} must have an undefined partition "
                         f"count, but it is set to {changelog.partitions}.")
    elif q.member_epoch == STATIC_LEAVE_EPOCH:
        if q.instance_id is None:
            fail(ErrorCode.invalid_request, "InstanceId can't be null.")
    elif q.member_epoch < STATIC_LEAVE_EPOCH:
        fail(ErrorCode.invalid_request, f"MemberEpoch is {q.member_epoch}, but must be greater "
                                        "than or equal to -2.")
    owned = (q.active, q.standby, q.warmup)
    if any(t is not None for t in owned) and any(t is None for t in owned):
        fail(ErrorCode.invalid_request, "If one task-type is non-null, all must be non-null.")
    if q.member_epoch != JOIN_EPOCH and q.topology is not None:
        fail(ErrorCode.invalid_request, "Topology can only be provided when (re-)joining.")


def _check_epoch(member: StreamsMember, q: StreamsHeartbeat) -> None:
    """Kafka's throwIfStreamsGroupMemberEpochIsInvalid."""
    epoch = q.member_epoch
    if epoch > member.member_epoch:
        fail(ErrorCode.fenced_member_epoch, text.GREATER_EPOCH.format(epoch, member.member_epoch))
    if epoch < member.member_epoch:
        owned = (q.active, q.standby, q.warmup)
        held = member.assigned
        subset = all(o is not None for o in owned) and all(
            ps <= have.get(s, frozenset())
            for o, have in zip(owned, (held.active, held.standby, held.warmup))
            for s, ps in o.items())
        if epoch != member.previous_member_epoch or not subset:
            fail(ErrorCode.fenced_member_epoch,
                 text.SMALLER_EPOCH.format(epoch, member.member_epoch))


def _active_elsewhere(group: StreamsGroup, task, member_id: str) -> bool:
    owner = None
    s, p = task
    for other in group.members.values():
        if other.member_id != member_id and (p in other.assigned.active.get(s, ())
                                             or p in other.pending_revocation.active.get(s, ())):
            owner = other
            break
    return owner is not None


def _offset_sums(member: StreamsMember) -> dict:
    return dict(member.task_offsets)


def _ready(topology: Topology, image) -> bool:
    try:
        return configure(topology, image).ready
    except InvalidTopology:
        return False


def _metadata_hash(topology: Topology | None, image) -> int:
    """What the topics the topology names look like (name and partition count), as a signed
    64-bit number: a change bumps the group epoch (Kafka only compares its own hash too)."""
    if topology is None:
        return 0
    digest = hashlib.blake2b(digest_size=8)
    for name in required_topics(topology):
        found = image.lookup(name)
        digest.update(f"{name}:{-1 if found is None else found[1]};".encode())
    return int.from_bytes(digest.digest(), "big", signed=True)


__all__ = ["InternalTopicsWanted", "StreamsCoordinator", "StreamsSessionDeadline",
           "StreamsWritten", "task_ids"]
