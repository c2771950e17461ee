"""Idempotent producers: producer ids, and the per-partition sequence checks that make retries safe.

A producer with an id numbers its batches per partition. A retried batch that was already
written is answered as the original was instead of being written twice; a batch that skips
sequence numbers is refused with OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is fenced.

The answer to a duplicate is Kafka's (UnifiedLog.append with a duplicate found in the producer's
last five BatchMetadata): the original batch's base offset, and as log_append_time the stored
batch's maxTimestamp -- the broker's time under LogAppendTime, but the batch's largest create
time under CreateTime, where the first answer said -1 (Kafka does not tell the two apart here).

Producer ids are handed out from blocks whose end is persisted before use, so an id is never
reused after a restart. Sequence state is kept in memory and rebuilt at start from the batches
of each partition's active segment (restore), so a retry of a batch written just before a
restart or a crash is still answered with its offset. A producer whose last batch is in an
older segment has no state after a restart and is accepted at whatever sequence it sends next,
as Kafka accepts producers it has no state for. docs/durability.md says so.
"""
from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from roster.frozen import frozen
from roster.log.api import AppendResult
from roster.log.files import durable_replace
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.producers")

NO_PRODUCER = -1
REMEMBERED_BATCHES = 5  # Kafka keeps the last five batches per producer for duplicate detection
BLOCK = 1000
INT32_MAX = 2**31 - 1


class ProducerIds:
    """Producer ids, handed out from blocks whose end is durable (durable_replace: the file and
    its directory fsynced) before any id of the block is: after a crash or a power loss the
    next start begins past every id ever handed out.

    The next block is reserved ahead, on a worker thread, while half of the current one is
    left, so `allocate` (called on the event loop, by InitProducerId and the transaction
    coordinator) never waits for a disk; only if a whole half block goes before that write is
    done does it wait for it."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / "producer-id-block"
        start = int(self._path.read_text()) if self._path.exists() else 0
        self._next = self._end = start
        self._reserving: Future | None = None   # the block ahead being made durable
        self._reserving_end = start
        self._reserve(start + BLOCK)   # at start, before the loop serves

    def allocate(self) -> int:
        self._settle(wait=False)
        if self._next >= self._end:   # the block ahead is not durable yet: wait for it
            self._settle(wait=True)
            if self._next >= self._end:
                self._reserve(self._next + BLOCK)
        producer_id = self._next
        self._next += 1
        if self._reserving is None and self._end - self._next < BLOCK // 2:
            self._reserving_end = self._end + BLOCK
            self._reserving = _writer().submit(self._reserve_end, self._reserving_end)
        return producer_id

    def _settle(self, wait: bool) -> None:
        reserving = self._reserving
        if reserving is None or not (wait or reserving.done()):
            return
        self._reserving = None
        try:
            reserving.result()
        except OSError as exc:   # tried again, in allocate, when the block runs out
            log.error("cannot reserve producer ids up to %d: %s", self._reserving_end, exc)
        else:
            self._end = max(self._end, self._reserving_end)

    def _reserve(self, end: int) -> None:
        self._reserve_end(end)
        self._end = end

    def _reserve_end(self, end: int) -> None:
        durable_replace(self._path, str(end).encode())


_WRITER: ThreadPoolExecutor | None = None


def _writer() -> ThreadPoolExecutor:
    """One worker thread for every broker's producer-id writes (one at a time per broker)."""
    global _WRITER
    if _WRITER is None:
        _WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="producer-ids")
    return _WRITER


@dataclass(slots=True)
class _Producer:
    epoch: int
    last_sequence: int
    batches: deque = field(default_factory=lambda: deque(maxlen=REMEMBERED_BATCHES))


@frozen
class Verdict:
    error: ErrorCode = ErrorCode.none
    # this very batch is already in the log, as the log took it (Kafka's BatchMetadata): its
    # offsets and maxTimestamp, the log append time under LogAppendTime
    duplicate_of: AppendResult | None = None


def _next_sequence(sequence: int) -> int:
    return 0 if sequence == INT32_MAX else sequence + 1


class SequenceTable:
    """Sequence state of every idempotent producer, per partition."""

    def __init__(self) -> None:
        self._states: dict[tuple, dict[int, _Producer]] = {}

    def check(self, partition_key: tuple, header) -> Verdict:
        if header.producer_id == NO_PRODUCER:
            return Verdict()
        state = self._states.get(partition_key, {}).get(header.producer_id)
        if state is None:
            return Verdict()
        if header.producer_epoch < state.epoch:
            return Verdict(ErrorCode.invalid_producer_epoch)
        if header.producer_epoch > state.epoch:
            ok = header.base_sequence == 0
            return Verdict() if ok else Verdict(ErrorCode.out_of_order_sequence_number)
        last_sequence = header.base_sequence + header.last_offset_delta
        for first, last, written in state.batches:
            if (first, last) == (header.base_sequence, last_sequence):
                return Verdict(duplicate_of=written)
        if header.base_sequence != _next_sequence(state.last_sequence):
            return Verdict(ErrorCode.out_of_order_sequence_number)
        return Verdict()

    def restore(self, partition_key: tuple, stored_headers: Iterable) -> int:
        """Rebuild a partition's producers from batches already in its log, oldest first (the
        headers carry their base offsets). Returns how many idempotent batches there were."""
        restored = 0
        for header in stored_headers:
            # a transaction marker carries the producer's id but no sequence (-1)
            if header.producer_id != NO_PRODUCER and not header.is_control:
                self.record(partition_key, header, AppendResult(
                    header.base_offset, header.last_offset, header.max_timestamp))
                restored += 1
        return restored

    def record(self, partition_key: tuple, header, written: AppendResult) -> None:
        """Remember a batch the log took: `header` as produced, `written` what the log made
        of it (offsets and the stored maxTimestamp)."""
        if header.producer_id == NO_PRODUCER:
            return
        producers = self._states.setdefault(partition_key, {})
        state = producers.get(header.producer_id)
        if state is None or header.producer_epoch != state.epoch:
            state = producers[header.producer_id] = _Producer(header.producer_epoch, -1)
        state.last_sequence = header.base_sequence + header.last_offset_delta
        state.batches.append((header.base_sequence, state.last_sequence, written))
