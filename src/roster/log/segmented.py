"""What FileLog and MemoryLog share: a log kept as a list of segments ordered by base offset
(each with base_offset, next_offset, size, max_timestamp and offset_of_max_timestamp) above a
log start offset. The two differ in where a segment's bytes live, not in how the list is read."""
from __future__ import annotations

import bisect
import struct
import time

from roster.log.api import CorruptBatch, LogConfig, OffsetOutOfRange
from roster.log.batch import BATCH_HEADER_SIZE, BatchHeader, batch_extent
from roster.log.policy import aged_out
from roster.log.producer_state import (
    AbortedIndex,
    AbortedTxn,
    PRODUCER_EXPIRATION_MS,
    MarkerError,
    ProducerEntry,
    ProducerState,
    read_marker,
)

NEVER = 2**63 - 1   # segment.ms that never rolls by time
_INT64 = struct.Struct(">q")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class SegmentedLog:
    _segments: list
    _log_start: int
    _config: LogConfig
    # transactions (roster.log.producer_state): replaced by FileLog's recovery on open
    _producers: ProducerState
    _aborted: AbortedIndex

    # -- transactions: the read side -----------------------------------------------------------

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest open transaction, else the high watermark (the log
        end: there are no replicas). read_committed readers see nothing at or past it."""
        return self._producers.last_stable_offset(self._log_start, self.log_end_offset)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions a read_committed fetch of [fetch_offset, upper_bound) must
        report; [] at once when no abort marker lies at or past fetch_offset."""
        if self._aborted.last_marker() < fetch_offset:
            return []
        return self._aborted.overlapping(fetch_offset, upper_bound)

    def read_committed(self, offset: int, max_bytes: int) -> tuple[bytes, list[AbortedTxn]]:
        """A read_committed Fetch: read() cut before the first batch at or past the last stable
        offset, and the aborted transactions of the range it returns (Kafka's
        FetchIsolation.TXN_COMMITTED). Between the LSO and the log end the answer is empty;
        outside the log, OffsetOutOfRange as for read()."""
        stable = self.last_stable_offset
        if self._log_start <= offset <= self.log_end_offset and offset >= stable:
            return b"", []
        data = self.read(offset, max_bytes)
        if stable == self.log_end_offset and self._aborted.last_marker() < offset:
            return data, []  # no open transaction, no abort in range: nothing to walk
        data, upper = _cut_at(data, stable)
        return data, (self.aborted_transactions(offset, upper) if data else [])

    def _stable(self, segments: list) -> list:
        """The leading `segments` wholly below the first open transaction: compaction never
        cleans past it (Kafka's firstUncleanableDirtyOffset)."""
        first = self._producers.first_unstable_offset()
        if first is None:
            return segments
        return [segment for segment in segments if segment.next_offset <= first]

    def _aborted_within(self, segments: list) -> list[AbortedTxn]:
        """The aborted transactions a compaction of `segments` must know: those overlapping
        their range (Kafka's collectAbortedTransactions)."""
        if not segments:
            return []
        return self._aborted.overlapping(segments[0].base_offset, segments[-1].next_offset)

    def aborted_between(self, low: int, high: int) -> list[AbortedTxn]:
        """The aborted transactions whose marker lies in [low, high) (compaction)."""
        return self._aborted.between(low, high)

    def producer_entries(self) -> list[ProducerEntry]:
        """The partition's producers (DescribeProducers)."""
        return list(self._producers.producers.values())

    @staticmethod
    def _check_control(header: BatchHeader, batch) -> None:
        """A control batch must hold a transaction marker roster can read (before it is
        written: producer state is derived from it on every replay)."""
        if header.is_control:
            try:
                read_marker(batch)
            except MarkerError as exc:
                raise CorruptBatch(str(exc)) from exc

    def _expire_producers(self) -> None:
        """At a roll: forget idle producers (ProducerState.expire), so a partition's producer
        table, and each snapshot of it, holds its recent producers only."""
        self._producers.expire(wall_clock_ms(), PRODUCER_EXPIRATION_MS, self._log_start)

    def _track_producer(self, header: BatchHeader, batch) -> AbortedTxn | None:
        """Producer state after an append of `header` (base offset assigned); an abort marker's
        entry is added to the aborted index and returned."""
        txn = self._producers.apply(header, batch)
        if txn is not None:
            self._aborted.add(txn)
        return txn

    def advance_log_start(self, offset: int) -> int:
        """DeleteRecords: readers lose every record below `offset` (the log start never moves
        back, so a lower offset changes nothing). The new start is durable before this returns;
        the segments wholly below it are deleted at once, the one holding it stays. Returns the
        log start offset. OffsetOutOfRange past the log end."""
        self._require_open()
        end = self.log_end_offset
        if offset > end:
            raise OffsetOutOfRange(f"offset {offset} is past the log end {end}")
        if offset > self._log_start:
            self._persist_log_start(offset)
            self._log_start = offset
            self._drop_oldest(bisect.bisect_right(self._segments, offset, key=_base_offset) - 1)
        return self._log_start

    def _persist_log_start(self, offset: int) -> None:
        raise NotImplementedError

    def _drop_oldest(self, count: int) -> None:
        raise NotImplementedError

    def _require_open(self) -> None:
        raise NotImplementedError

    def _aged(self, active, batch_timestamp: int) -> bool:
        """Whether segment.ms makes this batch roll the active segment (policy.aged_out). The
        active segment's first timestamp is read once per segment (`_first_timestamp`); its
        creation time is when this log first looked at it, as Kafka's LogSegment.created."""
        if self._config.segment_ms >= NEVER or active.size == 0:
            return False
        now = wall_clock_ms()
        known = getattr(self, "_rolling_base", None)
        if known is None or known[0] != active.base_offset:
            known = self._rolling_base = (active.base_offset, self._first_timestamp(active), now)
        return aged_out(known[1], batch_timestamp, known[2], now, self._config)

    def _first_timestamp(self, segment) -> int:
        raise NotImplementedError

    def reconfigure(self, config: LogConfig) -> None:
        """Use new settings from now on: appends, rolls and retention passes read them, and
        the segments already written stay as they are."""
        self._config = config

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    def segment_times(self) -> list[tuple[int, int, int]]:
        """(base offset, last modified ms, size in bytes) of each segment, oldest first: what
        ListOffsets v0 answers from (Kafka's legacyFetchOffsetsBefore)."""
        return [(s.base_offset, s.modified_ms(), s.size) for s in self._segments]

    def _segments_from(self, offset: int) -> list:
        """The segments from the one holding `offset` on (a read skips any that end at or
        before where it has got to). OffsetOutOfRange outside [log start, log end]."""
        end = self.log_end_offset
        if not self._log_start <= offset <= end:
            raise OffsetOutOfRange(f"offset {offset} is outside the log [{self._log_start}, {end}]")
        first = bisect.bisect_right(self._segments, offset, key=_base_offset) - 1
        return self._segments[first:]

    def _segment_with_max_timestamp(self):
        """The segment holding the log's largest timestamp (the first one on a tie, as the
        first record wins), or None when no batch carries a timestamp."""
        best = None
        for segment in self._segments:
            if segment.offset_of_max_timestamp >= 0 and \
                    (best is None or segment.max_timestamp > best.max_timestamp):
                best = segment
        return best


def _base_offset(segment) -> int:
    return segment.base_offset


def _cut_at(data: bytes, limit: int) -> tuple[bytes, int]:
    """(the batches of `data` that start below `limit`, the offset after the last of them)."""
    position, end, upper = 0, len(data), -1
    while end - position >= BATCH_HEADER_SIZE:
        (base,) = _INT64.unpack_from(data, position)
        if base >= limit:
            break
        size, upper = batch_extent(data, position)
        position += size
    return (data if position == end else data[:position]), upper
