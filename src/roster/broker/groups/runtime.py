"""The group shard (coordinator/shard.py) on the broker's one coordinator runtime
(broker/coordinator_runtime.py, which carries out every Result: timers, records, replies,
effects, continuations, the revert of a failed write). What is the groups' own: member ids, the
flight recorder's facts turned into events, the heartbeat's reused Result, TxnOffsetCommit's
write inside a producer's transaction, and loading __consumer_offsets at start.
"""
from __future__ import annotations

import asyncio
import base64
import logging
import time
import uuid
from collections.abc import Callable

from roster.broker.coordinator_runtime import CoordinatorRuntime
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
from roster.observability.flight_recorder import FlightRecorder
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import OffsetCommit, Record

log = logging.getLogger("roster.groups")


def java_member_id(prefix: str) -> str:
    """`<client id or instance id>-<uuid4>`, the shape Java brokers hand out."""
    return f"{prefix}-{uuid.uuid4()}"


def kafka_uuid() -> str:
    """A random id as Kafka's Uuid.toString() writes it (22 url-safe base64 characters): the
    member ids a coordinator hands to ConsumerGroupHeartbeat v0 joiners."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


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


class GroupRuntime(CoordinatorRuntime):
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
        # turns the facts each result carries into the flight recorder's events
        self.flight = FlightRecorder(tuple(t.recorder() for t in self.types
                                           if t.recorder is not None))
        super().__init__(self.shard, sink or MemoryRecordSink(), clock,
                         lambda facts: self.flight.derive(facts))
        self._heartbeat_result = Result()   # see heartbeat
        self._loading: set[int] = set()

    # -- the operations handlers call: each one of the shard's, run and awaited ---------------

    async def join(self, request: JoinRequest) -> JoinReply:
        return await self._call(self.shard.join, request)

    async def sync(self, request: SyncRequest) -> SyncReply:
        return await self._call(self.shard.sync, request)

    def start_join(self, request: JoinRequest) -> JoinReply | asyncio.Future:
        """join() without a coroutine, for the raw JoinGroup handler: the reply when it is
        final at once (a refusal), otherwise a future for it (the join phase's end)."""
        return self.start(lambda now: self.shard.join(request, now), request.token)

    def start_sync(self, request: SyncRequest) -> SyncReply | asyncio.Future:
        """sync() without a coroutine, for the raw SyncGroup handler (see start_join)."""
        return self.start(lambda now: self.shard.sync(request, now), request.token)

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

    def clock_moved(self, seconds: float) -> None:
        """The broker clock jumped (test mode): the due timers fire, then the offset expiry
        pass runs at once instead of at its next interval."""
        super().clock_moved(seconds)
        if self.loaded:
            self.expire_offsets()

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
                                         self.end_transaction, self._replay_offset_commits)
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

    def _replay(self, record: Record) -> None:
        self.shard.replay(record, self.now_ms())

    def _replay_offset_commits(self, commits: list[OffsetCommit]) -> None:
        self.shard.replay_offset_commits(commits, self.now_ms())

    def _replay_transactional(self, producer_id: int, record: Record) -> None:
        self.shard.transaction_written(producer_id, (record,))
