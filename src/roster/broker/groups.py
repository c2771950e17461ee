"""The edge around the pure coordinator: it supplies time and member ids, runs timers on the event
loop, writes the records an operation produced, and releases replies to the requests waiting on
them.

Everything runs on the event loop thread, and each coordinator call runs to completion without
awaiting, so group logic never sees concurrent changes and needs no locks. A reply that is part of
a result with records is released only after those records are written.
"""
from __future__ import annotations

import asyncio
import dataclasses
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


class GroupRuntime:
    def __init__(self, config: GroupConfig, sink=None,
                 clock: Callable[[], float] = time.time,
                 new_member_id: Callable[[str], str] = java_member_id) -> None:
        self.coordinator = Coordinator(config, new_member_id)
        self.sink = sink or MemoryRecordSink()
        self._clock = clock
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._waiting: dict[int, asyncio.Future] = {}
        self._tokens = itertools.count(1)
        self._loading: set[int] = set()

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    async def call(self, operation: Callable, request) -> object:
        """Run one coordinator operation for a request and wait for its reply (which may be
        parked: JoinGroup and SyncGroup are long polls)."""
        return await self.run(
            lambda token, now: operation(dataclasses.replace(request, token=token), now))

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
        loop = asyncio.get_running_loop()
        now = self.now_ms()
        for op in result.timers:
            handle = self._timers.pop(op.key, None)
            if handle is not None:
                handle.cancel()
            if isinstance(op, Schedule):
                delay_s = max(op.deadline_ms - now, 0) / 1000
                self._timers[op.key] = loop.call_later(delay_s, self._fire, op.key, op.event)
            elif not isinstance(op, Cancel):
                raise TypeError(f"unknown timer operation {op!r}")

    def _fire(self, key: str, event) -> None:
        self._timers.pop(key, None)
        try:
            self.apply(self.coordinator.expire(event, self.now_ms()))
        except Exception:  # a bug must not stop the timer service for every other group
            log.exception("timer %s failed", key)

    def close(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
