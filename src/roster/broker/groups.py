"""The edge around the pure coordinator: it supplies time and member ids, runs timers on the event
loop, writes the records an operation produced, and releases replies to the requests waiting on
them.

Everything runs on the event loop thread, and each coordinator call runs to completion without
awaiting, so group logic never sees concurrent changes and needs no locks. A reply that is part of
a result with records is released only after those records are written.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import Callable

from roster.coordinator.config import GroupConfig
from roster.coordinator.coordinator import Coordinator
from roster.coordinator.results import Cancel, Result, Schedule
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import Record

log = logging.getLogger("roster.groups")


def java_member_id(prefix: str) -> str:
    """`<client id or instance id>-<uuid4>`, the shape Java brokers hand out."""
    return f"{prefix}-{uuid.uuid4()}"


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


class _Timer:
    """A coordinator timer: its current deadline, and the loop handle armed for it."""

    __slots__ = ("deadline_ms", "event", "armed_for", "handle")

    def __init__(self, deadline_ms: int, event) -> None:
        self.deadline_ms = deadline_ms
        self.event = event
        self.armed_for = deadline_ms
        self.handle: asyncio.TimerHandle | None = None


class GroupRuntime:
    def __init__(self, config: GroupConfig, sink=None,
                 clock: Callable[[], float] = time.time,
                 new_member_id: Callable[[str], str] = java_member_id) -> None:
        self.coordinator = Coordinator(config, new_member_id)
        self.sink = sink or MemoryRecordSink()
        self._clock = clock
        self._timers: dict[str, _Timer] = {}
        self._waiting: dict[int, asyncio.Future] = {}
        self._tokens = itertools.count(1)
        self._loading: set[int] = set()

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    async def call(self, operation: Callable, make_request: Callable[[int], object]) -> object:
        """Run one coordinator operation and wait for its reply (which may be parked: JoinGroup
        and SyncGroup are long polls). make_request(token) builds the request it answers."""
        return await self.run(lambda token, now: operation(make_request(token), now))

    async def run(self, step: Callable[[int, int], Result]) -> object:
        """step(token, now) -> Result; wait for the reply addressed to that token."""
        token = next(self._tokens)
        future = asyncio.get_running_loop().create_future()
        self._waiting[token] = future
        try:
            self.apply(step(token, self.now_ms()))
            return await future
        finally:
            self._waiting.pop(token, None)

    def apply(self, result: Result) -> None:
        self._apply_timers(result)
        if result.records:
            self.sink.write(result.records, lambda error: self._release(result, error))
        else:
            self._release(result, None)

    def _release(self, result: Result, error: ErrorCode | None) -> None:
        """The result's records are written (or failed to be): answer, then continue."""
        for reply in result.replies:
            future = self._waiting.get(reply.token)
            if future is not None and not future.done():
                future.set_result(reply.body)
            # else: the requester is gone (connection closed); the reply is dropped
        for step in result.after_write:
            self.apply(self.coordinator.write_completed(step, error, self.now_ms()))

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
            count = await self.sink.load(
                partition, lambda record: self.coordinator.replay(record, self.now_ms()))
            self._loading.discard(partition)
            groups = [g for g in self.coordinator.groups
                      if self.sink.partition_for(g) == partition]
            self.apply(self.coordinator.groups_loaded(groups, self.now_ms()))
            if count:
                log.info("loaded %d records, %d groups from partition %d in %.2f s", count,
                         len(groups), partition, time.monotonic() - started)

    def _apply_timers(self, result: Result) -> None:
        now = self.now_ms()
        for op in result.timers:
            timer = self._timers.get(op.key)
            if isinstance(op, Cancel):
                if timer is not None:
                    timer.handle.cancel()
                    del self._timers[op.key]
            elif timer is not None and timer.armed_for <= op.deadline_ms:
                # Pushed later (every heartbeat does this): keep the armed handle; when it
                # fires early it re-arms for the new deadline. Saves a cancel and a new handle
                # per heartbeat.
                timer.deadline_ms, timer.event = op.deadline_ms, op.event
            elif isinstance(op, Schedule):
                if timer is not None:
                    timer.handle.cancel()
                self._timers[op.key] = self._arm(op.key, _Timer(op.deadline_ms, op.event), now)
            else:
                raise TypeError(f"unknown timer operation {op!r}")

    def _arm(self, key: str, timer: _Timer, now: int) -> _Timer:
        timer.armed_for = timer.deadline_ms
        timer.handle = asyncio.get_running_loop().call_later(
            max(timer.deadline_ms - now, 0) / 1000, self._fire, key, timer)
        return timer

    def _fire(self, key: str, timer: _Timer) -> None:
        if self._timers.get(key) is not timer:
            return  # replaced or cancelled meanwhile
        now = self.now_ms()
        if now < timer.deadline_ms:
            self._arm(key, timer, now)
            return
        del self._timers[key]
        event = timer.event
        try:
            self.apply(self.coordinator.expire(event, now))
        except Exception:  # a bug must not stop the timer service for every other group
            log.exception("timer %s failed", key)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.handle.cancel()
        self._timers.clear()
