"""The edge around the pure coordinator: it supplies time and member ids, runs timers on the event
loop, writes the records an operation produced, and releases replies to the requests waiting on
them.

Everything runs on the event loop thread, and each coordinator call runs to completion without
awaiting, so group logic never sees concurrent changes and needs no locks. A reply that is part of
a result with records is released only after those records are written.
"""
from __future__ import annotations

import asyncio
import base64
import dataclasses
import itertools
import logging
import time
import uuid
from collections.abc import Callable

from roster.broker.timer_queue import TimerQueue
from roster.coordinator.config import GroupConfig
from roster.coordinator.consumer import records as consumer_records
from roster.coordinator.consumer.coordinator import ConsumerConfig, ConsumerCoordinator
from roster.coordinator.consumer.model import DictTopicImage
from roster.coordinator.coordinator import Coordinator
from roster.coordinator.messages import (
    CommitReply,
    CommitRequest,
    JoinReply,
    JoinRequest,
    LeaveReply,
    LeaveRequest,
    OffsetDeleteReply,
    SyncReply,
    SyncRequest,
)
from roster.coordinator.results import Result
from roster.observability.after_write import EventsAfterWrites
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import Record, UnknownRecord

log = logging.getLogger("roster.groups")


def java_member_id(prefix: str) -> str:
    """`<client id or instance id>-<uuid4>`, the shape Java brokers hand out."""
    return f"{prefix}-{uuid.uuid4()}"


