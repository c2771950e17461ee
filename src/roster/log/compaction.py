"""Log compaction ("cleaning") decisions, shared by FileLog and MemoryLog so the model keeps
agreeing with the file log: which records survive a pass, and how segments are regrouped.

A pass covers a prefix of the closed segments (never the active one): the *range* [start, end).

  1. Map (pass 1): for every key, the offset of its newest record in the range. While building
     it, each segment counts the records that will be dropped from it: a record is dropped when
     a newer record of its key exists in the range, and a key's newest record is dropped too when
     it is a tombstone (null value) whose timestamp is more than delete.retention.ms in the past.
     Records without a key and control batches always survive; a batch whose records cannot be
     decoded (say, a codec that is not installed) survives whole and adds nothing to the map,
     which can only make a pass keep more than it could have.
  2. Groups: consecutive segments whose sizes add up to at most segment.bytes (and whose offsets
     fit a segment's int32 relative offsets) are rewritten as one segment, named after the first.
     A group of one segment with nothing to drop is left alone; a group with no survivor at all
     disappears, except the log's first segment, which stays (possibly empty) so the log start
     offset does not move.
  3. Rewrite (pass 2): each batch is copied as it is when all of its records survive, dropped
     when none do, and otherwise rebuilt from its survivors with its own base offset, offset
     deltas, timestamps, producer fields and codec (`clean_batch`). Offsets therefore never
     change: compaction only leaves gaps.

Records after the range (the active segment) are not consulted, so an older value whose newer
value is still in the active segment survives until a later pass, as in Kafka.
"""
from __future__ import annotations

import bisect
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from roster.log.api import CleaningStats
from roster.log.batch import BATCH_HEADER_SIZE, TIMESTAMP_TYPE_BIT, BatchHeader, set_base_offset
from roster.log.policy import INT32_MAX
from roster.protocol.varint import read_zigzag
from roster.record_codec import DefaultRecordBatch, DefaultRecordBatchBuilder

log = logging.getLogger("roster.log")

KEEP = "keep"          # the group's single segment is left as it is
REPLACE = "replace"    # the group is rewritten into one segment named after its first
REMOVE = "remove"      # nothing in the group survives: its segments are deleted


@dataclass(frozen=True, slots=True)
class Source:
    """One segment of the range as the pass sees it."""

    base: int   # base offset
    end: int    # offset after it: the next segment's base
    size: int   # bytes


@dataclass(slots=True)
class Group:
    first: int          # index of its first source
    stop: int           # index after its last source
    action: str
    base: int           # base offset of the segment it becomes
    end: int            # offset after it (the next group's base)


@dataclass(slots=True)
class Pass:
    """The decisions of one cleaning pass. Feed every batch of the range, oldest first, to
    `map_batch`; then `plan()`; then run each REPLACE group's batches through `clean_batch`."""

    sources: Sequence[Source]
    tombstone_cutoff_ms: int       # tombstones with an older timestamp are dropped
    segment_bytes: int
    newest: dict[bytes, int] = field(default_factory=dict)
    # keys whose newest record is an expired tombstone
    _expired: dict[bytes, None] = field(default_factory=dict)
    _records: list[int] = field(default_factory=list)
    _dropped: list[int] = field(default_factory=list)
    _bases: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._records = [0] * len(self.sources)
        self._dropped = [0] * len(self.sources)
        self._bases = [source.base for source in self.sources]

    # -- pass 1 ------------------------------------------------------------------------------

    def map_batch(self, source: int, header: BatchHeader, batch) -> None:
        """Account for one batch of source number `source` (batches must come in offset order)."""
        if header.is_control:
            self._records[source] += header.records_count
            return
        records = scan_records(header, batch)
        if records is None:
            self._records[source] += 1  # an opaque batch: kept whole
            return
        newest, expired, cutoff = self.newest, self._expired, self.tombstone_cutoff_ms
        for offset, timestamp, key, tombstone in records:
            if key is None:
                continue
            previous = newest.get(key)
            if previous is not None:
                self._dropped[self._source_of(previous)] += 1
            newest[key] = offset
            if tombstone and timestamp < cutoff:
                expired[key] = None
            elif expired:
                expired.pop(key, None)
        self._records[source] += len(records)

    def _source_of(self, offset: int) -> int:
        return bisect.bisect_right(self._bases, offset) - 1

    # -- planning ----------------------------------------------------------------------------

    def plan(self) -> list[Group]:
        for key in self._expired:
            self._dropped[self._source_of(self.newest[key])] += 1
        self._expired = {}
        limit = min(self.segment_bytes, INT32_MAX)
        groups: list[Group] = []
        first = 0
        while first < len(self.sources):
            stop, size = first + 1, self.sources[first].size
            while stop < len(self.sources) and size + self.sources[stop].size <= limit and \
                    self.sources[stop].end - 1 - self.sources[first].base <= INT32_MAX:
                size += self.sources[stop].size
                stop += 1
            survivors = sum(self._records[first:stop]) - sum(self._dropped[first:stop])
            if stop - first == 1 and self._dropped[first] == 0:
                action = KEEP
            elif survivors == 0 and first > 0:
                action = REMOVE
            else:
                action = REPLACE
            groups.append(Group(first, stop, action, self.sources[first].base,
                                self.sources[stop - 1].end))
            first = stop
        return groups

    def stats(self, groups: Sequence[Group], bytes_after: int) -> CleaningStats:
        records = sum(self._records)
        return CleaningStats(
            start_offset=self.sources[0].base if self.sources else 0,
            end_offset=self.sources[-1].end if self.sources else 0,
            records_before=records, records_after=records - sum(self._dropped),
            bytes_before=sum(source.size for source in self.sources), bytes_after=bytes_after,
            segments_before=len(self.sources),
            segments_after=sum(1 for group in groups if group.action != REMOVE))

    # -- pass 2 ------------------------------------------------------------------------------

    def clean_batch(self, header: BatchHeader, batch):
        """`batch` itself when all its records survive, None when none does, else a rebuilt batch."""
        if header.is_control:
            return batch
        records = scan_records(header, batch)
        if records is None:
            return batch
        newest, cutoff = self.newest, self.tombstone_cutoff_ms
        survivors = {offset for offset, timestamp, key, tombstone in records
                     if key is None or (newest.get(key) == offset and
                                        not (tombstone and timestamp < cutoff))}
        if len(survivors) == len(records) and records:
            return batch
        if not survivors:
            return None
        full = _decoded(batch)
        if full is None:
            return batch
        return rebuild_batch(header, [(r.offset, r.timestamp, r.key, r.value, r.headers)
                                      for r in full if r.offset in survivors])


