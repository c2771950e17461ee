"""The contract every partition log keeps, on disk or in memory.

A partition log stores record batches (magic v2) exactly as producers sent them, except that the
broker assigns the base offset (the first 8 bytes of the batch) and the partition leader epoch
(bytes 12-16, always 0 here). Neither field is covered by the batch CRC, so stored batches keep the
producer's CRC and fetchers can verify it end to end.

Offsets are dense: a batch whose lastOffsetDelta is d occupies offsets base .. base+d, and the
next batch starts at base+d+1. There are no replicas, so the high watermark is the log end offset.
The one exception is compaction (compacted topics only, roster.log.compaction): it removes records
but never renumbers the rest, so closed segments of a compacted log may have gaps, and a read at
an offset inside a gap returns the batches after it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from roster.frozen import frozen

if TYPE_CHECKING:  # batch.py and compaction.py import this module
    from roster.log.batch import BatchHeader
    from roster.log.compaction import CleanerSettings


class LogError(Exception):
    """Base class of the errors a partition log raises."""


class OffsetOutOfRange(LogError):
    """A read asked for an offset below the log start or above the log end."""


class CorruptBatch(LogError):
    """A batch handed to append() is not a well-formed magic-v2 batch with a matching CRC32C."""


class RecordTooLarge(LogError):
    """A batch handed to append() is larger than max.message.bytes."""


class LogStorageError(LogError):
    """The storage failed (disk full, I/O error). The log is unchanged as far as readers can tell."""


@frozen
class LogConfig:
    """Per-partition settings, Kafka's topic-level names in comments."""

    segment_bytes: int = 1 << 30            # segment.bytes
    # segment.ms (for compacted topics at most max.compaction.lag.ms, Kafka's maxSegmentMs);
    # the largest long: never roll by time
    segment_ms: int = 2**63 - 1
    retention_ms: int = 7 * 24 * 3600_000    # retention.ms; -1 = keep forever
    retention_bytes: int = -1                # retention.bytes; -1 = no size limit
    index_interval_bytes: int = 4096         # index.interval.bytes
    max_message_bytes: int = 1048588         # max.message.bytes (largest batch accepted)


@frozen
class AppendResult:
    base_offset: int        # offset assigned to the first record of the batch
    last_offset: int        # offset of the last record of the batch
    max_timestamp: int      # the batch's maxTimestamp field (CreateTime)


@frozen
class TimestampLookup:
    offset: int
    timestamp: int


@frozen
class CleaningStatus:
    """How much of a log compaction could clean now (roster.log.compaction.cleanable_range).
    Only closed segments that are already flushed count. Records from `first_dirty_offset` on
    were written since the last pass; a pass may not go past `first_uncleanable_offset`."""

    first_dirty_offset: int
    clean_bytes: int
    dirty_bytes: int
    first_uncleanable_offset: int = 0
    needs_compaction_now: bool = False   # max.compaction.lag.ms has passed for dirty records

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0

    def should_clean(self, min_cleanable_ratio: float) -> bool:
        """Kafka's test (LogCleanerManager.grabFilthiestCompactedLog): dirty bytes that are more
        than min.cleanable.dirty.ratio of the log, or any that waited max.compaction.lag.ms."""
        if self.dirty_bytes == 0:
            return False
        return self.needs_compaction_now or self.dirty_ratio > min_cleanable_ratio


@frozen
class CleaningStats:
    """What one compaction pass did to the range [start_offset, end_offset)."""

    start_offset: int
    end_offset: int
    records_before: int
    records_after: int
    bytes_before: int
    bytes_after: int
    segments_before: int
    segments_after: int


class CleaningJob(Protocol):
    """The heavy part of one compaction pass, captured on the log's thread and run on another.

    `run()` reads the snapshot, decides what survives and writes the replacement segments where
    no reader looks; it may block. `cancel()` may be called from any thread and makes a running
    `run()` stop early, leaving nothing behind. The log is changed only by `swap_cleaned`.
    """

    first_dirty: int             # where this pass starts mapping
    checkpoint: int              # segments below it may have gaps (raised by run())
    end_offset: int              # the first offset this pass leaves dirty (set by run())
    stats: CleaningStats | None  # set once run() has finished

    def run(self) -> None: ...

    def cancel(self) -> None: ...

    def discard(self) -> None:
        """Remove what run() wrote for a swap that will not happen (never while run() runs)."""


