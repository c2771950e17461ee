"""A consumer-group member as a pure state machine (no sockets, no clock, no threads).

The driver feeds it events — responses, the current time, subscription and metadata changes —
and carries out what it returns: requests to send (`Send`) and news for the application
(`Assigned`, `Revoked`, `Lost`, `Fatal`). Every decision about the group protocol lives here, so
it is tested with a manual clock and no network.

What it does beyond a basic member:
- static membership (KIP-345): a group.instance.id is sent on every request; closing does not
  leave the group (`leave()` does, explicitly);
- closing (LEAVING): the partitions are given up first (Revoked, or Lost when the member is
  between generations) and the LeaveGroup goes once that callback has returned, heartbeating
  meanwhile, as Kafka's Java client (onLeavePrepare before maybeLeaveGroup) and librdkafka do:
  a commit from the callback is still a member's;
- one FindCoordinator at a time: a lookup asked for while one is in flight waits for its answer
  (as Kafka's lookupCoordinator), so one answer sends one JoinGroup;
- a lost coordinator (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a broken or timed-out
  connection) is only forgotten by a member of a generation: it keeps its member id, generation
  and partitions, looks the coordinator up again after retry.backoff.ms and heartbeats on in
  the same generation, and the heartbeat's answer decides whether it rejoins — as Kafka's Java
  client (AbstractCoordinator.markCoordinatorUnknown, then its heartbeat thread's lookup) and
  librdkafka (rd_kafka_cgrp_coord_dead) do. Mid-rebalance (JoinGroup, SyncGroup) it finds the
  coordinator again and sends the JoinGroup again, as Java's joinGroupIfNeeded does;
- fencing: FENCED_INSTANCE_ID is fatal — reported once, and no further requests or commits;
- KIP-814 as leader: with SkipAssignment it sends SyncGroup without assignments, keeps the
  member list's subscriptions, and asks for a rejoin when a subscribed topic's partitions no
  longer match what the group has assigned (e.g. partitions were added);
- KIP-792: subscriptions carry the generation in which the owned partitions were owned;
- KIP-429 cooperative rebalancing: with a cooperative assignor, partitions are revoked first,
  then the member rejoins so they can be assigned elsewhere;
- REVOKING: on_revoked runs before the JoinGroup goes out, and the member heartbeats meanwhile,
  as Kafka's Java client (its heartbeat thread runs through onPartitionsRevoked) and librdkafka
  do; REBALANCE_IN_PROGRESS is then expected and changes nothing.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import Enum

from roster.client.assignment_data import (
    assignment_bytes,
    baseline_bytes,
    member_subscription,
    read_baseline,
)
from roster.client.assignors import get as get_assignor
from roster.client.assignors.api import AssignmentError, MemberSubscription, TopicPartition
from roster.client.member_actions import (  # noqa: F401 (re-exported: where drivers and tests import them)
    Assigned,
    Fatal,
    FencedError,
    LeaveWhenRevoked,
    Lost,
    MemberConfig,
    NeedMetadata,
    RejoinWhenRevoked,
    Revoked,
    Send,
    find_coordinator,
)
from roster.protocol.consumer_protocol import (
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    encode_subscription,
)
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.client")
E = ErrorCode

COORDINATOR_GONE = {E.not_coordinator, E.coordinator_not_available}
FATAL_JOIN = {E.fenced_instance_id, E.group_max_size_reached, E.inconsistent_group_protocol,
              E.invalid_session_timeout, E.group_authorization_failed, E.invalid_group_id,
              E.unsupported_version}


class State(Enum):
    UNJOINED = "unjoined"        # needs to (re)join
    FINDING = "finding"          # FindCoordinator sent
    JOINING = "joining"          # JoinGroup sent
    AWAITING_METADATA = "awaiting-metadata"  # leader needs partition counts to assign
    SYNCING = "syncing"          # SyncGroup sent
    STABLE = "stable"
    REVOKING = "revoking"        # on_revoked is running; still heartbeating; JoinGroup follows
    LEAVING = "leaving"          # closing: on_revoked/on_lost runs first; LeaveGroup follows
    FATAL = "fatal"
    CLOSED = "closed"


HEARTBEATING = frozenset({State.STABLE, State.REVOKING, State.LEAVING})  # (while in a generation)
AWAITING_CALLBACK = frozenset({State.REVOKING, State.LEAVING})   # a JoinGroup/LeaveGroup follows it
REBALANCING = frozenset({State.JOINING, State.AWAITING_METADATA, State.SYNCING})


@dataclass(slots=True)
class Membership:
    config: MemberConfig
    state: State = State.UNJOINED
    member_id: str = ""
    generation: int = -1
    protocol: str | None = None
    leader_id: str | None = None
    subscription: tuple[str, ...] = ()
    owned: tuple[TopicPartition, ...] = ()        # partitions held right now
    # What the subscription reports as owned (KIP-792: with the generation it was assigned in).
    # With eager assignors, partitions are revoked before rejoining, yet the sticky assignor
    # still needs the last assignment, so this survives a revocation; only losing the
    # membership (a fenced or unknown member, an illegal generation) clears it.
    claimed: tuple[TopicPartition, ...] = ()
    claimed_generation: int = -1
    metadata: dict[str, int] = field(default_factory=dict)   # topic -> partition count
    # as leader: everyone's subscriptions and what the group has assigned (KIP-814 watch)
    group_members: tuple[MemberSubscription, ...] = ()
    group_assigned: frozenset[TopicPartition] | None = None
    baseline_pending: bool = False
    next_heartbeat_ms: int | None = None
    retry_at_ms: int | None = None
    coordinator_lost: bool = False   # HEARTBEATING: looking the coordinator up again
    finding: bool = False            # a FindCoordinator is in flight
    send_leave: bool = False         # LEAVING: a LeaveGroup follows the callback
    rejoin_reason: str | None = "starting"
    fatal: Fatal | None = None

    # -- what the application does ---------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.member_id != "" and self.leader_id == self.member_id

    def subscribe(self, topics: list[str] | tuple[str, ...], now: int) -> list:
        topics = tuple(sorted(set(topics)))
        if topics == self.subscription:
            return []
        previous, self.subscription = self.subscription, topics
        # a first subscription is a member joining, not a change: like Kafka's consumer, its
        # first JoinGroup gives no reason (the coordinator records "member joined")
        return self._request_rejoin(
            f"subscription changed to {', '.join(topics)}" if previous else None, now)

    def close(self, now: int) -> list:
        """Stop. A dynamic member leaves the group; a static one stays silent so a restart
        within the session timeout moves no partitions (KIP-345). Either way its partitions
        are given up first: the LeaveGroup (if any) follows the callback (LeaveWhenRevoked)."""
        return self._prepare_leaving(self.config.group_instance_id is None, now)

    def leave(self, now: int) -> list:
        """Leave the group explicitly, static member or not: its partitions move at once."""
        return self._prepare_leaving(True, now)

    def finish_leaving(self, now: int) -> list:
        """The callback for the partitions given up on closing has returned (LeaveWhenRevoked):
        send the LeaveGroup, unless the member has no coordinator or membership left."""
        if self.state is State.FATAL:
            self.state = State.CLOSED
        if self.state is not State.LEAVING:
            return []
        actions = self._leave_request() if self.send_leave and not self.coordinator_lost else []
        self.state, self.next_heartbeat_ms, self.coordinator_lost = State.CLOSED, None, False
        return actions

    def commit_request(self, offsets: dict[TopicPartition, int]) -> Send:
        """The OffsetCommit to send for these offsets, as this member of this generation."""
        if self.fatal is not None:
            raise FencedError(self.fatal.message)
        by_topic: dict[str, list] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append((partition, offset))
        return Send("OffsetCommit", {
            "group_id": self.config.group_id, "generation_id_or_member_epoch": self.generation,
            "member_id": self.member_id, "group_instance_id": self.config.group_instance_id,
            "topics": by_topic})

    def on_commit(self, errors: dict[TopicPartition, ErrorCode], now: int) -> list:
        """React to a commit's per-partition errors (the caller reports them to the user)."""
        worst = next((e for e in errors.values() if e is not E.none), E.none)
        if worst is E.fenced_instance_id:
            return self._fail(worst, "fenced while committing offsets")
        if worst is E.group_authorization_failed:
            return self._fail(worst, "OffsetCommit refused", "READ")
        if worst in (E.illegal_generation, E.unknown_member_id):
            return self._lose_membership(worst, now)
        if worst is E.rebalance_in_progress:
            return self._request_rejoin("a rebalance is in progress", now)
        if worst in COORDINATOR_GONE:
            return self._coordinator_gone(now)
        return []

    def on_metadata(self, partitions_per_topic: dict[str, int], now: int) -> list:
        """Partition counts for topics (the driver refreshes them periodically and on demand)."""
        self.metadata.update(partitions_per_topic)
        if self.state is State.AWAITING_METADATA:
            return self._assign_and_sync(now)
        if self.baseline_pending and self.is_leader:
            # after a KIP-814 rejoin whose assignment held no baseline (on_sync): the partitions
            # as they are now, once the answer is in (until then it may still bring one)
            watched = self.watched_topics()
            if self.state is State.STABLE and all(t in self.metadata for t in watched):
                self.baseline_pending = False
                self.group_assigned = frozenset(
                    (t, p) for t in watched for p in range(self.metadata[t]))
            return []
        if self.state is State.STABLE and self.is_leader and self._assignment_outdated():
            return self._request_rejoin("subscribed topics' partitions changed", now)
        return []

    def watched_topics(self) -> tuple[str, ...]:
        """Topics whose metadata the driver should keep fresh: as leader, every topic anyone in
        the group subscribes to (KIP-814); otherwise this member's own."""
        topics = set(self.subscription)
        if self.is_leader:
            for member in self.group_members:
                topics.update(member.topics)
        return tuple(sorted(topics))

    # -- time -------------------------------------------------------------------------------

    def tick(self, now: int) -> list:
        if self.state in (State.FATAL, State.CLOSED):
            return []
        if self.retry_at_ms is not None and now < self.retry_at_ms:
            return []
        if self.state is State.UNJOINED and self.subscription:
            self.retry_at_ms = None
            self.state = State.FINDING
            return self._find_request()
        if self.state in HEARTBEATING and self.coordinator_lost:
            self.retry_at_ms = None
            return self._find_request()
        if self.state in HEARTBEATING and self.next_heartbeat_ms is not None \
                and now >= self.next_heartbeat_ms:
            self.next_heartbeat_ms = None  # re-armed when the answer arrives
            return [Send("Heartbeat", {
                "group_id": self.config.group_id, "generation_id": self.generation,
                "member_id": self.member_id,
                "group_instance_id": self.config.group_instance_id})]
        return []

    def next_deadline(self) -> int | None:
        """When tick() may next have something to do."""
        if self.state in HEARTBEATING and self.coordinator_lost:
            return None if self.finding else self.retry_at_ms or 0
        if self.state in HEARTBEATING:
            return self.next_heartbeat_ms
        if self.state is State.UNJOINED:
            return self.retry_at_ms or 0
        return None

    # -- responses --------------------------------------------------------------------------

    def on_find_coordinator(self, error: ErrorCode, now: int) -> list:
        """The answer to the FindCoordinator in flight (the driver reports a lookup that could
        not reach the broker or the coordinator as COORDINATOR_NOT_AVAILABLE)."""
        self.finding = False
        if self.state is not State.FINDING and self.state not in HEARTBEATING:
            return []   # answered after we moved on (closed, fenced)
        if error is E.group_authorization_failed:  # Kafka's client: fatal, DESCRIBE on the group
            return self._fail(error, "FindCoordinator refused", "DESCRIBE")
        if self.state in HEARTBEATING:   # a member of its generation looked it up: heartbeat on
            if self.coordinator_lost and error is not E.none:
                self.retry_at_ms = now + self.config.retry_backoff_ms
            elif self.coordinator_lost:   # (a loss told since it went: the heartbeat checks)
                self.coordinator_lost, self.retry_at_ms = False, None
                self.next_heartbeat_ms = now if self.generation >= 0 else None
            return []
        if error is not E.none:
            return self._retry_later(now)
        return self._join_request(now)

    def on_connection_lost(self, now: int) -> list:
        """The coordinator's connection broke while a request was outstanding."""
        return self._coordinator_gone(now)

    def on_join(self, response, now: int) -> list:
        if self.state is not State.JOINING:
            return []  # answered after we moved on (closed, fenced)
        error = response.error_code
        if error is E.member_id_required:
            self.member_id = response.member_id
            return self._join_request(now)
        if error in (E.unknown_member_id, E.illegal_generation):
            self.member_id, self.generation = "", -1
            return self._join_request(now)
        if error in FATAL_JOIN:
            return self._fail(error, f"JoinGroup failed: {error.name}", "READ")
        if error in COORDINATOR_GONE:
            return self._coordinator_gone(now)
        if error is not E.none:  # REBALANCE_IN_PROGRESS, COORDINATOR_LOAD_IN_PROGRESS, ...
            return self._retry_later(now)
        self.member_id = response.member_id
        self.generation = response.generation_id
        self.protocol = response.protocol_name
        self.leader_id = response.leader
        self.rejoin_reason = None
        self.baseline_pending = False
        if not self.is_leader:
            self.group_members, self.group_assigned = (), None
            return self._sync_request({})
        self.group_members = tuple(member_subscription(m) for m in response.members)
        if getattr(response, "skip_assignment", False):
            # KIP-814: the group is Stable and keeps its assignment; this (restarted) leader
            # only has to watch the subscribed topics from now on. It cannot see the others'
            # assignments (their claims in the member list date from the previous generation,
            # and eager clients send none), but when it was the one that assigned, it left
            # itself the partition counts it assigned against in its own assignment's user
            # data: the SyncGroup answer brings them back (on_sync), and a topic that grew
            # while it was down makes it rejoin at once. Otherwise the partitions as they are
            # now are the baseline: any later change makes it rejoin.
            self.group_assigned = None
            self.baseline_pending = True
            return self._sync_request({}) + [NeedMetadata(self.watched_topics())]
        missing = [t for t in self.watched_topics() if t not in self.metadata]
        if missing:
            self.state = State.AWAITING_METADATA
            return [NeedMetadata(tuple(missing))]
        return self._assign_and_sync(now)

    def on_sync(self, response, now: int) -> list:
        if self.state is not State.SYNCING:
            return []
        error = response.error_code
        if error is E.fenced_instance_id:
            return self._fail(error, "fenced in SyncGroup")
        if error is E.group_authorization_failed:
            return self._fail(error, "SyncGroup refused", "READ")
        if error in (E.unknown_member_id, E.illegal_generation):
            return self._lose_membership(error, now)
        if error in COORDINATOR_GONE:
            return self._coordinator_gone(now)
        if error is not E.none:
            return self._request_rejoin(f"SyncGroup answered {error.name}", now)
        try:
            assigned = tuple(sorted((t, p) for t, parts in
                                    decode_assignment(response.assignment).partitions
                                    for p in parts))
        except ConsumerProtocolError as exc:
            return self._fail(E.inconsistent_group_protocol, f"unreadable assignment: {exc}")
        self.state = State.STABLE
        outdated = False
        if self.baseline_pending and self.is_leader:
            outdated = self._restore_baseline(response.assignment)
        self.next_heartbeat_ms = now + self.config.heartbeat_interval_ms
        revoked = tuple(p for p in self.owned if p not in assigned)
        added = tuple(p for p in assigned if p not in self.owned)
        self.owned = assigned
        self.claimed, self.claimed_generation = assigned, self.generation
        actions: list = []
        if revoked:
            actions.append(Revoked(revoked))
        if added or not self.owned:
            actions.append(Assigned(added))
        if revoked and self._cooperative():  # KIP-429: give them up, then rejoin so others get them
            self.rejoin_reason = "partitions revoked for a cooperative move"
            actions += self._rejoin_after_revocation(now)
        if outdated:
            actions += self._request_rejoin(
                "subscribed topics' partitions changed while this leader was away", now)
        return actions

    def on_heartbeat(self, error: ErrorCode, now: int) -> list:
        if self.state not in HEARTBEATING:
            return []
        if error is E.none:
            if not self.coordinator_lost:   # (else the heartbeat resumes once it is found)
                self.next_heartbeat_ms = now + self.config.heartbeat_interval_ms
            return []
        if error is E.fenced_instance_id:
            return self._fail(error, "fenced: another consumer uses this group.instance.id")
        if error is E.group_authorization_failed:
            return self._fail(error, "Heartbeat refused", "READ")
        if error in (E.unknown_member_id, E.illegal_generation):
            return self._lose_membership(error, now)
        if error in COORDINATOR_GONE:
            return self._coordinator_gone(now)
        if self.state in AWAITING_CALLBACK:
            # the group is rebalancing (which is why a member revokes): the answer is expected
            # and keeps the member in the group until it rejoins or leaves (Kafka's heartbeat
            # thread counts it as a success); any other error is tried again after a backoff
            self.next_heartbeat_ms = now + (self.config.heartbeat_interval_ms
                                            if error is E.rebalance_in_progress
                                            else self.config.retry_backoff_ms)
            return []
        return self._request_rejoin(f"heartbeat answered {error.name}", now)

    def on_leave(self, error: ErrorCode, now: int) -> list:
        return []

    def revoked(self, now: int) -> list:
        """The application's on_revoked callback has returned (RejoinWhenRevoked): rejoin."""
        if self.state is not State.REVOKING:
            return []   # closed or fenced meanwhile
        self.next_heartbeat_ms = None
        return self._join_request(now)

    # -- internals --------------------------------------------------------------------------

    def _cooperative(self) -> bool:
        return self.protocol is not None and \
            get_assignor(self.protocol).rebalance_protocol == "cooperative"

    def _subscription_bytes(self) -> bytes:
        owned = {}
        for topic, partition in self.claimed:
            owned.setdefault(topic, []).append(partition)
        return encode_subscription(Subscription(
            topics=self.subscription, user_data=None,
            owned_partitions=tuple((t, tuple(ps)) for t, ps in sorted(owned.items())),
            generation_id=self.claimed_generation, rack_id=self.config.rack_id))

    def _find_request(self) -> list:
        if self.finding:
            return []   # its answer moves the member on
        self.finding = True
        return [find_coordinator(self.config.group_id)]

    def _join_request(self, now: int) -> list:
        if self.coordinator_lost:      # join once it is found (by the lookup in flight, if any)
            self.coordinator_lost, self.next_heartbeat_ms = False, None
            self.state = State.FINDING if self.finding else State.UNJOINED
            return self.tick(now)
        self.state = State.JOINING
        metadata = self._subscription_bytes()
        return [Send("JoinGroup", {
            "group_id": self.config.group_id,
            "session_timeout_ms": self.config.session_timeout_ms,
            "rebalance_timeout_ms": self.config.rebalance_timeout_ms,
            "member_id": self.member_id, "group_instance_id": self.config.group_instance_id,
            "protocol_type": "consumer",
            "protocols": [(name, metadata) for name in self.config.assignors],
            "reason": self.rejoin_reason})]

    def _sync_request(self, assignments: dict[str, bytes]) -> list:
        self.state = State.SYNCING
        return [Send("SyncGroup", {
            "group_id": self.config.group_id, "generation_id": self.generation,
            "member_id": self.member_id, "group_instance_id": self.config.group_instance_id,
            "protocol_type": "consumer", "protocol_name": self.protocol,
            "assignments": assignments})]

    def _assign_and_sync(self, now: int) -> list:
        assignor = get_assignor(self.protocol)
        counts = {t: self.metadata[t] for t in self.watched_topics() if t in self.metadata}
        try:
            plan = assignor.assign(counts, self.group_members)
        except AssignmentError as exc:
            log.warning("assignment failed, rejoining: %s", exc)
            return self._request_rejoin(f"assignment failed: {exc}", now)
        self.group_assigned = frozenset(p for parts in plan.values() for p in parts)
        if assignor.rebalance_protocol == "cooperative":
            # withheld partitions are still owned by their previous member this round
            self.group_assigned |= frozenset(p for m in self.group_members
                                             for p in m.owned_partitions)
        baseline = baseline_bytes(counts)
        return self._sync_request({
            member_id: assignment_bytes(parts, baseline if member_id == self.member_id else None)
            for member_id, parts in plan.items()})

    def _restore_baseline(self, assignment: bytes) -> bool:
        """After a KIP-814 rejoin: the partition counts this member assigned against, from
        its own stored assignment. True if the topics it watches differ from them now (when
        their metadata is known; otherwise on_metadata finds out)."""
        try:
            counts = read_baseline(decode_assignment(assignment).user_data)
        except ConsumerProtocolError:
            counts = None
        if counts is None:   # assigned by someone else: the partitions as they are now
            watched = self.watched_topics()
            if all(t in self.metadata for t in watched):
                self.baseline_pending = False
                self.group_assigned = frozenset(
                    (t, p) for t in watched for p in range(self.metadata[t]))
            return False
        self.baseline_pending = False
        watched = self.watched_topics()
        self.group_assigned = frozenset(
            (t, p) for t in watched for p in range(counts.get(t, 0)))
        return all(t in self.metadata for t in watched) and self._assignment_outdated()

    def _assignment_outdated(self) -> bool:
        if self.group_assigned is None:
            return False
        wanted = set()
        for member in self.group_members:
            for topic in member.topics:
                wanted.update((topic, p) for p in range(self.metadata.get(topic, 0)))
        return wanted != set(self.group_assigned)

    def _request_rejoin(self, reason: str | None, now: int) -> list:
        if self.state in (State.FATAL, State.CLOSED):
            return []
        self.rejoin_reason = reason
        if self.state in AWAITING_CALLBACK:
            return []   # the JoinGroup (or the LeaveGroup) already follows the callback
        actions: list = []
        if not self._cooperative():
            actions += self._give_up_partitions(Revoked)  # eager: revoke all before rejoining
        if actions and self.state in (State.STABLE, State.UNJOINED, State.FINDING):
            return actions + self._rejoin_after_revocation(now)
        if self.state in (State.STABLE, State.SYNCING, State.AWAITING_METADATA):
            return actions + self._join_request(now)
        if self.state is State.UNJOINED:
            return actions + self.tick(now)
        return actions  # FINDING / JOINING: the answer in flight moves things on

    def _rejoin_after_revocation(self, now: int) -> list:
        """The Revoked just emitted runs the application's callback; until it returns the
        member heartbeats on (it is still a member of its generation), then rejoins. Without a
        coordinator (UNJOINED, FINDING) it looks one up meanwhile, and heartbeats once found;
        a STABLE member whose coordinator is lost goes on with the lookup it has."""
        if self.state is not State.STABLE:
            self._lookup_while_waiting(now)
        elif self.next_heartbeat_ms is None and not self.coordinator_lost:
            # e.g. the heartbeat answer that asked for this
            self.next_heartbeat_ms = now + self.config.heartbeat_interval_ms
        self.state = State.REVOKING
        return [RejoinWhenRevoked()]

    def _lookup_while_waiting(self, now: int) -> None:
        """UNJOINED or FINDING, about to wait for a callback: the lookup in flight, or one now
        (or when the backoff ends), finds the coordinator the callback's commits need."""
        self.coordinator_lost, self.next_heartbeat_ms = True, None
        if not self.finding and self.retry_at_ms is None:
            self.retry_at_ms = now

    def _prepare_leaving(self, send_leave: bool, now: int) -> list:
        """Give the partitions up first (Revoked as a member of its generation; Lost between
        generations, where a commit is refused anyway), heartbeating while the callback runs."""
        if self.state is State.LEAVING:
            return []
        if self.state in (State.FATAL, State.CLOSED):
            self.state = State.CLOSED
            return []
        self.send_leave = send_leave
        in_generation = self.generation >= 0 and self.state not in REBALANCING
        actions = self._give_up_partitions(Revoked if in_generation else Lost)
        if self.state in (State.UNJOINED, State.FINDING) and actions and in_generation:
            self._lookup_while_waiting(now)
        elif self.state not in HEARTBEATING or not in_generation:
            self.next_heartbeat_ms = None
        self.state = State.LEAVING
        if not actions:
            return self.finish_leaving(now)
        return actions + [LeaveWhenRevoked()]

    def _lose_membership(self, error: ErrorCode, now: int) -> list:
        actions = self._give_up_partitions(Lost)
        if error is E.unknown_member_id:
            self.member_id = ""
        self.generation = -1
        self.rejoin_reason = f"{error.name}: rejoining"
        if self.state in AWAITING_CALLBACK:
            # no longer a member: nothing to keep alive; the JoinGroup that follows the
            # callback asks for a new membership
            self.next_heartbeat_ms = None
            return actions
        return actions + self._join_request(now)

    def _give_up_partitions(self, kind) -> list:
        if kind is Lost:
            self.claimed, self.claimed_generation = (), -1
        if not self.owned:
            return []
        given_up, self.owned = self.owned, ()
        return [kind(given_up)]

    def _coordinator_gone(self, now: int) -> list:
        if self.state in (State.FATAL, State.CLOSED):
            return []
        if self.state in HEARTBEATING:
            # a member of its generation only forgets the coordinator: it keeps its member id,
            # generation and partitions, looks the coordinator up again after the backoff and
            # heartbeats on once it is found (Kafka's markCoordinatorUnknown, then its heartbeat
            # thread's lookup); the answer decides whether to rejoin. A JoinGroup or LeaveGroup
            # still waits for any callback running.
            self.coordinator_lost, self.next_heartbeat_ms = True, None
            self.retry_at_ms = now + self.config.retry_backoff_ms
            return []
        self.state = State.UNJOINED
        return self._retry_later(now)

    def _retry_later(self, now: int) -> list:
        self.state = State.UNJOINED
        self.retry_at_ms = now + self.config.retry_backoff_ms
        return []

    def _leave_request(self) -> list:
        if not self.member_id:
            return []
        return [Send("LeaveGroup", {"group_id": self.config.group_id, "members": [
            (self.member_id, self.config.group_instance_id, "the consumer is closing")]})]

    def _fail(self, error: ErrorCode, message: str, operation: str = "") -> list:
        self.state = State.FATAL
        self.fatal = Fatal(error, message, operation)
        actions = self._give_up_partitions(Lost)
        return actions + [self.fatal]
