"""The consumer group coordinator (KIP-848): ConsumerGroupHeartbeat, ConsumerGroupDescribe,
session and rebalance timeouts, and loading from records.

Each operation takes `now` (and the topic catalog it needs) and returns a Result, like the
classic coordinator. An operation decides, builds the records of its change, and applies them
through replay() (the function a restart uses); its reply waits for the records to be written
(a continuation releases it), and if they cannot be, the group goes back to what it was.

What a heartbeat does (Kafka's GroupMetadataManager.consumerGroupHeartbeat):
1. validate the request; find or create the group, find or create the member (static rules);
2. update the member; a changed subscription, or a change in the subscribed topics' metadata,
   bumps the group epoch;
3. group epoch > target assignment epoch: compute a new target assignment (sticky assignor);
4. move the member's current assignment towards its target (reconcile.py);
5. move its session deadline; answer with its epoch and, when it changed or the request was a
   full one, its assignment.

Sessions are kept as the classic groups keep them (coordinator/sessions.py): a deadline per
member and one timer per group, armed for the earliest; a heartbeat moves its member's deadline
later and sets no timer. A steady heartbeat (a member at its epoch with nothing to change,
nothing to reconcile, no new target) is answered by steady_heartbeat() without building an
operation at all: the edge tries it first, as it does the classic heartbeat.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from roster.coordinator.consumer import classic_members, migration, offset_rules
from roster.coordinator.consumer import records as rec
from roster.coordinator.consumer.assignors import ASSIGNORS, DEFAULT_ASSIGNOR, MemberSpec
from roster.coordinator.consumer.messages import (
    DescribedGroup,
    DescribedMember,
    HeartbeatReply,
    HeartbeatRequest,
)
from roster.coordinator.consumer.model import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    TopicImage,
)
from roster.coordinator.consumer.reconcile import is_subset, reconcile
from roster.coordinator.consumer.replay import replay
from roster.coordinator.results import Result
from roster.observability import events as ev
from roster.observability.consumer_recorder import ConsumerRecorder
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinator")

try:  # RE2 syntax, as Kafka (RE2/J) reads SubscribedTopicRegex
    import re2 as _regex
except ImportError:  # pragma: no cover - google-re2 is a dependency
    import re as _regex


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    session_timeout_ms: int = 45_000        # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5_000      # group.consumer.heartbeat.interval.ms
    max_size: int = 2**31 - 1               # group.consumer.max.size
    assignors: tuple[str, ...] = ("uniform", "range")   # group.consumer.assignors
    migration_policy: str = migration.DEFAULT_POLICY    # group.consumer.migration.policy
    # group configs: group id -> {"consumer.session.timeout.ms": ms,
    # "consumer.heartbeat.interval.ms": ms} (the edge keeps it; read at each use)
    group_overrides: dict = field(default_factory=dict)

    @classmethod
    def from_broker(cls, config, group_overrides: dict | None = None) -> ConsumerConfig:
        names = []
        for entry in str(config["group.consumer.assignors"]).split(","):
            name = entry.strip().rsplit(".", 1)[-1]   # Kafka's class names work too
            name = {"UniformAssignor": "uniform", "RangeAssignor": "range"}.get(name, name)
            if name:
                names.append(name)
        return cls(session_timeout_ms=config["group.consumer.session.timeout.ms"],
                   heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
                   max_size=config["group.consumer.max.size"],
                   assignors=tuple(n for n in names if n in ASSIGNORS) or ("uniform", "range"),
                   migration_policy=migration.parse_policy(
                       config["group.consumer.migration.policy"]),
                   group_overrides=group_overrides if group_overrides is not None else {})

    def session_ms(self, group_id: str) -> int:
        return self.group_overrides.get(group_id, {}).get("consumer.session.timeout.ms",
                                                          self.session_timeout_ms)

    def heartbeat_ms(self, group_id: str) -> int:
        return self.group_overrides.get(group_id, {}).get("consumer.heartbeat.interval.ms",
                                                          self.heartbeat_interval_ms)


# -- timers and continuations ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ConsumerSessionDeadline:
    """The group's session timer: the earliest member deadline has come."""

    group_id: str
    consumer = True


@dataclass(frozen=True, slots=True)
class ConsumerRebalanceDeadline:
    group_id: str
    member_id: str
    member_epoch: int
    consumer = True


