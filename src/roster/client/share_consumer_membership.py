"""A member of a share group (KIP-932, ShareGroupHeartbeat v1) as a pure state machine. No
sockets, no clock, no uuid: the driver (share_consumer_member.py) gives it its member id (the
client makes one up, a UUID string, and keeps it for its lifetime), feeds it answers and the
time, and carries out what it returns (`Send`, `NeedTopicIds`, `Fatal`).

How it behaves (as Kafka 4.4's ShareMembershipManager / ShareHeartbeatRequestManager):
- it joins with epoch 0, sending its subscription and rack; later heartbeats carry only the
  group, member id and epoch, plus the subscription when it changed since the broker heard it;
- it heartbeats at the interval of the broker's answer;
- the assignment comes by topic id. A share partition is not owned: records are shared by
  every member it is assigned to, so there is nothing to revoke or commit first. A new
  assignment takes effect at once and is acknowledged by a heartbeat sent right away;
- FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: the assignment is dropped and it joins again with
  epoch 0 and the same member id; a coordinator moved or unavailable: it finds it again;
- leaving (close) is one heartbeat with epoch -1 (no static membership in share groups);
- UNSUPPORTED_VERSION (a broker without share groups), authorization refusals and bad
  requests are fatal, in Kafka's words where Kafka has them.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import Enum

from roster.client.member_actions import (
    Fatal,
    FencedError,
    MemberConfig,
    NeedTopicIds,
    Send,
    assignment_target,
    find_coordinator,
)
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.client")
E = ErrorCode

LEAVE_EPOCH = -1
COORDINATOR_GONE = frozenset({E.not_coordinator, E.coordinator_not_available})
REJOIN = frozenset({E.fenced_member_epoch, E.unknown_member_id})
FATAL = frozenset({E.unsupported_version, E.group_authorization_failed,
                   E.topic_authorization_failed, E.invalid_request, E.group_max_size_reached,
                   E.group_id_not_found, E.inconsistent_group_protocol,
                   E.unreleased_instance_id})
# Kafka 4.4's messages (ShareHeartbeatRequestManager)
NO_SHARE_GROUPS = ("The cluster does not support the share group protocol. To use share "
                   "groups, the cluster must have the share group protocol enabled.")
OLD_SHARE_GROUPS = ("The cluster does not support the share group protocol using "
                    "ShareGroupHeartbeat API version 1 or later. This version of the API was "
                    "introduced in Apache Kafka v4.1.")

IdPartition = tuple[object, int]   # (topic id, partition)


class State(Enum):
    UNJOINED = "unjoined"      # needs the coordinator
    FINDING = "finding"        # FindCoordinator sent
    JOINING = "joining"        # heartbeating with epoch 0
    STABLE = "stable"          # a member, heartbeating
    FATAL = "fatal"
    CLOSED = "closed"


HEARTBEATING = frozenset({State.JOINING, State.STABLE})


@dataclass(slots=True)
class ShareMembership:
    config: MemberConfig
    member_id: str
    state: State = State.UNJOINED
    epoch: int = 0
    subscription: tuple[str, ...] = ()
    owned: tuple[tuple[str, int], ...] = ()          # (topic, partition) assigned right now
    owned_ids: frozenset[IdPartition] = frozenset()  # the same, by topic id
    pending: frozenset[IdPartition] | None = None    # an assignment waiting for topic names
    names: dict = field(default_factory=dict)        # topic id -> name
    interval_ms: int = 5000
    next_heartbeat_ms: int | None = None
    in_flight: bool = False
    retry_at_ms: int | None = None
    sent_subscription: tuple[str, ...] | None = None  # what the broker last heard
    sent_rack: bool = False
    sending_subscription: tuple[str, ...] | None = None  # what the heartbeat in flight says
    finding: bool = False
    fatal: Fatal | None = None

    @property
    def generation(self) -> int:
        return self.epoch

    # -- what the application does -------------------------------------------------------------

    def subscribe(self, topics, now: int) -> list:
        topics = tuple(sorted(set(topics)))
        if topics == self.subscription:
            return []
        self.subscription = topics
        if self.state in HEARTBEATING:
            self.next_heartbeat_ms = now   # tell the broker at once
        return []

    def close(self, now: int) -> list:
        """Leave the group: one heartbeat with epoch -1, if the broker knows this member."""
        joined = self.state in HEARTBEATING and (self.epoch > 0 or self.in_flight)
        self.state, self.next_heartbeat_ms = State.CLOSED, None
        self.owned, self.owned_ids, self.pending = (), frozenset(), None
        if not joined:
            return []
        return [Send("ShareGroupHeartbeat", {
            "group_id": self.config.group_id, "member_id": self.member_id,
            "member_epoch": LEAVE_EPOCH, "rack_id": None, "subscribed_topic_names": None})]

    leave = close

    def unsubscribe(self, now: int) -> list:
        """Leave the group (epoch -1) but stay usable: a later subscribe() joins again, with
        epoch 0 and the same member id."""
        if self.state in (State.FATAL, State.CLOSED):
            return []
        joined = self.state in HEARTBEATING and (self.epoch > 0 or self.in_flight)
        leave = [Send("ShareGroupHeartbeat", {
            "group_id": self.config.group_id, "member_id": self.member_id,
            "member_epoch": LEAVE_EPOCH, "rack_id": None,
            "subscribed_topic_names": None})] if joined else []
        self.subscription, self.state, self.epoch = (), State.UNJOINED, 0
        self.owned, self.owned_ids, self.pending = (), frozenset(), None
        self.next_heartbeat_ms = self.retry_at_ms = None
        self.sent_subscription, self.sent_rack, self.in_flight = None, False, False
        return leave

    def finish_leaving(self, now: int) -> list:
        """(The driver's closing protocol: nothing is left to do after the leave.)"""
        if self.state is State.FATAL:
            self.state = State.CLOSED
        return []

    def commit_request(self, offsets) -> Send:
        raise FencedError("a share group commits acknowledgements, not offsets")

    # -- time ---------------------------------------------------------------------------------

    def tick(self, now: int) -> list:
        if self.state in (State.FATAL, State.CLOSED):
            return []
        if self.retry_at_ms is not None and now < self.retry_at_ms:
            return []
        if self.state is State.UNJOINED and self.subscription and not self.finding:
            self.retry_at_ms = None
            self.state, self.finding = State.FINDING, True
            return [find_coordinator(self.config.group_id)]
        if self.state in HEARTBEATING and not self.in_flight \
                and self.next_heartbeat_ms is not None and now >= self.next_heartbeat_ms:
            return [self._heartbeat()]
        return []

    def next_deadline(self) -> int | None:
        if self.state is State.UNJOINED:
            return self.retry_at_ms or 0
        if self.state in HEARTBEATING and not self.in_flight:
            return max(self.next_heartbeat_ms or 0, self.retry_at_ms or 0) \
                if self.next_heartbeat_ms is not None else None
        return None

    # -- answers -------------------------------------------------------------------------------

    def on_find_coordinator(self, error: ErrorCode, now: int) -> list:
        self.finding = False
        if self.state is not State.FINDING:
            return []   # answered after we moved on (closed, failed)
        if error is not E.none:
            self.state = State.UNJOINED
            self.retry_at_ms = now + self.config.retry_backoff_ms
            return []
        self.state = State.JOINING if self.epoch == 0 else State.STABLE
        self.next_heartbeat_ms = now
        return []

    def on_connection_lost(self, now: int) -> list:
        self.in_flight = False
        return self._coordinator_gone(now)

    def on_heartbeat(self, error: ErrorCode, message: str | None, member_epoch: int,
                     interval_ms: int, assignment, now: int) -> list:
        """assignment: None (unchanged), or ((topic id, (partitions...)), ...)."""
        self.in_flight = False
        if self.state not in HEARTBEATING:
            return []
        if error is not E.none:
            return self._on_error(error, message, now)
        self.sent_subscription = self.sending_subscription
        self.sent_rack = True
        self.epoch = member_epoch
        self.state = State.STABLE
        if interval_ms > 0:
            self.interval_ms = interval_ms
        self.retry_at_ms = None
        self.next_heartbeat_ms = now + self.interval_ms
        if self.subscription != self.sent_subscription:
            self.next_heartbeat_ms = now   # changed while the heartbeat was in flight
        if assignment is None:
            return []
        target, unknown = assignment_target(assignment, self.names)
        if unknown:
            self.pending = target
            return [NeedTopicIds(unknown)]
        return self._apply(target, now)

    def on_topic_names(self, names: dict, now: int) -> list:
        self.names.update(names)
        if self.pending is None or any(t not in self.names for t, _ in self.pending):
            return []
        target, self.pending = self.pending, None
        return self._apply(target, now)

    # -- inside ----------------------------------------------------------------------------------

    def _heartbeat(self) -> Send:
        self.in_flight = True
        self.next_heartbeat_ms = None
        joining = self.epoch == 0
        send_topics = joining or self.subscription != self.sent_subscription
        self.sending_subscription = self.subscription if send_topics else self.sent_subscription
        return Send("ShareGroupHeartbeat", {
            "group_id": self.config.group_id, "member_id": self.member_id,
            "member_epoch": self.epoch,
            "rack_id": self.config.rack_id if joining or not self.sent_rack else None,
            "subscribed_topic_names": self.subscription if send_topics else None})

    def _apply(self, target: frozenset, now: int) -> list:
        if target != self.owned_ids:
            self.owned_ids = target
            self.owned = tuple(sorted((self.names[t], p) for t, p in target))
            self.next_heartbeat_ms = now   # acknowledge the new assignment at once
        return []

    def _on_error(self, error: ErrorCode, message: str | None, now: int) -> list:
        if error in REJOIN:
            log.info("share group %s: %s; joining again", self.config.group_id, error.name)
            self.owned, self.owned_ids, self.pending = (), frozenset(), None
            self.epoch, self.state, self.next_heartbeat_ms = 0, State.JOINING, now
            self.sent_subscription, self.sent_rack = None, False
            return []
        if error in COORDINATOR_GONE:
            return self._coordinator_gone(now)
        if error in FATAL:
            text = OLD_SHARE_GROUPS if error is E.unsupported_version else \
                f"ShareGroupHeartbeat: {error.name.upper()}" + (f": {message}" if message else "")
            return self._fail(error, text)
        # COORDINATOR_LOAD_IN_PROGRESS and the like: the same heartbeat again after a backoff
        log.info("share group %s: heartbeat answered %s; retrying", self.config.group_id,
                 error.name)
        self.retry_at_ms = now + self.config.retry_backoff_ms
        self.next_heartbeat_ms = self.retry_at_ms
        return []

    def _coordinator_gone(self, now: int) -> list:
        if self.state in (State.FATAL, State.CLOSED):
            return []
        self.state = State.UNJOINED
        self.retry_at_ms = now + self.config.retry_backoff_ms
        self.next_heartbeat_ms = None
        return []

    def _fail(self, error: ErrorCode, message: str) -> list:
        operation = "DESCRIBE" if error is E.topic_authorization_failed else "READ"
        self.fatal = Fatal(error, message, operation)
        self.state, self.next_heartbeat_ms = State.FATAL, None
        self.owned, self.owned_ids = (), frozenset()
        return [self.fatal]
