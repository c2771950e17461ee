"""One segment of a file log: `<base>.log` holding batches back to back, plus its two indexes.

A segment owns three file descriptors for its whole life (log, offset index, time index), reads
with os.pread (through a ReadWindow) so reads never move the write position, and appends with
os.write (os.writev) at the end it keeps track of. Everything else the log needs from a segment
(where a batch lives, what its timestamps are, whether its bytes are intact) is answered here.

Offsets inside a segment run on without gaps, except in a segment that log compaction rewrote
(`gaps_allowed`): there batches keep their offsets while records around them are gone, so each
batch only has to start after the previous one ends.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

from roster.log.api import LogStorageError
from roster.log.batch import (
    BATCH_HEADER_SIZE,
    NO_TIMESTAMP,
    BatchHeader,
    batch_extent,
    computed_crc,
    first_record_at_or_after,
    header_problem,
    parse_header,
)
from roster.log.files import preallocate, write_all, write_all_parts
from roster.log.index import OffsetIndex, TimeIndex
from roster.log.window import MAX_WINDOW, MIN_WINDOW, ReadWindow

log = logging.getLogger("roster.log")

LOG_SUFFIX = ".log"
OFFSET_INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
SUFFIXES = (LOG_SUFFIX, OFFSET_INDEX_SUFFIX, TIME_INDEX_SUFFIX)

# A segment that has taken PREALLOCATE_AFTER bytes reserves disk blocks PREALLOCATE_STEP at a time
# ahead of its appends (roster.log.files.preallocate); seal() releases what was not used. Small
# segments (most __consumer_offsets partitions) never reserve anything.
PREALLOCATE_AFTER = 8 * 1024 * 1024
PREALLOCATE_STEP = 64 * 1024 * 1024


def file_name(base_offset: int, suffix: str, tag: str = "") -> str:
    """`<base>.log` and so on; `tag` is appended for files that are not (yet) part of the log,
    such as `<base>.log.cleaned` written by compaction."""
    return f"{base_offset:020d}{suffix}{tag}"


def _check_stored(size: int, path: Path, position: int) -> None:
    """Refuse to step through a stored batch whose length field was damaged after it was written;
    a length below the header size would otherwise make a walk loop or run backwards."""
    if size < BATCH_HEADER_SIZE:
        raise LogStorageError(f"{path}: damaged batch header at position {position}")


class Segment:
    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int,
                 create: bool, tag: str = "", gaps_allowed: bool = False) -> None:
        self.base_offset = base_offset
        self.path = directory / file_name(base_offset, LOG_SUFFIX, tag)
        self._index_interval = index_interval_bytes
        # Compacted segments may skip offsets between batches; any other segment that does is
        # damaged (a base offset is not covered by the CRC, so this is its only check).
        self.gaps_allowed = gaps_allowed
        self.truncated = False  # rebuild() cut bytes off the end of the file
        # A new segment starts at the log end, so a leftover file of that name holds nothing the
        # log still owns; O_TRUNC clears it.
        flags = os.O_RDWR | os.O_CREAT | (os.O_TRUNC if create else 0)
        self.fd = os.open(self.path, flags, 0o644)
        opened: list[int] = [self.fd]
        try:
            self.offset_index = OffsetIndex(
                directory / file_name(base_offset, OFFSET_INDEX_SUFFIX, tag))
            opened.append(self.offset_index.fd)
            self.time_index = TimeIndex(directory / file_name(base_offset, TIME_INDEX_SUFFIX, tag))
            opened.append(self.time_index.fd)
            if create:
                self.offset_index.rewrite()
                self.time_index.rewrite()
        except OSError:
            for fd in opened:
                os.close(fd)
            raise
        self.size = 0                      # bytes of whole batches; the file may be longer
        self._reserved_to = 0              # file position up to which blocks are preallocated
        self._preallocating = True         # False once preallocation failed
        self.next_offset = base_offset     # offset after the last batch
        self.max_timestamp = NO_TIMESTAMP  # largest batch maxTimestamp
        self.offset_of_max_timestamp = -1  # base offset of the first batch that has it
        self._bytes_since_index_entry = 0
        # Durability bookkeeping: every change bumps write_generation; a flush job that fsynced
        # the segment's files after generation g lets the log set synced_generation = g. A new,
        # empty segment has nothing to lose; its directory entry is the log's to fsync.
        self.write_generation = 0
        self.synced_generation = 0
        # The generation up to which the .log file alone is synced: what a flush of the active
        # segment does (see FileLog.prepare_flush); never below synced_generation.
        self.log_synced_generation = 0

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, base_offset: int, index_interval_bytes: int,
               tag: str = "") -> Segment:
        """A new, empty segment. With a `tag` its files are named `<base>.log<tag>` etc.: compaction
        writes a replacement segment that way before renaming it into the log."""
        return cls(directory, base_offset, index_interval_bytes, create=True, tag=tag,
                   gaps_allowed=bool(tag))

    @classmethod
    def load(cls, directory: Path, base_offset: int, index_interval_bytes: int,
             next_offset: int | None, gaps_allowed: bool = False) -> Segment:
        """Open a segment trusted to be intact, adopting its index files when they are usable.

        `next_offset` is the next segment's base; None when the end must be found by walking the
        batches after the last offset-index entry (the last segment, and compacted segments,
        whose last batch may end before the next segment starts).
        """
        segment = cls(directory, base_offset, index_interval_bytes, create=False,
                      gaps_allowed=gaps_allowed)
        try:
            problem = segment._adopt_indexes(next_offset)
            if problem is not None:
                log.warning("rebuilding the indexes of %s: %s", segment.path, problem)
                segment.rebuild(verify_crc=False)
        except BaseException:
            segment.close()
            raise
        return segment

    @classmethod
    def recover(cls, directory: Path, base_offset: int, index_interval_bytes: int,
                gaps_allowed: bool = False) -> Segment:
        """Open a segment that may hold a torn or corrupt tail: check every batch, cut at the first
        bad one, and rebuild the indexes."""
        segment = cls(directory, base_offset, index_interval_bytes, create=False,
                      gaps_allowed=gaps_allowed)
        try:
            segment.rebuild(verify_crc=True)
        except BaseException:
            segment.close()
            raise
        return segment

    def _adopt_indexes(self, next_offset: int | None) -> str | None:
        """Take state from the index files; why they cannot be used, or None."""
        file_size = os.fstat(self.fd).st_size
        offsets, times = self.offset_index, self.time_index
        for index in (offsets, times):
            if index.missing:
                return f"{index.path.name} is missing"
            index.load()
            if index.malformed:
                return f"{index.path.name} is not a whole number of entries"
        limit = None if next_offset is None else next_offset - self.base_offset
        problem = offsets.problem(file_size, limit) or times.problem(limit)
        if problem is not None:
            return problem
        if times.keys:
            self.max_timestamp = times.keys[-1]
            self.offset_of_max_timestamp = self.base_offset + times.values[-1]
        if offsets.keys:
            # An index that is well-formed but belongs to other data points at the wrong batch.
            head = os.pread(self.fd, BATCH_HEADER_SIZE, offsets.values[-1])
            if len(head) < BATCH_HEADER_SIZE or \
                    parse_header(head).base_offset != self.base_offset + offsets.keys[-1]:
                return "the last offset-index entry does not point at its batch"
        if next_offset is not None:
            self.size = file_size
            self.next_offset = next_offset
            self.write_generation = self.synced_generation = 0
            return None
        return self._walk_tail(file_size)

    def _walk_tail(self, file_size: int) -> str | None:
        """Re-read the batches after the last offset-index entry to find the end of the segment."""
        start = self.offset_index.values[-1] if self.offset_index.keys else 0
        expected = self.base_offset + (self.offset_index.keys[-1] if self.offset_index.keys else 0)
        window = ReadWindow(self.fd, file_size, MIN_WINDOW)
        position = start
        while position < file_size:
            head = window.view(position, BATCH_HEADER_SIZE)
            if head is None:
                return f"{file_size - position} bytes after the last whole batch"
            header = parse_header(head)
            problem = header_problem(header)
            if problem is not None:
                return f"batch at position {position}: {problem}"
            if self._out_of_sequence(header.base_offset, expected) or \
                    position + header.size > file_size:
                return f"the batch at position {position} is cut short or out of sequence"
            self._track(position, header)
            expected = header.next_offset
            position += header.size
        self.size = position
        self.next_offset = expected
        os.lseek(self.fd, position, os.SEEK_SET)  # appends continue from here
        self.offset_index.write_new_entries()
        self.time_index.write_new_entries()
        return None

    def rebuild(self, verify_crc: bool) -> None:
        """Re-derive size, offsets, timestamps and both indexes by walking every batch.

        With verify_crc, each batch's CRC32C is checked too. The file is truncated at the first
        batch that is partial, malformed, out of sequence or (with verify_crc) corrupt.
        """
        self.offset_index.clear()
        self.time_index.clear()
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = -1
        self._bytes_since_index_entry = 0
        file_size = os.fstat(self.fd).st_size
        window = ReadWindow(self.fd, file_size, MAX_WINDOW)
        position, problem = 0, None
        while position < file_size:
            head = window.view(position, BATCH_HEADER_SIZE)
            if head is None:
                problem = "too few bytes for a batch header"
                break
            header = parse_header(head)
            problem = header_problem(header)
            if problem is not None:
                break
            if position + header.size > file_size:
                problem = f"the batch needs {header.size} bytes, only {file_size - position} remain"
                break
            if self._out_of_sequence(header.base_offset, self.next_offset):
                expected = "at least " if self.gaps_allowed else ""
                problem = (f"baseOffset is {header.base_offset}, "
                           f"{expected}{self.next_offset} was expected")
                break
            if verify_crc:
                data = window.view(position, header.size)
                if data is None or computed_crc(data, 0, header) != header.crc:
                    problem = "CRC32C mismatch"
                    break
            self._track(position, header)
            position += header.size
        self.truncated = position < file_size
        if self.truncated:
            log.warning("truncating %s at position %d, cutting %d bytes: %s",
                        self.path, position, file_size - position, problem)
            os.ftruncate(self.fd, position)
        os.lseek(self.fd, position, os.SEEK_SET)
        self._index_running_max()
        self.offset_index.rewrite()
        self.time_index.rewrite()
        self.write_generation = self.synced_generation + 1

    def _out_of_sequence(self, base_offset: int, expected: int) -> bool:
        """Whether a batch starting at `base_offset` cannot follow one that ended at `expected`."""
        return base_offset < expected if self.gaps_allowed else base_offset != expected

    # -- writing -----------------------------------------------------------------------------

    def _track(self, position: int, header: BatchHeader) -> None:
        """Account for the batch at `position` (already in the file): end, timestamps, indexes.

        Append and rebuild share this so a rebuilt index equals the one appends produced.
        """
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.base_offset
        offsets = self.offset_index
        last_indexed = offsets.values[-1] if offsets.values else 0
        if self._bytes_since_index_entry >= self._index_interval and position > last_indexed:
            offsets.add(header.base_offset - self.base_offset, position)
            self._index_running_max()
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += header.size
        self.size = position + header.size
        self.next_offset = header.next_offset

    def append(self, data, header: BatchHeader) -> None:
        """Write one batch (its base offset already assigned) at the end: `data` is one buffer,
        or a tuple of buffers that are written back to back. On OSError the segment is rolled
        back to exactly its previous state before the error propagates.

        New index entries stay in memory until seal(): while a segment is active the in-memory
        indexes serve every lookup, and after a crash recovery rebuilds the active segment's
        indexes from the log anyway (roster.log.loading), so writing them per batch bought
        nothing but two small writes per append."""
        saved = (self.size, self.next_offset, self.max_timestamp, self.offset_of_max_timestamp,
                 self._bytes_since_index_entry, len(self.offset_index), len(self.time_index))
        position = self.size
        if position + header.size > self._reserved_to and position >= PREALLOCATE_AFTER \
                and self._preallocating:
            self._reserve(position)
        try:
            if type(data) is tuple:
                write_all_parts(self.fd, data, header.size)
            else:
                write_all(self.fd, data)
            self._track(position, header)
        except OSError:
            self._roll_back(saved)
            raise
        self.write_generation += 1

    def _reserve(self, position: int) -> None:
        if preallocate(self.fd, position, PREALLOCATE_STEP):
            self._reserved_to = position + PREALLOCATE_STEP
        else:
            self._preallocating = False  # unsupported, or no room: plain appends from here on

    def _roll_back(self, saved: tuple) -> None:
        (self.size, self.next_offset, self.max_timestamp, self.offset_of_max_timestamp,
         self._bytes_since_index_entry, offset_entries, time_entries) = saved
        self.offset_index.truncate(offset_entries)
        self.time_index.truncate(time_entries)
        try:
            os.ftruncate(self.fd, self.size)
        except OSError as exc:
            # Readers never look past self.size, the next write overwrites the debris (the seek
            # below) and seal() truncates again, so this is survivable.
            log.error("cannot truncate %s after a failed write: %s", self.path, exc)
        os.lseek(self.fd, self.size, os.SEEK_SET)

    def seal(self) -> None:
        """Make the files complete for a restart: record the segment's largest timestamp in the time
        index (so a clean load knows it), write the index entries appends kept in memory, and cut
        any debris a failed write left past the end."""
        added = self._index_running_max()
        if added or self.offset_index.unwritten or self.time_index.unwritten:
            try:
                self.offset_index.write_new_entries()
                self.time_index.write_new_entries()
            except OSError:
                if added:
                    self.time_index.truncate(len(self.time_index) - 1)
                raise
            self.write_generation += 1
        if os.fstat(self.fd).st_size != self.size:
            os.ftruncate(self.fd, self.size)
            self.write_generation += 1
        elif self._reserved_to > self.size:
            os.ftruncate(self.fd, self.size)  # same size: only gives unused reserved blocks back
        self._reserved_to = 0

    def _index_running_max(self) -> bool:
        """Add (in memory) a time-index entry for the largest timestamp so far unless the index
        already ends with it. At a seal this lets a later load recover the segment's maximum."""
        last_time = self.time_index.last_timestamp
        if self.max_timestamp <= (NO_TIMESTAMP if last_time is None else last_time):
            return False
        self.time_index.add(self.max_timestamp, self.offset_of_max_timestamp - self.base_offset)
        return True

    # -- reading -----------------------------------------------------------------------------

    def position_for(self, offset: int) -> int:
        """A file position at or before the batch holding `offset`."""
        return self.offset_index.position_at_or_before(offset - self.base_offset)

    def walk(self, position: int, window_size: int = MIN_WINDOW) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from `position` (a batch boundary) to the end."""
        window = ReadWindow(self.fd, self.size, window_size)
        while position < self.size:
            head = window.view(position, BATCH_HEADER_SIZE)
            if head is None:
                return
            header = parse_header(head)
            _check_stored(header.size, self.path, position)
            yield position, header
            position += header.size

    def read_bytes(self, position: int, length: int) -> bytes:
        return os.pread(self.fd, length, position)

    def read(self, offset: int, budget: int, at_least_one: bool) -> tuple[bytes, bool]:
        """Whole batches from the one holding `offset`, totalling at most `budget` bytes, except
        that with `at_least_one` the first batch is returned even if larger.

        Returns (data, full); full means a batch was left out for lack of budget.
        """
        window_size = min(max(budget + self._index_interval + BATCH_HEADER_SIZE, MIN_WINDOW),
                          MAX_WINDOW)
        window = ReadWindow(self.fd, self.size, window_size)
        position = self.position_for(offset)
        start = end = -1
        full = False
        while position < self.size:
            head = window.view(position, BATCH_HEADER_SIZE)
            if head is None:
                break
            size, next_offset = batch_extent(head)
            _check_stored(size, self.path, position)
            if next_offset > offset:
                taken = end - start if start >= 0 else 0
                if taken + size > budget and not (at_least_one and start < 0):
                    full = True
                    break
                if start < 0:
                    start = position
                end = position + size
                if end - start >= budget:
                    full = True
                    break
            position += size
        if start < 0:
            return b"", full
        data = window.view(start, end - start)
        return (bytes(data) if data is not None else self.read_bytes(start, end - start)), full

    def find_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= `timestamp`, or None."""
        start = self.position_for(self.base_offset + self.time_index.offset_before(timestamp))
        for position, header in self.walk(start):
            if header.max_timestamp >= timestamp:
                found = first_record_at_or_after(self.read_bytes(position, header.size), timestamp)
                if found is not None:
                    return found
        return None

    def max_timestamp_record(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying the segment's largest timestamp."""
        target = self.offset_of_max_timestamp
        if target < 0:
            return None
        for position, header in self.walk(self.position_for(target)):
            if header.base_offset == target:
                batch = self.read_bytes(position, header.size)
                found = first_record_at_or_after(batch, self.max_timestamp)
                # A batch whose maxTimestamp no record carries: name its last offset instead.
                return found or (header.last_offset, self.max_timestamp)
        return None

    def retention_timestamp(self) -> int | None:
        """The timestamp retention.ms judges this segment by; None for an empty segment.

        Kafka's rule: the largest record timestamp, or the file's modification time when the
        records carry none.
        """
        if self.size == 0:
            return None
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return os.fstat(self.fd).st_mtime_ns // 1_000_000

    def modified_ms(self) -> int:
        """The file's modification time (ListOffsets v0 answers by it, as Kafka did)."""
        return os.fstat(self.fd).st_mtime_ns // 1_000_000

    # -- lifetime ----------------------------------------------------------------------------

    def duplicate_fds(self, with_indexes: bool = True) -> list[int]:
        """Duplicates of the three fds (or of the log's alone), for a flush job that must outlive
        a roll or a deletion."""
        duplicates: list[int] = []
        try:
            fds = (self.fd, self.offset_index.fd, self.time_index.fd) if with_indexes else (self.fd,)
            for fd in fds:
                duplicates.append(os.dup(fd))
        except OSError:
            for fd in duplicates:
                os.close(fd)
            raise
        return duplicates

    def close(self) -> None:
        for close in (lambda: os.close(self.fd), self.offset_index.close, self.time_index.close):
            try:
                close()
            except OSError as exc:
                log.error("closing %s: %s", self.path, exc)

    def file_paths(self) -> tuple[Path, Path, Path]:
        """The log file and its two index files."""
        return self.path, self.offset_index.path, self.time_index.path

    def fsync(self) -> None:
        for fd in (self.fd, self.offset_index.fd, self.time_index.fd):
            os.fsync(fd)

    def delete(self) -> None:
        """Close the files, then unlink them."""
        self.close()
        for path in self.file_paths():
            path.unlink(missing_ok=True)
