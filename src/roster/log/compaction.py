"""Log compaction ("cleaning") decisions, shared by FileLog and MemoryLog so the model keeps
agreeing with the file log. The rules are Kafka's (storage/.../Cleaner.java, LogCleanerManager):

When a log is cleanable (`cleanable_range`). The *first dirty offset* is where the last pass
stopped (the log start at first). Cleaning may not reach past the *first uncleanable offset*: the
active segment's base, the first segment not yet flushed (roster's: a decision must rest on
records already on disk), and, with min.compaction.lag.ms, the first dirty segment whose largest
timestamp is newer than now - lag. The log is cleaned when the dirty bytes are more than
min.cleanable.dirty.ratio of the whole, or when max.compaction.lag.ms says a dirty segment has
waited too long.

One pass over [log start, first uncleanable):
  1. Map (`map_batch`): the newest offset of every key of the dirty records, in a fixed-size
     OffsetMap. When the map is full the pass maps no further; `end_offset` is then one past the
     last batch it mapped whole, and the records from there on count as dirty for the next pass.
  2. Groups (`plan`): the segments holding offsets below `end_offset`, consecutive ones merged
     while their sizes add up to at most segment.bytes (and their offsets fit a segment's int32
     relative offsets), each rewritten into one segment named after its first.
  3. Rewrite (`clean_batch`), record by record (Cleaner.shouldRetainRecord):
       * records past the map's latest offset are kept;
       * a record without a key is dropped (Kafka counts it as invalid);
       * a record is dropped when the map holds a newer offset for its key;
       * a tombstone (null value) is dropped once its batch's delete horizon has passed
         (KIP-534: the horizon, cleaning time + delete.retention.ms, is stamped on a batch the
         first time it is cleaned with a tombstone in it; see roster.log.batch_records);
       * a batch none of whose records survives is kept empty when it holds a producer's last
         sequence (a producer active within producer.id.expiration.ms) or ends the cleanable
         range, so that offset and sequence information is not lost; otherwise it goes.
     Kept records keep their offsets, timestamps and the batch's lastOffsetDelta.
     Transactions (roster.log.txn_cleaning, Kafka's CleanedTransactionMetadata): aborted
     batches are never mapped in step 1 and removed in step 3; a marker goes once its
     transaction has no data left, after a delete horizon like a tombstone's. A pass never
     reaches the first offset of an open transaction (the log cuts its cleanable range there).

Records in the clean part whose keys the map does not hold are kept: an earlier pass already left
one record per key there.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from roster.frozen import frozen
from roster.log.api import CleaningStats, CleaningStatus, LogStorageError
from roster.log.batch import BatchHeader
from roster.log.batch_records import (
    OFFSET,
    decoded,
    has_delete_horizon,
    payload,
    rebuilt,
    rebuilt_from,
    records,
)
from roster.log.offset_map import OffsetMap
from roster.log.policy import INT32_MAX
from roster.log.producer_state import ABORT, AbortedTxn, read_marker
from roster.log.txn_cleaning import CleanedTransactions

log = logging.getLogger("roster.log")

LONG_MAX = 2**63 - 1
KEEP = "keep"          # the group's single segment is left as it is
REPLACE = "replace"    # the group is rewritten into one segment named after its first
REMOVE = "remove"      # nothing in the group survives: its segments are deleted


class MapTooSmall(LogStorageError):
    """Not even the first dirty batch's keys fit in the offset map: no pass could progress."""


@frozen
class CleanerSettings:
    """A compacted topic's settings (topic-level names; broker defaults log.cleaner.*)."""

    delete_retention_ms: int = 86_400_000        # delete.retention.ms
    min_compaction_lag_ms: int = 0               # min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX        # max.compaction.lag.ms
    min_cleanable_ratio: float = 0.5             # min.cleanable.dirty.ratio
    producer_expiration_ms: int = 86_400_000     # producer.id.expiration.ms
    map_bytes: int = 128 * 1024 * 1024           # log.cleaner.dedupe.buffer.size
    map_load_factor: float = 0.9                 # log.cleaner.io.buffer.load.factor
    io_bytes_per_second: float = float("inf")    # log.cleaner.io.max.bytes.per.second


@frozen
class Source:
    """One closed segment as the cleaner sees it."""

    base: int            # base offset
    end: int             # offset after it: the next segment's base
    size: int            # bytes
    largest_timestamp: int = -1       # largest record timestamp (or its mtime if none)
    first_batch_timestamp: int = -1   # maxTimestamp of its first batch (-1: unknown)