class FlushJob(Protocol):
    """Durability work captured on the event-loop thread and run on another thread.

    `run()` may block (fsync). It must stay safe even if the log rolls or deletes segments
    meanwhile (e.g. by holding duplicated file descriptors).
    """

    end_offset: int  # every offset below this is durable once run() returns

    def run(self) -> None: ...


class PartitionLog(Protocol):
    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def size_bytes(self) -> int: ...

    def append(self, batch: bytes) -> AppendResult:
        """Validate one magic-v2 batch, assign offsets, write it.

        Raises RecordTooLarge (larger than max_message_bytes), CorruptBatch or LogStorageError.

        On any error nothing is written (a partial write is truncated away before raising).
        """

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches starting with the one that contains `offset`.

        Returns b"" at the log end. Returns at least one whole batch when one exists, even if it is
        larger than max_bytes (so a consumer can always make progress); after the first batch it stops
        before a batch that would exceed max_bytes. Raises OffsetOutOfRange outside
        [log_start_offset, log_end_offset].
        """

    def offset_for_timestamp(self, timestamp: int) -> TimestampLookup | None:
        """The first record whose timestamp >= `timestamp`, or None if there is none."""

    # -- transactions (roster.log.producer_state; both log kinds share roster.log.segmented) ---

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest open transaction, else the log end."""

    def read_committed(self, offset: int, max_bytes: int) -> tuple[bytes, list]:
        """read() as a read_committed Fetch sees it: only batches below the last stable offset,
        with the aborted transactions (AbortedTxn) that range overlaps."""

    def producer_entries(self) -> list:
        """The partition's producers with their state (DescribeProducers)."""

    def advance_log_start(self, offset: int) -> int:
        """DeleteRecords: make `offset` the log start if it is above it (durably, before this
        returns) and delete the segments wholly below it. Returns the log start offset; raises
        OffsetOutOfRange past the log end."""

    def reconfigure(self, config: LogConfig) -> None:
        """Apply new settings (a topic's configs were altered) from the next append, roll or
        retention pass on; what is already written stays as it is."""

    def active_batch_headers(self) -> Iterator[BatchHeader]:
        """The headers of the active segment's batches, oldest first, as stored (base offsets
        set): what a restarted broker needs to recognise an idempotent producer's retry of a
        batch written just before it stopped."""

    def max_timestamp(self) -> TimestampLookup | None:
        """The record with the largest timestamp (ListOffsets -3), or None if the log is empty."""

    def prepare_flush(self) -> FlushJob | None:
        """What must be fsynced to make everything appended so far durable, or None if it already is."""

    def flushed(self, job: FlushJob) -> None:
        """Record that `job` completed (updates the recovery point). Called on the log's own thread."""

    def enforce_retention(self, now_ms: int) -> int:
        """Delete whole segments past retention.ms / retention.bytes; returns how many were deleted.

        The log start offset advances to the first remaining offset. The active segment is rolled
        first when it too has expired, so an idle expired log empties out like Kafka's does.
        """

    # -- compaction (used for topics with cleanup.policy=compact) ------------------------------

    def cleaning_status(self, now_ms: int, settings: CleanerSettings) -> CleaningStatus:
        """Clean and dirty bytes of the segments a compaction pass could cover now."""

    def prepare_cleaning(self, now_ms: int, settings: CleanerSettings) -> CleaningJob | None:
        """Snapshot the cleanable segments (closed, flushed, from the log start up to the first
        uncleanable offset), or None when none is dirty.

        One job at a time per log: the caller runs it, then hands it to swap_cleaned().
        """

    def swap_cleaned(self, job: CleaningJob) -> Iterator[Callable[[], None] | None]:
        """Install what `job.run()` wrote, on the log's own thread, step by step.

        Iterate it to the end. It yields None after each change to the files (a point where a
        crash leaves a log that opens correctly) and yields a blocking callable (an fsync) where
        the next change must wait until the previous ones are durable; run that callable on
        another thread before resuming. A job whose run() failed or was cancelled, or a log
        closed meanwhile, yields nothing and the job's leftovers are removed.
        """

    def close(self) -> None:
        """Flush, mark a clean shutdown, release files."""

    def delete(self) -> None:
        """Remove the partition and all its files."""
