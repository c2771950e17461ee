"""The edge around the pure group shard (coordinator/shard.py): it supplies time and member ids,
runs timers on the event loop, writes the records an operation produced, releases replies to the
requests waiting on them, and hands a failed write's changes back to the shard to revert.

Everything runs on the event loop thread, and each coordinator call runs to completion without
awaiting, so group logic never sees concurrent changes and needs no locks. A reply that is part of
a result with records is released only after those records are written.
"""
from __future__ import annotations

import asyncio
import base64
import itertools
import logging
import time
import uuid
from collections.abc import Callable

from roster.broker.groups.timer_queue import TimerQueue
from roster.coordinator.config import GroupConfig
from roster.coordinator.group_type import GroupTypeRegistration
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
from roster.coordinator.shard import GroupShard
from roster.group_types import with_built_in
from roster.observability.after_write import EventsAfterWrites
from roster.observability.flight_recorder import FlightRecorder
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import Record

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

    def write(self, records: list[Record], done: Callable[[ErrorCode | None], None],
              revert: Callable[[], None] | None = None) -> None:
        self.records.extend(records)
        done(None)

    async def write_transactional(self, group_id: str, records: list[Record], producer_id: int,
                                  producer_epoch: int) -> ErrorCode | None:
        self.records.extend(records)
        return None

    async def load(self, partition: int, apply: Callable[[Record], None], *hooks) -> int:
        return 0


class _Reverted:
    """A written result's two callbacks for the sink: `revert` puts its changes back (the sink
    calls it for every operation failing together, newest first, before answering any of them:
    broker/groups/group_log.py), `released` answers and continues it. A sink that fails one write at a
    time may skip `revert`: `released` reverts first if it was not called."""

    __slots__ = ("_runtime", "_result", "_done")

    def __init__(self, runtime: GroupRuntime, result: Result) -> None:
        self._runtime = runtime
        self._result = result
        self._done = False

    def revert(self) -> None:
        if not self._done:
            self._done = True
            if self._result.changes:
                self._runtime.shard.revert(self._result.changes, self._runtime.now_ms())

    def released(self, error: ErrorCode | None) -> None:
        if error is not None:
            self.revert()
        self._runtime._release(self._result, error)


