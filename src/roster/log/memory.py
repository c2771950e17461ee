"""MemoryLog: the PartitionLog contract kept in memory, as a model for tests.

It splits batches into segments exactly as FileLog does (the roll and retention decisions come
from roster.log.policy, compaction's from roster.log.compaction), so that retention, compaction
and reads spanning segment boundaries behave the same. Nothing here is durable; prepare_flush hands
out jobs that do nothing, and every closed segment counts as flushed for compaction.
"""
from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from roster.log.api import (
    AppendResult,
    CleaningStats,
    CleaningStatus,
    LogConfig,
    LogStorageError,
    TimestampLookup,
)
from roster.log.batch import (
    NO_TIMESTAMP,
    BatchHeader,
    batch_extent,
    first_record_at_or_after,
    parse_header,
    set_base_offset,
)
from roster.log.compaction import KEEP, REMOVE, CleanerSettings, Pass, Source, cleanable_range
from roster.log.offset_map import OffsetMap
from roster.log.policy import check_batch, plan_retention, should_roll
from roster.log.producer_state import AbortedIndex, AbortedTxn, ProducerState
from roster.log.segmented import SegmentedLog


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True, eq=False)
class _Segment:
    base_offset: int
    next_offset: int
    bases: list[int] = field(default_factory=list)       # base offset of each batch
    batches: list[bytes] = field(default_factory=list)
    size: int = 0
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    last_modified_ms: int = 0  # stands in for a file's mtime in retention decisions

    def add(self, batch: bytes) -> None:
        """Append a batch whose base offset is set, keeping the segment's end where it is."""
        header = parse_header(batch)
        self.bases.append(header.base_offset)
        self.batches.append(batch)
        self.size += len(batch)
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.base_offset

    def modified_ms(self) -> int:
        return self.last_modified_ms

    def retention_timestamp(self) -> int | None:
        if self.size == 0:
            return None
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms


def _or_minus_one(timestamp: int | None) -> int:
    return -1 if timestamp is None else timestamp


@dataclass(slots=True, eq=False)
class MemoryCleaningJob:
    """Computes the replacement segments; swap_cleaned puts them in place."""

    segments: list[_Segment]           # the snapshot (the log's own objects)
    first_dirty: int
    now_ms: int
    settings: CleanerSettings
    segment_bytes: int
    checkpoint: int = 0
    aborted: Sequence[AbortedTxn] = ()  # the log's aborted transactions overlapping segments
    removed_aborts: list = field(default_factory=list)  # set by run() (compaction.Pass)
    end_offset: int = 0
    replacement: list[_Segment] | None = None
    stats: CleaningStats | None = None
    _cancelled: bool = False

    def cancel(self) -> None:
        self._cancelled = True

    def discard(self) -> None:
        self.replacement = None

    def run(self) -> None:
        offset_map = OffsetMap(self.settings.map_bytes, self.settings.map_load_factor)
        try:
            sources = [Source(s.base_offset, s.next_offset, s.size) for s in self.segments]
            plan = Pass(sources, self.first_dirty, self.now_ms, self.settings,
                        self.segment_bytes, offset_map, self.aborted)
            for segment in self.segments:
                for batch in segment.batches:
                    plan.map_batch(parse_header(batch), batch)
            groups = plan.plan()
            replacement = []
            for group in groups:
                members = self.segments[group.first:group.stop]
                new = _Segment(group.base, group.end,
                               last_modified_ms=max(m.last_modified_ms for m in members))
                changed = len(members) > 1
                for member in members:
                    for batch in member.batches:
                        cleaned = plan.clean_batch(parse_header(batch), batch)
                        changed = changed or cleaned is not batch
                        if cleaned is not None:
                            new.add(bytes(cleaned))
                if not changed:
                    group.action = KEEP
                    replacement.append(members[0])
                elif new.size == 0 and group.first > 0:
                    group.action = REMOVE
                else:
                    replacement.append(new)
            bytes_after = sum(s.size for s in replacement)
            replacement.extend(self.segments[groups[-1].stop if groups else 0:])
            if self._cancelled:
                return
            self.replacement = replacement
            self.checkpoint = max(self.checkpoint, groups[-1].end if groups else 0)
            self.end_offset = plan.end_offset
            self.removed_aborts = plan.removed_aborts
            self.stats = plan.stats(groups, bytes_after)
        finally:
            offset_map.close()


@dataclass(slots=True)
class NoopFlushJob:
    end_offset: int

    def run(self) -> None:
        pass