def cleanable_range(closed: Sequence[Source], first_dirty: int, log_start: int, now_ms: int,
                    settings: CleanerSettings) -> CleaningStatus:
    """What a pass could clean now. `closed` are the closed, flushed segments from the log start
    up to the first uncleanable one for roster's own reasons (active, not on disk)."""
    if first_dirty < log_start:  # retention (compact,delete) or DeleteRecords moved the start
        first_dirty = log_start
    uncleanable = closed[-1].end if closed else first_dirty
    lag = max(settings.min_compaction_lag_ms, 0)
    earliest = LONG_MAX
    for source in closed:
        if source.end <= first_dirty:
            continue
        if lag > 0 and source.largest_timestamp > now_ms - lag:
            uncleanable = min(uncleanable, source.base)
            break
        if 0 < source.first_batch_timestamp < earliest:
            earliest = source.first_batch_timestamp
    uncleanable = max(uncleanable, first_dirty)
    clean = sum(s.size for s in closed if s.base < first_dirty)
    cleanable = sum(s.size for s in closed if s.end > first_dirty and s.base < uncleanable)
    clean_until = now_ms - max(settings.max_compaction_lag_ms, 0)
    return CleaningStatus(first_dirty, clean, cleanable, uncleanable, earliest < clean_until)


@dataclass(slots=True)
class Group:
    first: int          # index of its first source
    stop: int           # index after its last source
    action: str
    base: int           # base offset of the segment it becomes
    end: int            # offset after it (the next group's base)