def rebuild_batch(header: BatchHeader, records) -> bytes:
    """A batch with `header`'s base offset, attributes and producer fields holding `records`
    (offset, timestamp, key, value, headers), each at its own offset delta."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=header.compression, is_transactional=header.is_transactional,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence, batch_size=INT32_MAX)
    for offset, timestamp, key, value, headers in records:
        builder.append(offset - header.base_offset, timestamp=timestamp, key=key, value=value,
                       headers=headers)
    return set_base_offset(builder.build(), header.base_offset)


def scan_records(header: BatchHeader, batch) -> list[tuple] | None:
    """(offset, timestamp, key, is tombstone) of each record, or None if the records cannot be
    decoded. Uncompressed batches (what the coordinator writes) are walked here, reading only
    what compaction needs; compressed ones go through roster.record_codec."""
    if header.compression:
        decoded = _decoded(batch)
        return None if decoded is None else \
            [(r.offset, r.timestamp, r.key, r.value is None) for r in decoded]
    try:
        return _scan_uncompressed(header, bytes(batch))
    except (IndexError, ValueError) as exc:
        log.warning("compaction keeps a batch it cannot decode: %s", exc)
        return None


def _scan_uncompressed(header: BatchHeader, data: bytes) -> list[tuple]:
    # Record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
    # key (varint length, -1 = null), value (likewise), headers; varints are zigzag-encoded.
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    log_append_time = header.attributes & TIMESTAMP_TYPE_BIT
    out = []
    pos = BATCH_HEADER_SIZE
    for _ in range(header.records_count):
        length, pos = read_zigzag(data, pos)
        end = pos + length
        timestamp_delta, pos = read_zigzag(data, pos + 1)
        offset_delta, pos = read_zigzag(data, pos)
        key_length, pos = read_zigzag(data, pos)
        if key_length >= 0:
            key = data[pos:pos + key_length]
            pos += key_length
        else:
            key = None
        value_length, pos = read_zigzag(data, pos)
        if length < 0 or pos + max(value_length, 0) > end:
            raise ValueError("a record runs past its length")
        timestamp = header.max_timestamp if log_append_time else base_timestamp + timestamp_delta
        out.append((base_offset + offset_delta, timestamp, key, value_length < 0))
        pos = end
    if pos != len(data):
        raise ValueError(f"{len(data) - pos} bytes after the last record")
    return out


def _decoded(batch) -> list | None:
    """The batch's records as the record codec's record objects, or None if undecodable."""
    try:
        return list(DefaultRecordBatch(batch))
    # the codecs raise their own exception types on damaged input (see batch.py)
    except Exception as exc:  # noqa: BLE001
        log.warning("compaction keeps a batch it cannot decode: %s", exc)
        return None


def clean_now(partition_log, now_ms: int, delete_retention_ms: int) -> CleaningStats | None:
    """One whole pass on the calling thread (tests, tools); the broker's cleaner runs the job and
    the swap's fsyncs on a worker thread instead (roster.broker.cleaner)."""
    job = partition_log.prepare_cleaning(now_ms, delete_retention_ms)
    if job is None:
        return None
    job.run()
    for step in partition_log.swap_cleaned(job):
        if step is not None:
            step()
    return job.stats