@dataclass(frozen=True, slots=True)
class ConsumerWritten:
    """Release `reply` to `token` once the records are written; if they are not, put the
    group back as it was and answer `error` instead."""

    group_id: str
    token: object
    reply: object
    undo: tuple = ()                   # how to put the group back (ConsumerCoordinator._undo)
    fenced: tuple[str, ...] = ()       # the members removed: a session again if unwritten
    consumer = True


TIMER_RETRY_MS = 500


def session_key(group_id: str) -> str:
    return f"consumer-sessions:{group_id}"


def rebalance_key(group_id: str, member_id: str) -> str:
    return f"consumer-rebalance:{group_id}:{member_id}"


class RequestError(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def _fail(error: ErrorCode, message: str | None = None):
    raise RequestError(error, message)


def _pairs(a: Assignment) -> tuple[tuple[bytes, tuple[int, ...]], ...]:
    return tuple((t, tuple(sorted(ps))) for t, ps in sorted(a.items()))


class ConsumerCoordinator:
    _undo_log: list | None = None
    _now: int = 0

    name = "consumer"
    # the timer events and continuations it schedules (the shard hands them back here)
    steps = (ConsumerSessionDeadline, ConsumerRebalanceDeadline, ConsumerWritten,
             *classic_members.DEADLINES)

    def __init__(self, config: ConsumerConfig | None = None,
                 new_member_id: Callable[[], str] | None = None,
                 classic=None) -> None:
        self.config = config or ConsumerConfig()
        self.groups: dict[str, ConsumerGroup] = {}
        self._new_member_id = new_member_id
        # the classic coordinator beside it (coordinator/coordinator.py): a classic group with
        # members keeps its id from consumer members unless an online upgrade takes it over
        # (migration.py), and a memberless one gives way; None: no classic groups
        self.classic = classic
        self.recorder = ConsumerRecorder()  # flight recorder (docs/observability.md)

    # -- records ------------------------------------------------------------------------------

    def replay(self, record: rec.ConsumerRecord, now: int = -1) -> None:
        replay(self.groups, record, now)

    def _write(self, records: list, result: Result, now: int) -> None:
        """Apply records through replay(), noting first how to undo each (put back if they
        cannot be written): an undo log, so an operation costs what it changes."""
        undo = self._undo_log
        for record in records:
            if undo is not None:
                undo.append(self._inverse(record))
            replay(self.groups, record, now)
            group = self.groups.get(record.key.group)
            if group is not None:
                group.steady_version = None   # changed: the next heartbeat looks again
        result.records.extend(records)

    def _inverse(self, record) -> tuple:
        key = record.key
        group = self.groups.get(key.group)
        if group is None:
            return ("absent", key.group)
        t = key.type
        if t == rec.GROUP_METADATA:
            return ("group", key.group, group, group.group_epoch)
        if t == rec.PARTITION_METADATA:
            return ("metadata", key.group, group.subscription_metadata)
        if t in (rec.MEMBER_METADATA, rec.CURRENT_ASSIGNMENT):
            return ("member", key.group, key.member, group.members.get(key.member),
                    group.session_deadlines.get(key.member))
        if t == rec.TARGET_METADATA:
            return ("target_epoch", key.group, group.assignment_epoch)
        if t == rec.TARGET_MEMBER:
            return ("target", key.group, key.member, group.target.get(key.member))
        if t == rec.REGULAR_EXPRESSION:
            return ("regex", key.group, key.regex, group.resolved_regex.get(key.regex))
        return ("none", key.group)

    def _undo(self, undo) -> None:
        for entry in reversed(undo):
            kind, group_id = entry[0], entry[1]
            if kind == "classic":   # the classic group before a conversion (migration.py)
                if entry[2] is None:
                    self.classic.groups.pop(group_id, None)
                else:
                    self.classic.groups[group_id] = entry[2]
                continue
            if kind == "absent":
                self.groups.pop(group_id, None)
                continue
            if kind == "group":
                group = self.groups[group_id] = entry[2]
                group.group_epoch = entry[3]
                continue
            group = self.groups.get(group_id)
            if group is None:
                continue
            if kind == "metadata":
                group.subscription_metadata = entry[2]
            elif kind == "member":
                if entry[3] is None:
                    group.remove_member(entry[2])
                else:
                    group.put_member(entry[3])
                    if entry[4] is not None:   # removing it took its session deadline
                        group.session_deadlines[entry[2]] = entry[4]
                group.subscribed_cache = group.regex_cache = None
            elif kind == "target_epoch":
                group.assignment_epoch = entry[2]
            elif kind == "target":
                if entry[3] is None:
                    group.target.pop(entry[2], None)
                else:
                    group.target[entry[2]] = entry[3]
            elif kind == "regex":
                if entry[3] is None:
                    group.resolved_regex.pop(entry[2], None)
                else:
                    group.resolved_regex[entry[2]] = entry[3]
                group.subscribed_cache = None
                group.regex_version = None    # resolve again: the catalog may differ now

    def _release_after_write(self, group_id: str, token, reply, result: Result,
                             now: int) -> None:
        """Answer `reply` to `token` at once when nothing was written, else once the records
        are (and undo them if they cannot be)."""
        if result.records:
            self.recorder.observe(group_id, self.groups.get(group_id), now, result)
            result.after_write.append(ConsumerWritten(group_id, token, reply,
                                                      tuple(self._undo_log), self._fenced))
        else:
            result.reply(token, reply)

    def _begin(self) -> None:
        self._undo_log = []
        self._fenced: tuple[str, ...] = ()   # the members this operation removes

    def _abandon(self, result: Result) -> None:
        """The operation is refused: the group as it was before it, nothing to write."""
        self._undo(self._undo_log)
        self.recorder.forget_operation()
        result.records.clear()

    # -- ConsumerGroupHeartbeat ---------------------------------------------------------------

    def heartbeat(self, request: HeartbeatRequest, image: TopicImage, now: int) -> Result:
        result = Result()
        version = getattr(image, "version", None)
        version = version() if callable(version) else None
        self._begin()
        try:
            self._validate(request)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                reply = self._leave(request, result, now)
            else:
                reply = self._heartbeat(request, image, result, now)
        except RequestError as exc:
            self._abandon(result)
            result.reply(request.token, HeartbeatReply(error=exc.error,
                                                       error_message=exc.message))
            return result
        self._release_after_write(request.group_id, request.token, reply, result, now)
        if not result.records:
            group = self.groups.get(request.group_id)
            if group is not None and request.member_epoch >= 0:
                group.steady_version = version   # nothing to change as of this catalog
        return result

    def steady_heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                         client_id: str, client_host: str, catalog_version: object,
                         now: int, instance_id: str | None = None) -> ConsumerMember | None:
        """A heartbeat with every optional field null but the instance id (what members send
        between changes), answered only if heartbeat() would change nothing but the member's
        session: the member, at `member_epoch`, reconciled to a target that is current, its
        client id, host and instance id (if sent) as recorded, and the group found unchanged by
        a heartbeat at this catalog version. Returns the member (its session moved: the answer
        is its member id and epoch, no assignment), or None: then heartbeat() decides, as for
        any other request."""
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
                or group.session_timer_ms is None):
            return None
        if instance_id is not None and (member.instance_id != instance_id or
                                        group.static_members.get(instance_id) != member_id):
            return None
        # later than the armed timer's deadline (it is the earliest): no timer work
        group.session_deadlines[member_id] = now + self.config.session_ms(group_id)
        return member

    def _validate(self, q: HeartbeatRequest) -> None:
        if not q.group_id.strip():
            _fail(ErrorCode.invalid_request, "GroupId can't be empty.")
        if q.instance_id is not None and not q.instance_id.strip():
            _fail(ErrorCode.invalid_request, "InstanceId can't be empty.")
        if q.rack_id is not None and not q.rack_id.strip():
            _fail(ErrorCode.invalid_request, "RackId can't be empty.")
        if q.api_version >= 1 or q.member_epoch != 0:
            if not q.member_id.strip():
                _fail(ErrorCode.invalid_request, "MemberId can't be empty.")
        if q.member_epoch == 0:
            if q.rebalance_timeout_ms == -1:
                _fail(ErrorCode.invalid_request,
                      "RebalanceTimeoutMs must be provided in first request.")
            if q.owned is None or any(ps for _, ps in q.owned):
                _fail(ErrorCode.invalid_request, "TopicPartitions must be empty when (re-)joining.")
            # null, not empty: a join may subscribe to an empty list (Kafka's check and words)
            if q.subscribed_topic_names is None and q.subscribed_topic_regex is None:
                _fail(ErrorCode.invalid_request, "Either SubscribedTopicNames or "
                      "SubscribedTopicRegex must be non-null when (re-)joining.")
        elif q.member_epoch == STATIC_LEAVE_EPOCH:
            if q.instance_id is None:
                _fail(ErrorCode.invalid_request, "InstanceId can't be null.")
        elif q.member_epoch < STATIC_LEAVE_EPOCH:
            _fail(ErrorCode.invalid_request, "MemberEpoch is invalid.")
        if q.server_assignor is not None and q.server_assignor not in self.config.assignors:
            _fail(ErrorCode.unsupported_assignor,
                  f"ServerAssignor {q.server_assignor} is not supported. Supported assignors: "
                  f"{', '.join(self.config.assignors)}.")
        if q.subscribed_topic_regex:
            try:
                _regex.compile(q.subscribed_topic_regex)
            except Exception:
                _fail(ErrorCode.invalid_regular_expression,
                      f"SubscribedTopicRegex `{q.subscribed_topic_regex}` is not a valid regular "
                      "expression.")

    def _classic_busy(self, group_id: str) -> bool:
        """Whether a classic group of this id has members (then it is not a consumer group)."""
        classic = None if self.classic is None else self.classic.groups.get(group_id)
        return classic is not None and bool(classic.members)

    def _group(self, group_id: str, create: bool, now: int) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if self._classic_busy(group_id):
            _fail(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group")
        if not create:
            _fail(ErrorCode.group_id_not_found, f"Consumer group {group_id} not found.")
        if self.classic is not None and group_id in self.classic.groups:
            # a memberless (simple) classic group gives way, as Kafka converts it; its
            # offsets stay (kept by group id in the shard's OffsetStore)
            self._undo_log.append(("classic", group_id, self.classic.groups.pop(group_id)))
        # not stored until its first record is replayed
        return ConsumerGroup(group_id, created_ms=now)

    def _upgrade(self, group_id: str, image: TopicImage, result: Result, now: int) -> None:
        """A consumer member joins a classic group with members: it becomes a consumer group
        if it may (migration.py), else GROUP_ID_NOT_FOUND as before."""
        classic = None if self.classic is None else self.classic.groups.get(group_id)
        if classic is None:
            _fail(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group")
        try:
            tombstone, records = migration.upgrade_records(
                classic, self.config.migration_policy, self.config.max_size, image)
        except migration.UpgradeRefused as refused:
            log.info("%s", refused)
            _fail(ErrorCode.group_id_not_found, str(refused))
        log.info("classic group %s (generation %d, %d members) becomes a consumer group",
                 group_id, classic.generation, len(classic.members))
        self._undo_log.append(("classic", group_id, classic))
        migration.retire_classic(classic, result)
        del self.classic.groups[group_id]
        result.records.append(tombstone)     # the classic coordinator's record, not replayed here
        self._write(records, result, now)
        group = self.groups[group_id]
        for member in group.members.values():
            self._heard_from(group, member.member_id, now, result,
                             member.classic.session_timeout_ms)

    def _heartbeat(self, q: HeartbeatRequest, image: TopicImage, result: Result,
                   now: int) -> HeartbeatReply:
        joining = q.member_epoch == 0
        if joining and q.group_id not in self.groups and self._classic_busy(q.group_id):
            self._upgrade(q.group_id, image, result, now)
        group = self._group(q.group_id, joining, now)
        member_id = q.member_id or (self._new_member_id() if self._new_member_id else "")
        if len(group.members) >= self.config.max_size and member_id not in group.members:
            _fail(ErrorCode.group_max_size_reached, "The consumer group has reached its maximum "
                  f"capacity of {self.config.max_size} members.")
        records: list = []
        is_new = member_id not in group.members
        if q.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    _fail(ErrorCode.unknown_member_id,
                          f"Member {member_id} is not a member of group {q.group_id}.")
                member = ConsumerMember(member_id)
                log.info("member %s joins consumer group %s", member_id, q.group_id)
            else:
                self._check_epoch(member, q)
        else:
            member = self._static_member(group, member_id, q, records)
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
        if q.subscribed_topic_names is not None \
                and tuple(q.subscribed_topic_names) != member.subscribed_topic_names:
            changes["subscribed_topic_names"] = tuple(q.subscribed_topic_names)
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
        member = self._converge(q.group_id, updated, records, bump, is_new, q.instance_id,
                                q.owned, image, result, now)
        group = self.groups[q.group_id]
        self._heard_from(group, member.member_id, now, result)
        full = joining or (q.rebalance_timeout_ms != -1 and q.subscribed_topic_names is not None
                           and q.owned is not None)
        changed = member.assigned != before_assigned
        return HeartbeatReply(
            member_id=member.member_id, member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_ms(q.group_id),
            assignment=_pairs(member.assigned) if full or changed else None)

    def _converge(self, group_id: str, updated: ConsumerMember, records: list,
                  subscription_changed: bool, is_new: bool, instance_id: str | None, owned,
                  image: TopicImage, result: Result, now: int) -> ConsumerMember:
        """Write the member's change (`records`), then move the group on as any member's
        request does: the subscribed topics' metadata, the group epoch, a new target
        assignment, and this member's reconciliation towards its target given what it reports
        it owns. Shared by ConsumerGroupHeartbeat and a classic member's JoinGroup
        (classic_members.py)."""
        bump = subscription_changed
        # apply the member change now so that the group's view includes it
        self._write(records, result, now)
        group = self.groups[group_id]
        records = []
        # the topics the group subscribes to, and their metadata
        self._now = now
        self._write(self._resolve_regexes(group, image), result, now)
        metadata = self._metadata(group, image)
        if metadata != group.subscription_metadata:
            records.append(rec.subscription_metadata_record(group_id, metadata))
            bump = True
        if bump:
            if is_new:
                kind = ev.STATIC_MEMBER_JOINED if instance_id else ev.MEMBER_JOINED
            else:
                kind = ev.SUBSCRIPTION_CHANGED if subscription_changed else ev.METADATA_CHANGED
            self.recorder.cause(group_id, ev.Trigger(kind, updated.member_id, instance_id),
                                now)
            records.append(rec.epoch_record(group_id, group.group_epoch + 1))
            log.info("consumer group %s: epoch %d", group_id, group.group_epoch + 1)
        self._write(records, result, now)
        if group.group_epoch > group.assignment_epoch:
            self._new_target(group, result, now)
        member = group.members[updated.member_id]
        target = group.target.get(member.member_id, {})
        if not member.reconciled_to(group.assignment_epoch):
            before = member
            member = reconcile(member, group.assignment_epoch, target, group.partition_epoch,
                               owned)
            if member != before:
                self._write([rec.current_record(group_id, member)], result, now)
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

    def _check_epoch(self, member: ConsumerMember, q: HeartbeatRequest) -> None:
        epoch = q.member_epoch
        if epoch > member.member_epoch:
            _fail(ErrorCode.fenced_member_epoch,
                  f"The consumer group member has a greater member epoch ({epoch}) than the "
                  f"one known by the group coordinator ({member.member_epoch}). The member "
                  "must abandon all its partitions and rejoin.")
        if epoch < member.member_epoch and (epoch != member.previous_member_epoch
                                            or not is_subset(q.owned, member.assigned)):
            _fail(ErrorCode.fenced_member_epoch,
                  f"The consumer group member has a smaller member epoch ({epoch}) than the "
                  f"one known by the group coordinator ({member.member_epoch}). The member "
                  "must abandon all its partitions and rejoin.")

    def _static_member(self, group: ConsumerGroup, member_id: str, q: HeartbeatRequest,
                       records: list) -> ConsumerMember:
        existing = group.static_member(q.instance_id)
        if q.member_epoch == 0:
            if existing is None:
                if member_id in group.members:  # a dynamic member cannot turn static
                    self._check_epoch(group.members[member_id], q)
                    return group.members[member_id]
                log.info("static member %s (instance %s) joins consumer group %s", member_id,
                         q.instance_id, q.group_id)
                return ConsumerMember(member_id, instance_id=q.instance_id)
            # a classic member's instance id is taken over at once (the online upgrade's
            # restart: Kafka's getOrMaybeSubscribeStaticConsumerGroupMember)
            if existing.member_epoch != STATIC_LEAVE_EPOCH and existing.classic is None:
                _fail(ErrorCode.unreleased_instance_id,
                      f"Static member {member_id} with instance id {q.instance_id} cannot join "
                      f"the group because the instance id is owned by {existing.member_id} "
                      "member.")
            new = classic_members.replace_static_member(group, existing, member_id, records)
            gid = group.group_id
            log.info("static member %s (instance %s) rejoins consumer group %s, replacing %s",
                     member_id, q.instance_id, gid, existing.member_id)
            self.recorder.saved(gid, q.instance_id, member_id, existing.member_id)
            return new
        if existing is None:
            _fail(ErrorCode.unknown_member_id, f"Instance id {q.instance_id} is unknown.")
        if existing.member_id != member_id:
            _fail(ErrorCode.fenced_instance_id,
                  f"Static member {member_id} with instance id {q.instance_id} was fenced by "
                  f"member {existing.member_id}.")
        self._check_epoch(existing, q)
        return existing

    # -- topics -------------------------------------------------------------------------------

    def _resolve_regexes(self, group: ConsumerGroup, image: TopicImage) -> list:
        """Records for what the members' regexes resolve to now (type 16), and tombstones for
        regexes no member uses any more."""
        version = getattr(image, "version", None)
        version = version() if callable(version) else None
        regexes = group.regexes()
        if not regexes and not group.resolved_regex:
            return []
        if version is not None and version == group.regex_version \
                and regexes == set(group.resolved_regex):
            return []
        names = list(image.names())
        records = []
        for regex in sorted(regexes):
            try:
                pattern = _regex.compile(regex)
            except Exception:
                resolved = frozenset()
            else:
                resolved = frozenset(n for n in names if pattern.fullmatch(n))
            if group.resolved_regex.get(regex) != resolved:
                records.append(rec.regex_record(group.group_id, regex, resolved, self._now))
        records += [rec.regex_tombstone(group.group_id, regex)
                    for regex in sorted(set(group.resolved_regex) - regexes)]
        group.regex_version = version
        return records

    def _metadata(self, group: ConsumerGroup, image: TopicImage) -> dict[str, tuple[bytes, int]]:
        metadata = {}
        for name in group.subscribed_names():
            found = image.lookup(name)
            if found is not None and found[1] > 0:
                metadata[name] = found
        return metadata

    def _assignor_name(self, group: ConsumerGroup) -> str:
        counts = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
        if not counts:
            return self.config.assignors[0] if self.config.assignors else DEFAULT_ASSIGNOR
        best = max(counts.values())
        return min(name for name, c in counts.items() if c == best)

    def _new_target(self, group: ConsumerGroup, result: Result, now: int) -> None:
        metadata = group.subscription_metadata
        partitions = dict(metadata.values())
        specs = {}
        for member in group.members.values():
            ids = frozenset(metadata[n][0] for n in group.member_topics(member) if n in metadata)
            specs[member.member_id] = MemberSpec(ids, group.target.get(member.member_id, {}),
                                                 member.instance_id, member.rack_id)
        plan = ASSIGNORS[self._assignor_name(group)](specs, partitions)
        epoch = group.group_epoch
        records = [rec.target_record(group.group_id, m, a) for m, a in sorted(plan.items())
                   if group.target.get(m) != a]
        records.append(rec.target_epoch_record(group.group_id, epoch))
        self._write(records, result, now)

    # -- leaving and being removed ------------------------------------------------------------

    def _leave(self, q: HeartbeatRequest, result: Result, now: int) -> HeartbeatReply:
        group = self._group(q.group_id, False, now)
        reply = HeartbeatReply(member_id=q.member_id, member_epoch=q.member_epoch)
        if q.instance_id is None:
            member = group.members.get(q.member_id)
            if member is None:
                _fail(ErrorCode.unknown_member_id,
                      f"Member {q.member_id} is not a member of group {q.group_id}.")
            log.info("member %s left consumer group %s", q.member_id, q.group_id)
            self.recorder.cause(q.group_id, ev.Trigger(ev.MEMBER_LEFT, q.member_id), now)
            self._fence(group, member, result, now)
            return reply
        member = group.static_member(q.instance_id)
        if member is None:
            _fail(ErrorCode.unknown_member_id, f"Instance id {q.instance_id} is unknown.")
        if member.member_id != q.member_id:
            _fail(ErrorCode.fenced_instance_id,
                  f"Static member {q.member_id} with instance id {q.instance_id} was fenced by "
                  f"member {member.member_id}.")
        if q.member_epoch == STATIC_LEAVE_EPOCH:
            log.info("static member %s (instance %s) temporarily left consumer group %s",
                     q.member_id, q.instance_id, q.group_id)
            leaving = member.replace(member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
            self._write([rec.current_record(q.group_id, leaving)], result, now)
            return reply
        log.info("static member %s (instance %s) left consumer group %s", q.member_id,
                 q.instance_id, q.group_id)
        self.recorder.cause(q.group_id, ev.Trigger(ev.MEMBER_LEFT, q.member_id, q.instance_id),
                            now)
        self._fence(group, member, result, now)
        return reply

    def _fence(self, group: ConsumerGroup, member: ConsumerMember, result: Result,
               now: int) -> None:
        gid = group.group_id
        if migration.downgrades(self, group, member):   # its last consumer-protocol member
            migration.downgrade(self, group, member, result, now)
            result.cancel(rebalance_key(gid, member.member_id))
            self._fenced += (member.member_id,)
            return
        records = [rec.current_tombstone(gid, member.member_id),
                   rec.target_tombstone(gid, member.member_id),
                   rec.member_tombstone(gid, member.member_id)]
        self._write(records, result, now)
        group = self.groups[gid]
        # regexes nobody subscribes with any more
        self._write([rec.regex_tombstone(gid, regex)
                     for regex in sorted(set(group.resolved_regex) - group.regexes())],
                    result, now)
        metadata = self._metadata_without_image(group)
        records = []
        if metadata != group.subscription_metadata:
            records.append(rec.subscription_metadata_record(gid, metadata))
        records.append(rec.epoch_record(gid, group.group_epoch + 1))
        self._write(records, result, now)
        # its session deadline went with it (ConsumerGroup.remove_member)
        result.cancel(rebalance_key(gid, member.member_id))
        self._fenced += (member.member_id,)

    def _metadata_without_image(self, group: ConsumerGroup) -> dict[str, tuple[bytes, int]]:
        names = group.subscribed_names()
        return {n: v for n, v in group.subscription_metadata.items() if n in names}

    # -- sessions -------------------------------------------------------------------------------

    def _heard_from(self, group: ConsumerGroup, member_id: str, now: int, result: Result,
                    timeout_ms: int | None = None) -> None:
        """The member's session ends one session timeout (or `timeout_ms`) from now; the
        group's timer is armed only when this is earlier than what it is armed for."""
        deadline = now + (self.config.session_ms(group.group_id) if timeout_ms is None
                          else timeout_ms)
        group.session_deadlines[member_id] = deadline
        armed = group.session_timer_ms
        if armed is None or deadline < armed:
            self._arm(group, deadline, result)

    def _arm(self, group: ConsumerGroup, deadline: int, result: Result) -> None:
        group.session_timer_ms = deadline
        result.schedule(session_key(group.group_id), deadline,
                        ConsumerSessionDeadline(group.group_id))

    def _lapsed(self, group: ConsumerGroup, now: int) -> ConsumerMember | None:
        """The group's timer fired: the member whose session ended first, if one has by
        `now` (its deadline cleared), and the timer marked unarmed: the caller arms it again
        for the earliest deadline left (_rearm; at once if another has ended too: each
        fencing is an operation of its own)."""
        group.session_timer_ms = None
        deadlines = group.session_deadlines
        lapsed = None
        for member_id, deadline in deadlines.items():
            if deadline <= now and (lapsed is None or deadline < deadlines[lapsed]):
                lapsed = member_id
        member = None
        if lapsed is not None:
            del deadlines[lapsed]
            member = group.members.get(lapsed)
        return member

    def _rearm(self, group: ConsumerGroup, result: Result) -> None:
        if group.session_deadlines and group.session_timer_ms is None:
            self._arm(group, min(group.session_deadlines.values()), result)

    def expire(self, event, now: int) -> Result:
        result = Result()
        group = self.groups.get(event.group_id)
        if group is None:
            return result
        if isinstance(event, ConsumerSessionDeadline):
            member = self._lapsed(group, now)
            if member is None:
                self._rearm(group, result)
                return result
            log.info("member %s of consumer group %s fenced: its session expired",
                     member.member_id, group.group_id)
            kind = ev.SESSION_EXPIRED
        elif isinstance(event, classic_members.DEADLINES):
            member = classic_members.deadline_passed(self, group, event)
            if member is None:
                return result
            kind = ev.REBALANCE_TIMEOUT
        else:
            member = group.members.get(event.member_id)
            if member is None or member.member_epoch != event.member_epoch \
                    or member.state is not MemberState.UNREVOKED_PARTITIONS:
                return result
            log.info("member %s of consumer group %s fenced: it did not revoke its partitions "
                     "within its rebalance timeout (%d ms)", member.member_id, group.group_id,
                     member.rebalance_timeout_ms)
            kind = ev.REBALANCE_TIMEOUT
        self._begin()
        self.recorder.cause(group.group_id, ev.Trigger(kind, member.member_id,
                                                       member.instance_id), now)
        self._fence(group, member, result, now)
        self._rearm(group, result)
        self.recorder.observe(group.group_id, self.groups.get(group.group_id), now, result)
        result.after_write.append(ConsumerWritten(group.group_id, None, None,
                                                  tuple(self._undo_log), self._fenced))
        return result

    def write_completed(self, step: ConsumerWritten, error: ErrorCode | None,
                        now: int) -> Result:
        result = Result()
        if error is None:
            if step.token is not None:
                result.reply(step.token, step.reply)
            return result
        self._undo(step.undo)
        group = self.groups.get(step.group_id)
        if group is not None:
            self._rearm(group, result)   # a deadline put back may need the group's timer
            # still members: a timeout's fencing is tried again shortly (Kafka's timers retry
            # a failed operation after a backoff); after a leave that failed (a classic
            # LeaveGroup may remove several), their sessions run out as if it never came
            for member_id in step.fenced:
                member = group.members.get(member_id)
                if member is not None:
                    delay = TIMER_RETRY_MS if step.token is None \
                        else classic_members.session_ms(member)
                    self._heard_from(group, member_id, now, result, delay)
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
                self._heard_from(group, member.member_id, now, result,
                                 classic_members.session_ms(member))
                self._arm_rebalance_deadline(group_id, member, now, result)
        return result

    # -- what the shard asks of a group type (coordinator/group_type.py) ------------------------

    def has_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def group_ids(self) -> list[str]:
        return list(self.groups)

    def is_empty(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is None or not group.members

    def being_deleted(self, group_id: str) -> bool:
        return False   # its deletion is applied at once (and undone if unwritten)

    def subscribed_topics(self, group_id: str):
        group = self.groups.get(group_id)
        return set() if group is None or not group.members else group.subscribed_names()

    def validate_offset_commit(self, request, now: int, result: Result) -> ErrorCode | None:
        return offset_rules.validate_commit(self.groups[request.group_id], request.member_id,
                                            request.generation, request.api_version)

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
        self._begin()
        self._write([rec.target_epoch_tombstone(group_id),
                     rec.subscription_metadata_tombstone(group_id),
                     rec.group_tombstone(group_id)], result, now)
        result.after_write.append(ConsumerWritten(group_id, None, None, tuple(self._undo_log)))
        log.info("consumer group %s deleted", group_id)
        self.recorder.deleted(group_id, group.group_epoch, now, result)
        return ()

    def replays(self, record) -> bool:
        return isinstance(record, rec.ConsumerRecord)

    # -- reading --------------------------------------------------------------------------------

    def describe(self, group_ids, image: TopicImage) -> list[DescribedGroup]:
        out = []
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is None:
                classic = self.classic is not None and group_id in self.classic.groups
                out.append(DescribedGroup(group_id, ErrorCode.group_id_not_found,
                                          f"Group {group_id} is not a consumer group." if classic
                                          else f"Group {group_id} not found."))
                continue
            members = tuple(DescribedMember(
                m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id,
                m.client_host, m.subscribed_topic_names, m.subscribed_topic_regex,
                _pairs(m.assigned), _pairs(group.target.get(m.member_id, {})),
                member_type=1 if m.classic is None else 0)   # 0: classic (an upgrade)
                for m in group.members.values())
            out.append(DescribedGroup(group_id, state=group.state(),
                                      group_epoch=group.group_epoch,
                                      assignment_epoch=group.assignment_epoch,
                                      assignor_name=self._assignor_name(group),
                                      members=members))
        return out

    # -- classic members inside consumer groups (classic_members.py) -----------------------------

    def serves_classic(self, group_id: str) -> bool:
        """Whether JoinGroup/SyncGroup/Heartbeat/LeaveGroup for this group id are this
        coordinator's: it is a consumer group with members."""
        return classic_members.serves(self, group_id)

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

    def list_groups(self, states: set[str] | None = None, types: set[str] | None = None):
        """(group id, state) of the consumer groups matching the lower-cased filters."""
        if types and "consumer" not in types:
            return []
        out = []
        for group in self.groups.values():
            state = group.state()
            if states and state.lower() not in states:
                continue
            out.append((group.group_id, state))
        return out
