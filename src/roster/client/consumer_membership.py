"""A member of a consumer group (KIP-848, ConsumerGroupHeartbeat) as a pure state machine: the
broker assigns, the member heartbeats and reconciles. No sockets, no clock, no uuid: the
driver (consumer_member.py) feeds it answers and the time, gives it its member id (KIP-1082:
the client makes it up, once, and keeps it for its lifetime), and carries out what it returns
(`Send`, `NeedTopicIds`, and `Assigned`/`Revoked`/`Lost`/`Fatal` for the application).

How it behaves (as the Java and librdkafka members do):
- it joins with epoch 0 and every field; later heartbeats carry only what changed (the
  subscription when it changes) and always the partitions it owns, so the coordinator knows
  when a revocation is done;
- an assignment in an answer is applied at once: partitions no longer in it are revoked (the
  application is told first), new ones are assigned, and a heartbeat goes out right away to
  acknowledge; topic ids it cannot name yet are resolved first (NeedTopicIds);
- a revoked partition is reported as still owned until the application's callback for it has
  returned (`Reconciled`, then `reconciled()`): the coordinator gives it to its next owner only
  then, and keeps this member at its epoch meanwhile, so the callback can still commit its
  offsets; heartbeats go on while the callback runs;
- FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: its partitions are lost, it rejoins with epoch 0
  and the same member id; a changed or unavailable coordinator: it finds the coordinator again
  and carries on with its epoch;
- closing gives the partitions up first (Revoked with an epoch, else Lost), heartbeating and
  reporting them as owned while the callback runs, so a commit from it is accepted; then
  (LeaveWhenRevoked) it leaves with epoch -1, or -2 for a static member (its partitions wait
  for it for the session timeout), as Kafka's Java member (PREPARE_LEAVING) does; fenced
  meanwhile, it sends no leave; a coordinator lost meanwhile is looked up again;
- one FindCoordinator at a time: a lookup asked for while one is in flight waits for it;
- UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID and other configuration errors
  are fatal.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import Enum

from roster.client.member_actions import (
    Assigned,
    Fatal,
    FencedError,
    LeaveWhenRevoked,
    Lost,
    MemberConfig,
    NeedTopicIds,
    Revoked,
    Send,
    assignment_target,
    find_coordinator,
)
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.client")
E = ErrorCode

LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2
COORDINATOR_GONE = {E.not_coordinator, E.coordinator_not_available}
REJOIN = {E.fenced_member_epoch, E.unknown_member_id}
FATAL = {E.unreleased_instance_id, E.fenced_instance_id, E.group_max_size_reached,
         E.unsupported_assignor, E.invalid_request, E.invalid_regular_expression,
         E.group_authorization_failed, E.topic_authorization_failed, E.unsupported_version,
         E.group_id_not_found}

TopicId = object            # whatever the driver uses (uuid.UUID)
IdPartition = tuple[object, int]


class State(Enum):
    UNJOINED = "unjoined"      # needs the coordinator
    FINDING = "finding"        # FindCoordinator sent
    JOINING = "joining"        # in the group's view not yet a member (epoch 0)
    STABLE = "stable"          # a member, heartbeating
    LEAVING = "leaving"        # closing: the callback runs first, heartbeating; the leave follows
    FATAL = "fatal"
    CLOSED = "closed"


HEARTBEATING = frozenset({State.JOINING, State.STABLE, State.LEAVING})


@frozen
class Reconciled:
    """The callbacks before this action have run: call reconciled(partitions) so heartbeats
    stop reporting these revoked partitions as owned."""

    partitions: tuple[tuple[str, int], ...]
    ids: frozenset


@dataclass(slots=True)
class ConsumerMembership:
    config: MemberConfig
    member_id: str
    server_assignor: str | None = None
    state: State = State.UNJOINED
    epoch: int = 0
    subscription: tuple[str, ...] = ()
    owned: tuple[tuple[str, int], ...] = ()        # (topic, partition) held right now
    owned_ids: frozenset[IdPartition] = frozenset()  # the same, by topic id (what we report)
    pending: frozenset[IdPartition] | None = None  # an assignment waiting for topic names
    revoking: frozenset[IdPartition] = frozenset()   # revoked, the callback not yet returned
    names: dict = field(default_factory=dict)      # topic id -> name
    interval_ms: int = 3000
    next_heartbeat_ms: int | None = None
    in_flight: bool = False
    retry_at_ms: int | None = None
    full: bool = True                 # the next heartbeat carries every field
    # the partitions (by id) the coordinator last heard we hold, and those the heartbeat in
    # flight reports: unchanged, they are sent as null ("unchanged"), as the Java client does,
    # which lets the broker answer by its steady path
    reported: frozenset | None = None
    reporting: frozenset | None = None
    subscription_changed: bool = False
    finding: bool = False             # a FindCoordinator is in flight
    coordinator_lost: bool = False    # LEAVING: looking the coordinator up again
    leave_epoch: int | None = None    # LEAVING: the epoch the leave heartbeat carries (None: none)
    fatal: Fatal | None = None

    def __post_init__(self) -> None:
        self.interval_ms = self.config.heartbeat_interval_ms

    @property
    def generation(self) -> int:
        """The member epoch: what OffsetCommit carries (and what a stale answer is told by)."""
        return self.epoch

    # -- what the application does -------------------------------------------------------------

    def subscribe(self, topics, now: int) -> list:
        topics = tuple(sorted(set(topics)))
        if topics == self.subscription:
            return []
        self.subscription = topics
        self.subscription_changed = True
        if self.state is State.STABLE:
            self.next_heartbeat_ms = now
        return []

    def close(self, now: int) -> list:
        """Stop: a static member leaves with epoch -2 (its partitions wait for it for the
        session timeout), a dynamic one with -1."""
        epoch = STATIC_LEAVE_EPOCH if self.config.group_instance_id is not None else LEAVE_EPOCH
        return self._prepare_leaving(epoch, now)

    def leave(self, now: int) -> list:
        """Leave for good, static member or not (epoch -1): its partitions move at once."""
        return self._prepare_leaving(LEAVE_EPOCH, now)

    def finish_leaving(self, now: int) -> list:
        """The callback for the partitions given up on closing has returned (LeaveWhenRevoked):
        send the leave heartbeat, unless the member is no longer in the group."""
        if self.state is State.FATAL:
            self.state = State.CLOSED
        if self.state is not State.LEAVING:
            return []
        actions = [] if self.leave_epoch is None or self.coordinator_lost \
            else [self._leave_heartbeat(self.leave_epoch)]
        self.state, self.revoking, self.next_heartbeat_ms = State.CLOSED, frozenset(), None
        self.coordinator_lost = False
        return actions

    def commit_request(self, offsets: dict[tuple[str, int], int]) -> Send:
        if self.fatal is not None:
            raise FencedError(self.fatal.message)
        by_topic: dict[str, list] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append((partition, offset))
        return Send("OffsetCommit", {
            "group_id": self.config.group_id, "generation_id_or_member_epoch": self.epoch,
            "member_id": self.member_id, "group_instance_id": self.config.group_instance_id,
            "topics": by_topic})

    def on_commit(self, errors: dict, now: int) -> list:
        worst = next((e for e in errors.values() if e is not E.none), E.none)
        if worst is E.fenced_instance_id:
            return self._fail(worst, "fenced while committing offsets")
        if worst in COORDINATOR_GONE:
            return self._coordinator_gone(now)
        return []   # STALE_MEMBER_EPOCH and the like: the heartbeat brings the news

    # -- time ---------------------------------------------------------------------------------

    def tick(self, now: int) -> list:
        if self.state in (State.FATAL, State.CLOSED):
            return []
        if self.retry_at_ms is not None and now < self.retry_at_ms:
            return []
        if self.state is State.UNJOINED and self.subscription:
            self.retry_at_ms = None
            self.state = State.FINDING
            return self._find_request()
        if self.state is State.LEAVING and self.coordinator_lost:
            self.retry_at_ms = None
            return self._find_request()
        if self.state in HEARTBEATING and not self.in_flight \
                and self.next_heartbeat_ms is not None and now >= self.next_heartbeat_ms:
            return [self._heartbeat()]
        return []

    def next_deadline(self) -> int | None:
        if self.state is State.LEAVING and self.coordinator_lost:
            return None if self.finding else self.retry_at_ms or 0
        if self.state is State.UNJOINED:
            return self.retry_at_ms or 0
        if self.state in HEARTBEATING and not self.in_flight:
            return self.next_heartbeat_ms
        return None

    def reconciled(self, revoked: Reconciled, now: int) -> list:
        """The application is done with these revoked partitions: the next heartbeat, at once,
        tells the coordinator they are free."""
        if revoked.ids & self.revoking:
            self.revoking -= revoked.ids
            if self.state is State.STABLE:
                self.next_heartbeat_ms = now
        return []

    # -- answers -------------------------------------------------------------------------------

    def on_find_coordinator(self, error: ErrorCode, now: int) -> list:
        self.finding = False
        if self.state is State.LEAVING and self.coordinator_lost:   # heartbeat on once found
            if error is not E.none:
                self.retry_at_ms = now + self.config.retry_backoff_ms
            else:
                self.coordinator_lost, self.full, self.next_heartbeat_ms = False, True, now
            return []
        if self.state is not State.FINDING:
            return []   # answered after we moved on (closed, fenced)
        if error is not E.none:
            return self._retry_later(now)
        self.state = State.JOINING if self.epoch == 0 else State.STABLE
        self.next_heartbeat_ms = now
        return []

    def on_connection_lost(self, now: int) -> list:
        self.in_flight = False
        return self._coordinator_gone(now)

    def on_heartbeat(self, error: ErrorCode, member_epoch: int, interval_ms: int,
                     assignment, now: int) -> list:
        """assignment: None, or ((topic id, (partitions...)), ...)."""
        self.in_flight = False
        if self.state in (State.CLOSED, State.FATAL):
            return []
        if self.state is State.LEAVING:
            return self._on_heartbeat_leaving(error, member_epoch, interval_ms, now)
        if error is not E.none:
            return self._on_error(error, now)
        self.full = False
        self.subscription_changed = False
        self.reported = self.reporting
        self.epoch = member_epoch
        self.state = State.STABLE
        if interval_ms > 0:
            self.interval_ms = interval_ms
        self.next_heartbeat_ms = now + self.interval_ms
        if assignment is None:
            return []
        target, unknown = assignment_target(assignment, self.names)
        if unknown:
            self.pending = target
            return [NeedTopicIds(unknown)]
        return self._reconcile(target, now)

    def on_topic_names(self, names: dict, now: int) -> list:
        self.names.update(names)
        if self.pending is None or any(t not in self.names for t, _ in self.pending):
            return []
        target, self.pending = self.pending, None
        return self._reconcile(target, now)

    # -- inside ----------------------------------------------------------------------------------

    def _heartbeat(self) -> Send:
        self.in_flight = True
        self.next_heartbeat_ms = None
        full = self.full or self.epoch == 0
        held = self.owned_ids | self.revoking
        owned = None
        if full or held != self.reported:
            by_topic: dict = {}
            for t, p in sorted(held, key=lambda tp: (str(tp[0]), tp[1])):
                by_topic.setdefault(t, []).append(p)
            owned = tuple(by_topic.items())
        self.reporting = held
        return Send("ConsumerGroupHeartbeat", {
            "group_id": self.config.group_id, "member_id": self.member_id,
            "member_epoch": self.epoch, "instance_id": self.config.group_instance_id,
            "rack_id": self.config.rack_id if full else None,
            "rebalance_timeout_ms": self.config.rebalance_timeout_ms if full else -1,
            "subscribed_topic_names": self.subscription
            if full or self.subscription_changed else None,
            "subscribed_topic_regex": None,
            "server_assignor": self.server_assignor if full else None,
            "topic_partitions": owned})

    def _reconcile(self, target: frozenset, now: int) -> list:
        named = {(self.names[t], p) for t, p in target}
        current = set(self.owned)
        revoked = tuple(sorted(current - named))
        added = tuple(sorted(named - current))
        actions: list = []
        if revoked:
            revoked_ids = self.owned_ids - target
            self.revoking |= revoked_ids
            actions.append(Revoked(revoked))
        self.owned = tuple(sorted(named))
        self.owned_ids = target
        if added:
            actions.append(Assigned(added))
        if revoked:
            actions.append(Reconciled(revoked, revoked_ids))
        if revoked or added:
            self.next_heartbeat_ms = now   # acknowledge at once
        return actions

    def _on_error(self, error: ErrorCode, now: int) -> list:
        if error in REJOIN:
            log.info("consumer group %s: %s; rejoining", self.config.group_id, error.name)
            actions = self._give_up(Lost)
            self.epoch, self.full, self.state = 0, True, State.JOINING
            self.next_heartbeat_ms = now
            return actions
        if error in COORDINATOR_GONE:
            return self._coordinator_gone(now)
        if error in FATAL:
            return self._fail(error, f"ConsumerGroupHeartbeat: {error.name}")
        # COORDINATOR_LOAD_IN_PROGRESS and anything passing: again after a backoff
        self.full = True
        self.next_heartbeat_ms = now + self.config.retry_backoff_ms
        return []

    def _give_up(self, kind) -> list:
        owned, self.owned, self.owned_ids, self.pending = self.owned, (), frozenset(), None
        self.revoking = frozenset()
        return [kind(owned)] if owned else []

    def _prepare_leaving(self, epoch: int, now: int) -> list:
        """Give the partitions up first: Revoked as a member (epoch > 0), reported as owned
        until the callback returns; Lost otherwise (as Kafka's Java member)."""
        if self.state is State.LEAVING:
            return []
        if self.state in (State.FATAL, State.CLOSED):
            self.state = State.CLOSED
            return []
        member = self.state in (State.JOINING, State.STABLE) and self.epoch > 0
        self.leave_epoch = epoch if member else None
        held = self.owned_ids | self.revoking
        actions = self._give_up(Revoked if self.epoch > 0 else Lost)
        if member:
            self.revoking = held
        else:
            self.next_heartbeat_ms = None
        self.state = State.LEAVING
        if not actions:
            return self.finish_leaving(now)
        return actions + [LeaveWhenRevoked()]

    def _on_heartbeat_leaving(self, error: ErrorCode, member_epoch: int, interval_ms: int,
                              now: int) -> list:
        """An answer while the closing callback runs: an assignment no longer matters; fenced
        or unknown, the member is out of the group already and sends no leave."""
        if error is E.none:
            self.epoch, self.full, self.reported = member_epoch, False, self.reporting
            self.interval_ms = interval_ms if interval_ms > 0 else self.interval_ms
            self.next_heartbeat_ms = now + self.interval_ms
            return []
        if error in REJOIN:
            self.leave_epoch, self.next_heartbeat_ms, self.coordinator_lost = None, None, False
            return []
        if error in FATAL:
            return self._fail(error, f"ConsumerGroupHeartbeat: {error.name}")
        if error in COORDINATOR_GONE:
            return self._coordinator_gone(now)
        self.full = True   # e.g. COORDINATOR_LOAD_IN_PROGRESS: again after the backoff
        self.next_heartbeat_ms = now + self.config.retry_backoff_ms
        return []

    def _find_request(self) -> list:
        if self.finding:
            return []   # its answer moves the member on
        self.finding = True
        return [find_coordinator(self.config.group_id)]

    def _leave_heartbeat(self, epoch: int) -> Send:
        return Send("ConsumerGroupHeartbeat", {
            "group_id": self.config.group_id, "member_id": self.member_id,
            "member_epoch": epoch, "instance_id": self.config.group_instance_id,
            "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
            "subscribed_topic_regex": None, "server_assignor": None,
            "topic_partitions": None})

    def _coordinator_gone(self, now: int) -> list:
        if self.state is State.LEAVING:
            # as a member (a leave to send, a callback that may commit): find it again, after
            # the backoff, and heartbeat on; the leave goes only to a coordinator found
            self.next_heartbeat_ms = None
            if self.leave_epoch is not None:
                self.coordinator_lost = True
                self.retry_at_ms = now + self.config.retry_backoff_ms
            return []
        if self.state not in (State.FATAL, State.CLOSED):
            self.state = State.UNJOINED
            self.full = True
            self.retry_at_ms = now + self.config.retry_backoff_ms
        return []

    def _retry_later(self, now: int) -> list:
        self.state = State.UNJOINED
        self.retry_at_ms = now + self.config.retry_backoff_ms
        return []

    def _fail(self, error: ErrorCode, message: str) -> list:
        self.fatal = Fatal(error, message)
        self.state = State.FATAL
        return self._give_up(Lost) + [self.fatal]
