"""When appended data reaches the disk: group-committed fsyncs and the flush policy.

Appends land in the page cache on the event-loop thread. fsync runs on a worker thread so the
loop keeps serving. Callers that need durability (acks=-1 produce, and later the coordinator's
writes) await `make_durable(log, offset)`; everyone waiting on one log shares the fsync in flight,
and whoever arrives during it rides the next one, so N concurrent producers cost about two fsyncs,
not N. The background policy (`log.flush.interval.ms`, `log.flush.interval.messages`) bounds how
much acks=0/1 data an OS crash can take.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from roster.log.api import LogStorageError, PartitionLog

log = logging.getLogger("roster.durability")


@dataclass(slots=True, eq=False)
class _LogState:
    durable_offset: int = 0
    unflushed_messages: int = 0
    in_flight: asyncio.Future | None = None


class Durability:
    def __init__(self, flush_interval_messages: int, flush_interval_ms: int | None) -> None:
        self._interval_messages = flush_interval_messages
        self._interval_ms = flush_interval_ms
        self._states: dict[PartitionLog, _LogState] = {}

    def _state(self, partition: PartitionLog) -> _LogState:
        state = self._states.get(partition)
        if state is None:
            state = self._states[partition] = _LogState()
        return state

    def forget(self, partition: PartitionLog) -> None:
        self._states.pop(partition, None)

    def appended(self, partition: PartitionLog, messages: int) -> None:
        """Count messages toward log.flush.interval.messages; start a flush when it is reached."""
        state = self._state(partition)
        state.unflushed_messages += messages
        if state.unflushed_messages >= self._interval_messages:
            asyncio.ensure_future(self._flush_quietly(partition))

    async def make_durable(self, partition: PartitionLog, end_offset: int) -> None:
        """Return once every offset below end_offset is on disk. Raises LogStorageError."""
        state = self._state(partition)
        while state.durable_offset < end_offset:
            if state.in_flight is None:
                state.in_flight = asyncio.ensure_future(self._flush_once(partition, state))
            await asyncio.shield(state.in_flight)

    async def _flush_once(self, partition: PartitionLog, state: _LogState) -> None:
        try:
            job = partition.prepare_flush()
            if job is None:
                state.durable_offset = max(state.durable_offset, partition.log_end_offset)
                return
            state.unflushed_messages = 0
            try:
                await asyncio.get_running_loop().run_in_executor(None, job.run)
            except OSError as exc:
                raise LogStorageError(f"fsync failed: {exc}") from exc
            partition.flushed(job)
            state.durable_offset = max(state.durable_offset, job.end_offset)
        finally:
            state.in_flight = None

    async def _flush_quietly(self, partition: PartitionLog) -> None:
        try:
            await self.make_durable(partition, partition.log_end_offset)
        except LogStorageError as exc:
            log.error("background flush failed: %s", exc)

    async def run_periodic(self, partitions) -> None:
        """Flush every log with unflushed data each log.flush.interval.ms (forever; cancel to stop)."""
        if self._interval_ms is None:
            return
        while True:
            await asyncio.sleep(self._interval_ms / 1000)
            for partition in list(partitions()):
                if partition.log_end_offset > self._state(partition).durable_offset:
                    await self._flush_quietly(partition)
