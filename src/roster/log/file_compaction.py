"""The compaction part of FileLog (file.py): which closed segments a pass may clean, the
snapshot a cleaning job runs on elsewhere (roster.log.cleaning), and the swap that installs its
files, with its crash analysis. A base class of FileLog, so these methods work on FileLog's own
state: its segments, recovery point, cleaner offsets (`_first_dirty`, `_cleaned_to`), directory
and aborted-transaction index; SegmentedLog gives `_stable` and `_aborted_within`."""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator

from roster.log import txn_files
from roster.log.api import CleaningStatus, LogStorageError
from roster.log.batch import BATCH_HEADER_SIZE, parse_header
from roster.log.cleaning import (
    FIRST_DIRTY_OFFSET,
    FileCleaningJob,
    Snapshot,
    fsync_directory,
    staged_path,
)
from roster.log.compaction import (
    LONG_MAX,
    REMOVE,
    REPLACE,
    CleanerSettings,
    Source,
    cleanable_range,
)
from roster.log.files import write_offset_file
from roster.log.segment import (
    LOG_SUFFIX,
    OFFSET_INDEX_SUFFIX,
    TIME_INDEX_SUFFIX,
    Segment,
    file_name,
)

log = logging.getLogger("roster.log")


class FileLogCompaction:
    def _cleanable(self) -> list[Segment]:
        """Closed segments from the log start up to the first one with data not yet on disk."""
        cleanable = []
        for segment in self._segments[:-1]:
            if segment.next_offset > self._recovery_point or \
                    segment.write_generation > segment.synced_generation:
                break
            cleanable.append(segment)
        return self._stable(cleanable)

    def _sources(self, segments: list[Segment], settings: CleanerSettings) -> list[Source]:
        wants_first = settings.max_compaction_lag_ms < LONG_MAX  # read a header only then
        sources = []
        for segment in segments:
            first = -1
            if wants_first and segment.next_offset > self._first_dirty and segment.size:
                first = parse_header(segment.read_bytes(0, BATCH_HEADER_SIZE)).max_timestamp
            largest = segment.retention_timestamp()
            sources.append(Source(segment.base_offset, segment.next_offset, segment.size,
                                  -1 if largest is None else largest, first))
        return sources

    def cleaning_status(self, now_ms: int, settings: CleanerSettings) -> CleaningStatus:
        self._require_open()
        return cleanable_range(self._sources(self._cleanable(), settings), self._first_dirty,
                               self.log_start_offset, now_ms, settings)

    def prepare_cleaning(self, now_ms: int, settings: CleanerSettings) -> FileCleaningJob | None:
        self._require_open()
        segments = self._cleanable()
        status = cleanable_range(self._sources(segments, settings), self._first_dirty,
                                 self.log_start_offset, now_ms, settings)
        if status.dirty_bytes == 0:
            return None
        segments = [s for s in segments if s.base_offset < status.first_uncleanable_offset]
        snapshots: list[Snapshot] = []
        try:
            for segment in segments:
                snapshots.append(Snapshot(segment, os.dup(segment.fd), Source(
                    segment.base_offset, segment.next_offset, segment.size)))
        except OSError as exc:
            for snapshot in snapshots:
                os.close(snapshot.fd)
            raise LogStorageError(f"cannot prepare a compaction of {self._dir}: {exc}") from exc
        return FileCleaningJob(self._dir, snapshots, status.first_dirty_offset, self._cleaned_to,
                               now_ms, settings, self._config.segment_bytes,
                               self._config.index_interval_bytes, self._aborted_within(segments))

    def swap_cleaned(self, job: FileCleaningJob) -> Iterator[Callable[[], None] | None]:
        """Install the job's cleaned segments. Groups go oldest first; for each:

          REPLACE   1. unlink the first segment's .index and .timeindex       (crash: rebuilt)
                    2. fsync the directory (yielded)
                    3. rename <base>.log.cleaned -> <base>.log (atomic), then its two indexes
                    4. adopt the new segment in memory in place of the group's segments
                    5. fsync the directory (yielded)
                    6. unlink the group's other segments, oldest first
                    7. close the replaced segments' files and fsync the directory (yielded:
                       the last close of a big file frees it, which is slow)
          REMOVE    drop the group's segments from memory, unlink them oldest first, then
                    step 7.

        Crash analysis (kill -9 anywhere; power loss too, given the fsyncs between steps): the
        directory always holds, for some offset x, the cleaned records below x and the original
        records from x on, plus at most the leftover segments of one interrupted group.
          * Before step 3 the group's files are the originals (missing indexes are rebuilt on
            open; `*.cleaned` leftovers are deleted on open).
          * After step 3 the new segment is whole (fsynced before the rename). Leftover
            segments of its group either overlap it (their base is below the end of its last
            batch) and are deleted on open as leftovers, or lie wholly after its last batch and
            hold only records that were superseded by newer ones still in the log, or tombstones
            whose keys' older values are gone: harmless, a later pass removes them.
          * Groups are swapped in offset order and unlinked oldest first, so a tombstone is never
            removed while an older value of its key is still on disk: a key never comes back.
        For every key, its newest record (a value, or a tombstone still within delete retention)
        is in the range both before and after, so reads see it at every step. A key whose newest
        record is an expired tombstone either still shows that tombstone or is gone entirely.
        Gaps are accepted on open because the job raised the cleaner checkpoint, durably, before
        this swap began.
        """
        sources = [snapshot.segment for snapshot in job.snapshots]
        if not job.finished or self._closed or not self._holds(sources):
            if job.finished:
                log.info("abandoning the compaction of %s: the log changed meanwhile", self._dir)
            job.remove_staged_files()
            return
        self._cleaned_to = max(self._cleaned_to, job.checkpoint)
        self._dir_generation += 1  # a flush also syncs the directory, whatever happens below
        directory = self._dir
        retired: list[Segment] = []  # out of the log, files still open (see below)
        retired_lock = threading.Lock()

        def take_retired() -> list[Segment]:  # each segment is closed by exactly one taker
            with retired_lock:
                taken = retired[:]
                retired.clear()
            return taken

        def fsync() -> None:  # runs on another thread
            fsync_directory(directory)

        def close_retired_and_fsync() -> None:  # runs on another thread
            # The last close of a replaced or unlinked segment frees its blocks and page cache,
            # which takes a while for a large segment: not on the event loop.
            for segment in take_retired():
                segment.close()
            fsync_directory(directory)

        try:
            # before any marker goes: a crash in between leaves a marker without its entry,
            # which readers pass over (the transaction has no data left)
            txn_files.forget_aborts(self._dir, self._aborted, job.removed_aborts)
            for group in job.groups:
                if group.action not in (REPLACE, REMOVE):
                    continue
                if self._closed:
                    return
                members = sources[group.first:group.stop]
                position = self._segments.index(members[0])
                if group.action == REPLACE:
                    first = members[0]
                    for path in (first.offset_index.path, first.time_index.path):
                        path.unlink(missing_ok=True)
                        yield None
                    yield fsync
                    if self._closed:
                        return
                    for suffix in (LOG_SUFFIX, OFFSET_INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                        os.replace(staged_path(self._dir, group.base, suffix),
                                   self._dir / file_name(group.base, suffix))
                        yield None
                    new = Segment.load(self._dir, group.base, self._config.index_interval_bytes,
                                       group.end, gaps_allowed=True)
                    self._segments[position:position + len(members)] = [new]
                    with retired_lock:
                        retired.extend(members)
                    yield fsync
                    doomed = members[1:]
                else:
                    del self._segments[position:position + len(members)]
                    with retired_lock:
                        retired.extend(members)
                    doomed = members
                for old in doomed:  # still open, so unlinking is quick
                    for path in old.file_paths():
                        path.unlink(missing_ok=True)
                        yield None
                yield close_retired_and_fsync
            first_dirty = job.end_offset  # all of it is swapped in: the next pass starts there
            yield lambda: write_offset_file(directory / FIRST_DIRTY_OFFSET, first_dirty)
            self._first_dirty = max(self._first_dirty, first_dirty)
        except OSError as exc:
            raise LogStorageError(f"compaction of {self._dir} failed while swapping: {exc}") \
                from exc
        finally:
            for segment in take_retired():  # the swap was abandoned half-way
                segment.close()
            job.remove_staged_files()

    def _holds(self, segments: list[Segment]) -> bool:
        """Whether `segments` are still, consecutively, the first segments of this log."""
        return self._segments[:len(segments)] == segments and len(self._segments) > len(segments)