def kafka_uuid() -> str:
    """A random id as Kafka's Uuid.toString() writes it (22 url-safe base64 characters): the
    member ids a coordinator hands to ConsumerGroupHeartbeat v0 joiners."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


_NO_REPLY = object()


class MemoryRecordSink:
    """Keeps written records in memory: for tests, and brokers run without durable groups."""

    partitions = 1

    def __init__(self) -> None:
        self.records: list[Record] = []

    def partition_for(self, group_id: str) -> int:
        return 0

    def write(self, records: list[Record], done: Callable[[ErrorCode | None], None]) -> None:
        self.records.extend(records)
        done(None)

    async def load(self, partition: int, apply: Callable[[Record], None]) -> int:
        return 0


class GroupRuntime:
    def __init__(self, config: GroupConfig, sink=None,
                 clock: Callable[[], float] = time.time,
                 new_member_id: Callable[[str], str] = java_member_id,
                 consumer_config: ConsumerConfig | None = None) -> None:
        self.coordinator = Coordinator(config, new_member_id)
        # consumer groups (KIP-848) live beside the classic ones, on the same runtime
        self.consumer = ConsumerCoordinator(
            consumer_config, kafka_uuid,
            classic_busy=lambda group_id: bool(getattr(
                self.coordinator.groups.get(group_id), "members", None)))
        # an online upgrade takes a classic group's members into a consumer group
        # (coordinator/consumer/migration.py)
        self.consumer.classic = self.coordinator
        # offset expiry keeps what a consumer group's members subscribe to (expiry.py)
        self.coordinator.consumer_topics = self._consumer_topics
        self.sink = sink or MemoryRecordSink()
        self._clock = clock
        self._timers = TimerQueue(self.now_ms, self._fire)
        self._waiting: dict[int, asyncio.Future] = {}
        self._running: int | None = None  # the token of the operation being applied right now
        self._running_reply: object = _NO_REPLY  # its reply, when released while it is applied
        self._tokens = itertools.count(1)
        self._loading: set[int] = set()
        # where the flight recorder's events go (observability/event_log.py); None: dropped
        self.on_events: Callable[[list], None] | None = None
        self._events = EventsAfterWrites(self._publish_events)  # once their records are durable

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- the operations handlers call ------------------------------------------------------
    # A group id names a classic group or a consumer group (KIP-848); which coordinator owns a
    # request is decided here, once, not in each handler.

    async def join(self, request: JoinRequest) -> JoinReply:
        while self.consumer.groups.get(request.group_id) is not None:
            if self.consumer.serves_classic(request.group_id):
                # a live consumer group takes a classic member in as a classic-protocol member
                # (an online upgrade under way, coordinator/consumer/classic_members.py)
                image = self.coordinator.topics or DictTopicImage()
                return await self.run(
                    lambda now: self.consumer.classic_join(request, image, now), request.token)
            # empty: it gives way to the classic group, as in Kafka, once its deletion is
            # written; a consumer member may have made it again meanwhile: look again
            token = self.new_token()
            deleted = await self.run(
                lambda now, t=token: self.consumer.delete_group(request.group_id, now, t), token)
            if deleted is not ErrorCode.none:   # still there: no classic group beside it
                return JoinReply(error=deleted, member_id=request.member_id)
        return await self._call(self.coordinator.join, request)

    async def sync(self, request: SyncRequest) -> SyncReply:
        if self.consumer.serves_classic(request.group_id):
            return await self._call(self.consumer.classic_sync, request)
        return await self._call(self.coordinator.sync, request)

    async def leave(self, request: LeaveRequest) -> LeaveReply:
        if self.consumer.serves_classic(request.group_id):
            return await self._call(self.consumer.classic_leave, request)
        return await self._call(self.coordinator.leave, request)

    async def commit_offsets(self, request: CommitRequest) -> CommitReply:
        """A consumer group checks the member epoch first (v9+); its offsets are then
        committed like a simple group's (they live beside the group, as in Kafka)."""
        checked = self.consumer.committable(request.group_id, request.member_id,
                                            request.generation, request.api_version)
        if checked is not None and checked is not ErrorCode.none:
            return CommitReply(tuple((o.topic, o.partition, checked) for o in request.offsets))
        if checked is not None:
            request = dataclasses.replace(request, generation=-1, member_id="",
                                          group_instance_id=None)  # a simple commit
        return await self._call(self.coordinator.commit_offsets, request)

    def fetch_offsets(self, group_id: str, wanted: list[tuple[str, int]] | None):
        return self.coordinator.fetch_offsets(group_id, wanted)

    def fetch_refused(self, group_id: str, member_id: str | None, epoch: int) -> ErrorCode | None:
        """OffsetFetch v9+ from a consumer group member: its member id and epoch checked."""
        checked = self.consumer.fetchable(group_id, member_id, epoch)
        return None if checked is ErrorCode.none else checked

    async def delete_offsets(self, group_id: str,
                             partitions: list[tuple[str, int]]) -> OffsetDeleteReply:
        """A consumer group keeps the offsets of the topics its members subscribe to
        (GROUP_SUBSCRIBED_TO_TOPIC); the rest go as a classic group's do."""
        consumer_group = self.consumer.groups.get(group_id)
        kept = []
        if consumer_group is not None and consumer_group.members:
            subscribed = consumer_group.subscribed_names()
            kept = [(t, p, ErrorCode.group_subscribed_to_topic) for t, p in partitions
                    if t in subscribed]
            partitions = [(t, p) for t, p in partitions if t not in subscribed]
        token = self.new_token()
        reply = await self.run(lambda now: self.coordinator.delete_offsets(
            group_id, partitions, now, token), token)
        if reply.error is not ErrorCode.none or not kept:
            return reply
        return OffsetDeleteReply(reply.error, tuple(kept) + reply.partitions)

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        """Only empty groups go. A consumer group's own records go first, then its offsets
        (kept with every group's, in the classic coordinator)."""
        outcome: dict[str, ErrorCode] = {}
        classic = [g for g in group_ids if g not in self.consumer.groups]
        for group_id in [g for g in group_ids if g in self.consumer.groups]:
            token = self.new_token()
            outcome[group_id] = await self.run(
                lambda now, g=group_id, t=token: self.consumer.delete_group(g, now, t), token)
            if outcome[group_id] is ErrorCode.none and group_id in self.coordinator.groups:
                classic.append(group_id)
        # The writes awaited above let other requests run: a group id that a member has made a
        # consumer group again meanwhile keeps its offsets (NON_EMPTY_GROUP, unless this
        # request already deleted the consumer group that was there).
        for group_id in [g for g in classic if g in self.consumer.groups]:
            outcome.setdefault(group_id, ErrorCode.non_empty_group)
            classic.remove(group_id)
        if classic:
            token = self.new_token()
            outcome.update(await self.run(lambda now: self.coordinator.delete_groups(
                classic, now, token), token))
        return outcome

    def describe(self, group_id: str):
        """DescribeGroups: a consumer group is not a classic group (Kafka answers not found)."""
        if group_id in self.consumer.groups:
            return None
        return self.coordinator.describe(group_id)

    def list_groups(self, states: set[str] | None,
                    types: set[str] | None) -> list[tuple[str, str, str, str]]:
        """(group id, protocol type, state, group type) of both kinds of group."""
        listed = [(group_id, protocol_type, state, "classic") for group_id, protocol_type, state
                  in self.coordinator.list_groups(states, types)
                  if group_id not in self.consumer.groups]  # its offsets' holder only
        listed += [(group_id, "consumer", state, "consumer")
                   for group_id, state in self.consumer.list_groups(states, types)]
        return listed

    def steady_consumer_heartbeat(self, group_id: str, member_id: str, epoch: int,
                                  client_id: str, client_host: str, catalog_version: object,
                                  instance_id: str | None) -> int | None:
        """A ConsumerGroupHeartbeat that changes nothing but the member's session (see
        ConsumerCoordinator.steady_heartbeat): the heartbeat interval to answer with, or None
        when it must go through consumer_heartbeat."""
        consumer = self.consumer
        if consumer.steady_heartbeat(group_id, member_id, epoch, client_id, client_host,
                                     catalog_version, self.now_ms(), instance_id) is None:
            return None
        return consumer.config.heartbeat_ms(group_id)

    def consumer_heartbeat(self, request, image) -> object:
        """ConsumerGroupHeartbeat: the reply at once when nothing is written (a steady
        heartbeat), otherwise a future for it (see start)."""
        return self.start(lambda now: self.consumer.heartbeat(request, image, now),
                          request.token)

    def describe_consumer_groups(self, group_ids: list[str], image):
        return self.consumer.describe(group_ids, image)

    async def _call(self, operation: Callable, request) -> object:
        """Run one coordinator operation on `request` and wait for the reply addressed to its
        token (which may be parked: JoinGroup and SyncGroup are long polls)."""
        return await self.run(lambda now: operation(request, now), request.token)

    def new_token(self) -> int:
        """The token a request's reply will be addressed to: every request handed to the
        operations above carries one (`token=groups.new_token()`)."""
        return next(self._tokens)

    async def run(self, step: Callable[[int], Result], token: int) -> object:
        """step(now) -> Result; wait for the reply addressed to `token`."""
        reply = self.start(step, token)
        return await reply if isinstance(reply, asyncio.Future) else reply

    def start(self, step: Callable[[int], Result], token: int) -> object:
        """Apply step(now) -> Result. Returns the reply addressed to `token` when the result
        already holds it (a heartbeat, any rejection: no future, no wait), otherwise a future
        for it (a parked long poll, or a reply waiting for its records' fsync)."""
        self._running, self._running_reply = token, _NO_REPLY
        try:
            self.apply(step(self.now_ms()))
        finally:
            self._running = None
        reply, self._running_reply = self._running_reply, _NO_REPLY
        if reply is not _NO_REPLY:
            return reply
        future = asyncio.get_running_loop().create_future()
        self._waiting[token] = future
        future.add_done_callback(lambda _: self._waiting.pop(token, None))
        return future

    def heartbeat(self, group_id: str, generation: int, member_id: str,
                  group_instance_id: str | None) -> ErrorCode:
        """The busiest operation, without the reply-token round trip: a heartbeat's answer is
        final at once (it writes nothing); only its timer changes, if any, are carried out."""
        result = Result()
        # (the membership test first: the classic heartbeat is the hot path)
        if group_id in self.consumer.groups and self.consumer.serves_classic(group_id):
            error = self.consumer.classic_heartbeat(group_id, generation, member_id,
                                                    group_instance_id, self.now_ms(), result)
        else:
            error = self.coordinator.check_in(group_id, generation, member_id,
                                              group_instance_id, self.now_ms(), result)
        if result.records or result.replies or result.after_write:
            self.apply(result)   # e.g. a rebalance it started (coordinator/metadata_watch.py)
        elif result.timers:
            self._timers.apply(result.timers)
        return error

    def apply(self, result: Result) -> None:
        self._apply_timers(result)
        if result.records:
            if result.events:   # they wait for the records they describe (after_write.py)
                self._events.hold(result.events)
            self.sink.write(result.records, lambda error: self._release(result, error))
        else:
            self._release(result, None)

    def _release(self, result: Result, error: ErrorCode | None) -> None:
        """The result's records are written (or failed to be): answer, then continue."""
        if result.events:
            self._events.release(result.events, error is None)
        for reply in result.replies:
            if reply.token == self._running:
                self._running_reply = reply.body
                continue
            future = self._waiting.get(reply.token)
            if future is not None and not future.done():
                future.set_result(reply.body)
            # else: the requester is gone (connection closed); the reply is dropped
        for step in result.after_write:
            self.apply(self._owner(step).write_completed(step, error, self.now_ms()))

    # -- loading after a restart ---------------------------------------------------------------

    def loading(self, group_id: str) -> bool:
        """True while the partition holding this group is still being replayed."""
        return bool(self._loading) and self.sink.partition_for(group_id) in self._loading

    @property
    def loaded(self) -> bool:
        return not self._loading

    async def load(self) -> None:
        """Replay every partition of the sink; until one is done, its groups are loading."""
        self._loading = set(range(self.sink.partitions))
        for partition in range(self.sink.partitions):
            started = time.monotonic()
            count = await self.sink.load(partition, self._replay)
            self._loading.discard(partition)
            groups = [g for g in self.coordinator.groups
                      if self.sink.partition_for(g) == partition]
            self._recorders_loaded(partition)
            self.apply(self.coordinator.groups_loaded(groups, self.now_ms()))
            self.apply(self.consumer.groups_loaded(
                [g for g in self.consumer.groups if self.sink.partition_for(g) == partition],
                self.now_ms()))
            if count:
                log.info("loaded %d records, %d groups from partition %d in %.2f s", count,
                         len(groups), partition, time.monotonic() - started)

    def _recorders_loaded(self, partition: int) -> None:
        """The flight recorders learn the replayed groups' members and partition owners, so
        the first generation after a restart is compared with the last one before it."""
        now = self.now_ms()
        for group_id, group in self.coordinator.groups.items():
            if self.sink.partition_for(group_id) == partition:
                self.coordinator.recorder.loaded(group)
        for group_id, group in self.consumer.groups.items():
            if self.sink.partition_for(group_id) == partition:
                self.consumer.recorder.loaded(group, now)

    def _publish_events(self, events: list) -> None:
        if self.on_events is not None:
            self.on_events(events)

    def _replay(self, record: Record) -> None:
        key = record.key
        if isinstance(key, UnknownRecord) and key.key_version in consumer_records.TYPES:
            decoded = consumer_records.decode_key(key.key_version, key.raw_key)
            self.consumer.replay(consumer_records.ConsumerRecord(
                decoded, consumer_records.decode_value(decoded, key.raw_value)), self.now_ms())
        else:
            self.coordinator.replay(record, self.now_ms())

    def _consumer_topics(self, group_id: str) -> frozenset[str] | None:
        group = self.consumer.groups.get(group_id)
        return None if group is None else group.subscribed_names()

    def _owner(self, step):
        """Which coordinator a timer event or continuation belongs to."""
        return self.consumer if getattr(step, "consumer", False) else self.coordinator

    def _apply_timers(self, result: Result) -> None:
        if result.timers:  # most results (every heartbeat) set none
            self._timers.apply(result.timers)

    def _fire(self, key: str, event, now: int) -> None:
        try:
            self.apply(self._owner(event).expire(event, now))
        except Exception:  # a bug must not stop the timer service for every other group
            log.exception("timer %s failed", key)

    def close(self) -> None:
        self._timers.close()