class MemoryLog(SegmentedLog):
    def __init__(self, config: LogConfig, clock: Callable[[], int] = wall_clock_ms) -> None:
        """`clock` gives milliseconds; it dates appends for segments whose records carry no
        timestamps, the way a file's modification time does for FileLog."""
        self._config = config
        self._clock = clock
        self._segments = [_Segment(0, 0)]
        self._log_start = 0
        self._durable_offset = 0
        self._cleaned_to = 0
        self._first_dirty = 0
        self._closed = False
        self._producers = ProducerState()
        self._aborted = AbortedIndex()

    def __repr__(self) -> str:
        return f"MemoryLog(offsets {self.log_start_offset}..{self.log_end_offset})"

    def append(self, batch: bytes) -> AppendResult:
        self._require_open()
        header = check_batch(batch, self._config)
        self._check_control(header, batch)
        base = self.log_end_offset
        stored = set_base_offset(batch, base)
        last_offset = base + header.last_offset_delta
        active = self._segments[-1]
        if should_roll(active.size, active.base_offset, len(stored), last_offset, self._config,
                       self._aged(active, header.max_timestamp)):
            active = self._roll()
        active.bases.append(base)
        active.batches.append(stored)
        active.size += len(stored)
        active.next_offset = last_offset + 1
        active.last_modified_ms = self._clock()
        if header.max_timestamp > active.max_timestamp:
            active.max_timestamp = header.max_timestamp
            active.offset_of_max_timestamp = base
        if header.producer_id >= 0:
            header.base_offset = base
            self._track_producer(header, batch)
        return AppendResult(base, last_offset, header.max_timestamp)

    def read(self, offset: int, max_bytes: int) -> bytes:
        self._require_open()
        segments = self._segments_from(offset)
        chunks: list[bytes] = []
        taken = 0
        for segment in segments:
            if offset >= segment.next_offset:
                continue
            start = max(bisect.bisect_right(segment.bases, offset) - 1, 0)
            for batch in segment.batches[start:]:
                if batch_extent(batch)[1] <= offset:
                    continue  # a batch before a gap left by compaction
                if chunks and taken + len(batch) > max_bytes:
                    return b"".join(chunks)
                chunks.append(batch)
                taken += len(batch)
                if taken >= max_bytes:
                    return b"".join(chunks)
        return b"".join(chunks)

    def active_batch_headers(self) -> Iterator[BatchHeader]:
        self._require_open()
        for batch in self._segments[-1].batches:
            yield parse_header(batch)

    def offset_for_timestamp(self, timestamp: int) -> TimestampLookup | None:
        self._require_open()
        for segment in self._segments:
            if segment.max_timestamp < timestamp:
                continue
            for batch in segment.batches:
                if parse_header(batch).max_timestamp >= timestamp:
                    found = first_record_at_or_after(batch, timestamp)
                    if found is not None:
                        return TimestampLookup(*found)
        return None

    def max_timestamp(self) -> TimestampLookup | None:
        self._require_open()
        best = self._segment_with_max_timestamp()
        if best is None:
            return None
        batch = best.batches[bisect.bisect_left(best.bases, best.offset_of_max_timestamp)]
        found = first_record_at_or_after(batch, best.max_timestamp)
        if found is None:  # no record carries the batch's maxTimestamp; FileLog does the same
            found = (parse_header(batch).last_offset, best.max_timestamp)
        return TimestampLookup(*found)

    def prepare_flush(self) -> NoopFlushJob | None:
        self._require_open()
        end = self.log_end_offset
        return NoopFlushJob(end) if end > self._durable_offset else None

    def flushed(self, job: NoopFlushJob) -> None:
        self._durable_offset = max(self._durable_offset, job.end_offset)

    def enforce_retention(self, now_ms: int) -> int:
        self._require_open()
        plan = plan_retention([(s.size, s.retention_timestamp()) for s in self._segments],
                              now_ms, self._config)
        if plan.delete == 0:
            return 0
        if plan.roll_first:
            self._roll()
        del self._segments[:plan.delete]
        self._log_start = max(self._log_start, self._segments[0].base_offset)
        self._aborted.drop_before(self._segments[0].base_offset)
        return plan.delete

    def _persist_log_start(self, offset: int) -> None:
        pass  # nothing outlives the process

    def _drop_oldest(self, count: int) -> None:
        del self._segments[:max(count, 0)]
        self._aborted.drop_before(self._segments[0].base_offset)

    def _sources(self, segments: list[_Segment]) -> list[Source]:
        return [Source(s.base_offset, s.next_offset, s.size,
                       _or_minus_one(s.retention_timestamp()),
                       parse_header(s.batches[0]).max_timestamp if s.batches else -1)
                for s in segments]

    def cleaning_status(self, now_ms: int, settings: CleanerSettings) -> CleaningStatus:
        self._require_open()
        return cleanable_range(self._sources(self._stable(self._segments[:-1])),
                               self._first_dirty, self.log_start_offset, now_ms, settings)

    def prepare_cleaning(self, now_ms: int, settings: CleanerSettings
                         ) -> MemoryCleaningJob | None:
        self._require_open()
        status = self.cleaning_status(now_ms, settings)
        if status.dirty_bytes == 0:
            return None
        segments = [s for s in self._segments[:-1]
                    if s.base_offset < status.first_uncleanable_offset]
        return MemoryCleaningJob(segments, status.first_dirty_offset, now_ms, settings,
                                 self._config.segment_bytes, checkpoint=self._cleaned_to,
                                 aborted=self._aborted_within(segments))

    def swap_cleaned(self, job: MemoryCleaningJob) -> Iterator[None]:
        """A generator like FileLog's, with no steps to yield: the swap happens at once."""
        count = len(job.segments)
        if job.replacement is not None and not self._closed and \
                self._segments[:count] == job.segments and len(self._segments) > count:
            self._aborted.remove(job.removed_aborts)
            self._segments[:count] = job.replacement
            self._cleaned_to = max(self._cleaned_to, job.checkpoint)
            self._first_dirty = max(self._first_dirty, job.end_offset)
        yield from ()

    def close(self) -> None:
        self._closed = True

    def delete(self) -> None:
        self._closed = True
        self._segments = [_Segment(self.log_end_offset, self.log_end_offset)]

    def _first_timestamp(self, segment: _Segment) -> int:
        return parse_header(segment.batches[0]).max_timestamp

    def _roll(self) -> _Segment:
        self._expire_producers()
        segment = _Segment(self.log_end_offset, self.log_end_offset)
        self._segments.append(segment)
        return segment

    def _require_open(self) -> None:
        if self._closed:
            raise LogStorageError("the log is closed")