@dataclass(slots=True)
class Pass:
    """The decisions of one pass. Feed every batch of `sources` in order to `map_batch` until it
    returns False; then `plan()`; then run each group's batches through `clean_batch`."""

    sources: Sequence[Source]     # from the log start to the first uncleanable offset
    first_dirty: int
    now_ms: int
    settings: CleanerSettings
    segment_bytes: int
    offset_map: OffsetMap
    # the aborted transactions overlapping the sources (the log's, captured with them)
    aborted: Sequence[AbortedTxn] = ()
    # producer id -> last offset of its last batch seen (producers active within expiration)
    _producer_last: dict[int, int] = field(default_factory=dict)
    _mapping: bool = True
    records_read: int = 0
    records_kept: int = 0
    _mapped_txns: CleanedTransactions | None = None    # step 1's view of the transactions
    _cleaned_txns: CleanedTransactions | None = None   # step 3's
    # (producer id, offset) of each abort marker step 3 removed: the log forgets their
    # aborted-index entries before the swap (a reader would otherwise skip that producer's
    # later batches, never meeting the marker that ends the aborted transaction)
    removed_aborts: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._mapped_txns = CleanedTransactions(self.aborted)
        self._cleaned_txns = CleanedTransactions(self.aborted)

    @property
    def upper_bound(self) -> int:
        return self.sources[-1].end if self.sources else self.first_dirty

    @property
    def end_offset(self) -> int:
        """The first offset this pass leaves dirty."""
        return max(self.offset_map.latest_offset + 1, self.first_dirty)

    # -- pass 1 ------------------------------------------------------------------------------

    def map_batch(self, header: BatchHeader, batch) -> None:
        """Account for one batch (batches must come in offset order, from the log start)."""
        if header.producer_id >= 0 and \
                header.max_timestamp >= self.now_ms - self.settings.producer_expiration_ms:
            self._producer_last[header.producer_id] = header.last_offset
        if not self._mapping or header.last_offset < self.first_dirty:
            return
        if header.is_control:
            self._mapped_txns.marker_may_go(header, batch)
        elif not self._mapped_txns.aborted_data(header):
            first_dirty = self.first_dirty
            keyed = [(record.key, record.offset) for record in _records_of(header, batch) or ()
                     if record.key is not None and record.offset >= first_dirty]
            if keyed:
                keys, offsets = zip(*keyed)
                if self.offset_map.put_all(keys, offsets) < len(keys):
                    self._mapping = False  # full: this batch is left to the next pass
                    self._check_progress(header)
                    return
        self.offset_map.latest_offset = header.last_offset

    @property
    def mapping(self) -> bool:
        return self._mapping

    def _check_progress(self, header: BatchHeader) -> None:
        if self.offset_map.latest_offset < self.first_dirty:
            raise MapTooSmall(
                f"log.cleaner.dedupe.buffer.size is too small: the batch at offset "
                f"{header.base_offset} has more keys than the offset map's "
                f"{self.offset_map.capacity} entries")

    # -- planning ----------------------------------------------------------------------------

    def plan(self) -> list[Group]:
        """Groups of the segments holding offsets below end_offset, each tentatively REPLACE;
        the writer turns a group into KEEP when nothing in it changed, and into REMOVE when
        nothing survives (except the log's first segment, so the log start stays)."""
        end = self.end_offset
        count = sum(1 for source in self.sources if source.base < end)
        limit = min(self.segment_bytes, INT32_MAX)
        groups: list[Group] = []
        first = 0
        while first < count:
            stop, size = first + 1, self.sources[first].size
            while stop < count and size + self.sources[stop].size <= limit and \
                    self.sources[stop].end - 1 - self.sources[first].base <= INT32_MAX:
                size += self.sources[stop].size
                stop += 1
            groups.append(Group(first, stop, REPLACE, self.sources[first].base,
                                self.sources[stop - 1].end))
            first = stop
        return groups

    def stats(self, groups: Sequence[Group], bytes_after: int) -> CleaningStats:
        cleaned = self.sources[:groups[-1].stop] if groups else ()
        return CleaningStats(
            start_offset=self.sources[0].base if self.sources else 0,
            end_offset=self.end_offset,
            records_before=self.records_read, records_after=self.records_kept,
            bytes_before=sum(source.size for source in cleaned), bytes_after=bytes_after,
            segments_before=len(cleaned),
            segments_after=sum(1 for group in groups if group.action != REMOVE))

    # -- pass 2 ------------------------------------------------------------------------------

    def clean_batch(self, header: BatchHeader, batch):
        """`batch` itself when it stays as it is, None when it goes, else its rewritten bytes."""
        if header.is_control:
            return self._clean_marker(header, batch)
        if self._cleaned_txns.aborted_data(header):
            self.records_read += header.records_count
            return rebuilt(header, b"", [], None) if self._retain_empty(header) else None
        if header.base_offset > self.offset_map.latest_offset:
            self.records_read += header.records_count
            self.records_kept += header.records_count
            return batch  # past what this pass mapped: all kept
        all_records = _records_of(header, batch)
        if all_records is None:  # undecodable: kept whole, as it is
            self.records_read += header.records_count
            self.records_kept += header.records_count
            return batch
        now = self.now_ms
        horizon = header.base_timestamp if has_delete_horizon(header) else None
        tombstones_expired = horizon is not None and now >= horizon
        kept = []
        keeps_tombstone = False
        keyed = [record for record in all_records if record.key is not None]
        newest = self.offset_map.get_all([record.key for record in keyed])
        for record, newest_offset in zip(keyed, newest):
            if record.offset < newest_offset:
                continue
            if record.value is None:
                if tombstones_expired:
                    continue
                keeps_tombstone = True
            kept.append(record)
        self.records_read += len(all_records)
        self.records_kept += len(kept)
        new_horizon = now + self.settings.delete_retention_ms \
            if keeps_tombstone and horizon is None else None
        if len(kept) == len(all_records) and new_horizon is None:
            return batch
        if not kept:
            return rebuilt(header, b"", [], None) if self._retain_empty(header) else None
        if new_horizon is None and horizon is None:
            return rebuilt_from(header, kept)
        # A delete horizon: the records' timestamp deltas are relative to it (batch_records)
        data = payload(header, batch)
        offsets = {record.offset for record in kept}
        return rebuilt(header, data, [r for r in records(header, data) if r[OFFSET] in offsets],
                       new_horizon)

    def _clean_marker(self, header: BatchHeader, batch):
        """A transaction marker: kept until it may go (txn_cleaning), then stamped with a
        delete horizon, then removed by a pass after the horizon."""
        self.records_read += header.records_count
        if self._cleaned_txns.marker_may_go(header, batch):
            if not has_delete_horizon(header):
                self.records_kept += header.records_count
                data = payload(header, batch)
                return rebuilt(header, data, records(header, data),
                               self.now_ms + self.settings.delete_retention_ms)
            if self.now_ms >= header.base_timestamp:
                if read_marker(batch).type == ABORT:
                    self.removed_aborts.append((header.producer_id, header.base_offset))
                return rebuilt(header, b"", [], None) if self._retain_empty(header) else None
        self.records_kept += header.records_count
        return batch

    def _retain_empty(self, header: BatchHeader) -> bool:
        return (header.producer_id >= 0 and
                self._producer_last.get(header.producer_id) == header.last_offset) or \
            header.next_offset == self.upper_bound


def _records_of(header: BatchHeader, batch) -> list | None:
    """The decoded records of a batch, or None when they cannot be decoded (a codec that is not
    installed, damage): such a batch is kept whole and maps nothing, which can only make a pass
    keep more than it could have."""
    try:
        return decoded(batch)
    # the codecs raise their own exception types on damaged input (see batch.py)
    except Exception as exc:  # noqa: BLE001
        log.warning("compaction keeps a batch it cannot decode (offset %d): %s",
                    header.base_offset, exc)
        return None


def clean_now(partition_log, now_ms: int, settings: CleanerSettings = CleanerSettings()
              ) -> CleaningStats | None:
    """One whole pass on the calling thread (tests, tools); the broker's cleaner runs the job and
    the swap's fsyncs on a worker thread instead (roster.broker.partitions.cleaner)."""
    job = partition_log.prepare_cleaning(now_ms, settings)
    if job is None:
        return None
    job.run()
    for step in partition_log.swap_cleaned(job):
        if step is not None:
            step()
    return job.stats