class GroupRuntime:
    """The runtime around the pure GroupShard (coordinator/shard.py), which decides everything
    about groups and offsets: this keeps the clock, member ids, reply tokens, timers, the
    durable sink and loading, and publishes the flight recorder's events once durable."""

    def __init__(self, config: GroupConfig, sink=None,
                 clock: Callable[[], float] = time.time,
                 new_member_id: Callable[[str], str] = java_member_id,
                 settings: dict | None = None,
                 topics=None, expected=None,
                 group_types: tuple[GroupTypeRegistration, ...] = ()) -> None:
        """`group_types`: types beyond the built-in ones (GroupTypeRegistration), asked first;
        with the built-in ones (roster/group_types.py, registered the same way) each reaches
        the shard, the flight recorder and, for the effects it asks for, the handlers in
        `effects` (Broker fills them in, bound to itself). `settings`: type name -> its own
        settings (roster.group_types.settings)."""
        self.types = with_built_in(group_types)
        self.shard = GroupShard(config, new_member_id, self.types, kafka_uuid, settings,
                                topics=topics, expected=expected)
        # effect class -> handler(effect), run once the result asking for it is durable
        self.effects: dict[type, Callable[[object], None]] = {}
        self.sink = sink or MemoryRecordSink()
        self._clock = clock
        self._timers = TimerQueue(self.now_ms, self._fire)
        self._waiting: dict[int, asyncio.Future] = {}
        self._running: int | None = None  # the token of the operation being applied right now
        self._running_reply: object = _NO_REPLY  # its reply, when released while it is applied
        self._tokens = itertools.count(1)
        self._heartbeat_result = Result()   # see heartbeat
        self._loading: set[int] = set()
        # where the flight recorder's events go (observability/event_log.py); None: dropped
        self.on_events: Callable[[list], None] | None = None
        self._events = EventsAfterWrites(self._publish_events)  # once their records are durable
        # turns the facts each result carries into the events above (flight_recorder.py)
        self.flight = FlightRecorder(tuple(t.recorder() for t in self.types
                                           if t.recorder is not None))

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- the operations handlers call: each one of the shard's, run and awaited ---------------

    async def join(self, request: JoinRequest) -> JoinReply:
        return await self._call(self.shard.join, request)

    async def sync(self, request: SyncRequest) -> SyncReply:
        return await self._call(self.shard.sync, request)

    async def leave(self, request: LeaveRequest) -> LeaveReply:
        return await self._call(self.shard.leave, request)

    async def commit_offsets(self, request: CommitRequest) -> CommitReply:
        return await self._call(self.shard.commit_offsets, request)

    def fetch_offsets(self, group_id: str, wanted: list[tuple[str, int]] | None,
                      require_stable: bool = False):
        return self.shard.fetch_offsets(group_id, wanted, require_stable)

    async def txn_commit_offsets(self, request: CommitRequest, producer_id: int,
                                 producer_epoch: int) -> CommitReply:
        """TxnOffsetCommit: checked by the shard, written in the producer's own transactional
        batch, then pending until the transaction's marker (end_transaction)."""
        result = Result()
        answers, written = self.shard.txn_commit_offsets(request, self.now_ms(), result)
        self.apply(result)   # a member's commit moves its session timer
        if not written:
            return CommitReply(answers)
        error = await self.sink.write_transactional(request.group_id, list(written),
                                                    producer_id, producer_epoch)
        return self.shard.txn_offsets_written(producer_id, answers, written, error)

    def end_transaction(self, producer_id: int, commit: bool) -> None:
        """A transaction marker is durable in __consumer_offsets (the transaction runtime's
        hook, broker/transactions/runtime.py)."""
        self.shard.end_transaction(producer_id, commit, self.now_ms())

    def fetch_refused(self, group_id: str, member_id: str | None, epoch: int) -> ErrorCode | None:
        """OffsetFetch v9+ from a consumer group member: its member id and epoch checked."""
        return self.shard.fetch_refused(group_id, member_id, epoch)

    async def delete_offsets(self, group_id: str,
                             partitions: list[tuple[str, int]]) -> OffsetDeleteReply:
        token = self.new_token()
        return await self.run(lambda now: self.shard.delete_offsets(
            group_id, partitions, now, token), token)

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        token = self.new_token()
        return await self.run(lambda now: self.shard.delete_groups(group_ids, now, token), token)

    def expire_offsets(self) -> None:
        self.apply(self.shard.expire_offsets(self.now_ms()))

    def describe(self, group_id: str):
        return self.shard.describe(group_id)

    def list_groups(self, states: set[str] | None,
                    types: set[str] | None) -> list[tuple[str, str, str, str]]:
        return self.shard.list_groups(states, types)

    def view(self, group_id: str):
        """The group as its type draws it for the console (GroupShard.view), or None."""
        return self.shard.view(group_id)

    def overview(self) -> list:
        """Every live group of every type (GroupShard.overview): the console and /metrics."""
        return self.shard.overview()

    def family_request(self, family: str, request, act: Callable[[object, int], Result]):
        """A request of a group type's own family (ConsumerGroupHeartbeat: "consumer"), run as
        act(serving type, now) -> Result on the type serving its group id
        (GroupShard.family_request): the reply at once when nothing is written, otherwise a
        future for it (see start). Every type's own APIs take this one path."""
        return self.start(lambda now: self.shard.family_request(family, request, act, now),
                          request.token)

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
        final at once (it writes nothing); only its timer changes, if any, are carried out.
        Its Result is reused while heartbeats leave nothing in it but timers (a fresh one
        costs eight lists per heartbeat)."""
        result = self._heartbeat_result
        try:
            error = self.shard.heartbeat(group_id, generation, member_id, group_instance_id,
                                         self.now_ms(), result)
        except BaseException:
            self._heartbeat_result = Result()   # nothing half-made reaches the next heartbeat
            raise
        if result.records or result.replies or result.after_write or result.facts \
                or result.changes:
            self._heartbeat_result = Result()   # this one is carried out, and may be kept
            self.apply(result)   # e.g. a rebalance it started (coordinator/classic/metadata_watch.py)
        elif result.timers:
            self._timers.apply(result.timers)
            result.timers.clear()
        return error

    def apply(self, result: Result) -> None:
        self._apply_timers(result)
        if result.facts:   # the recorders read them in the order the operations ran
            result.events += self.flight.derive(result.facts)
        if result.records:
            if result.events:   # they wait for the records they describe (after_write.py)
                self._events.hold(result.events)
            reverted = _Reverted(self, result)
            self.sink.write(result.records, reverted.released, reverted.revert)
        else:
            self._release(result, None)

    def _release(self, result: Result, error: ErrorCode | None) -> None:
        """The result's records are written (or failed to be, and its changes are put back):
        answer, then continue."""
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
        if result.effects and error is None:
            for effect in result.effects:
                self.effects[type(effect)](effect)
        for step in result.after_write:
            self.apply(self.shard.write_completed(step, error, self.now_ms()))

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
            count = await self.sink.load(partition, self._replay, self._replay_transactional,
                                         self.end_transaction)
            self._loading.discard(partition)
            groups = [g for g in self.shard.group_ids()
                      if self.sink.partition_for(g) == partition]
            self._recorders_loaded(partition)
            self.apply(self.shard.groups_loaded(groups, self.now_ms()))
            if count:
                log.info("loaded %d records, %d groups from partition %d in %.2f s", count,
                         len(groups), partition, time.monotonic() - started)

    def _recorders_loaded(self, partition: int) -> None:
        """The flight recorders learn the replayed groups' members and partition owners, so
        the first generation after a restart is compared with the last one before it."""
        now = self.now_ms()
        for group_type in self.shard.types:
            recorder = self.flight.recorders.get(group_type.name)
            if recorder is None:
                continue
            for group_id in group_type.group_ids():
                if self.sink.partition_for(group_id) == partition:
                    recorder.loaded(group_type.group(group_id), now)

    def _publish_events(self, events: list) -> None:
        if self.on_events is not None:
            self.on_events(events)

    def _replay(self, record: Record) -> None:
        self.shard.replay(record, self.now_ms())

    def _replay_transactional(self, producer_id: int, record: Record) -> None:
        self.shard.transaction_written(producer_id, (record,))

    def _apply_timers(self, result: Result) -> None:
        if result.timers:  # most results (every heartbeat) set none
            self._timers.apply(result.timers)

    def _fire(self, key: str, event, now: int) -> None:
        try:
            self.apply(self.shard.expire(event, now))
        except Exception:  # a bug must not stop the timer service for every other group
            log.exception("timer %s failed", key)

    def close(self) -> None:
        self._timers.close()
