"""Compaction of a FileLog, part one: the cleaning job that runs on a worker thread.

    prepare (log's thread)  FileLog.prepare_cleaning snapshots the segments from the log start to
                            the first uncleanable offset (roster.log.compaction.cleanable_range:
                            closed, flushed, older than min.compaction.lag.ms). It duplicates
                            their fds, so whatever the log does meanwhile (append, roll, close)
                            the job reads what it captured.
    run (worker thread)     pass 1 maps key -> newest offset of the dirty records into a
                            fixed-size OffsetMap (it stops where the map fills up); pass 2
                            writes each group of segments below that point into
                            `<base>.log.cleaned` with its `.index.cleaned` and `.timeindex.cleaned`
                            (built by the same code as appends, so they equal a rebuild), and
                            fsyncs them. Last, it raises the cleaner checkpoint (see below)
                            durably.
    swap (log's thread)     FileLog.swap_cleaned renames the files into place (roster.log.file)
                            and then records the new first dirty offset.

Two offsets are kept per partition, each in its own file written atomically:
  * `cleaner-offset-checkpoint`: the offset below which segments may have gaps (always a
    segment boundary: the end of the last segment a pass rewrote). Recovery accepts gaps between
    batches and after the last batch there (roster.log.loading) and keeps the strict, dense
    checks for every later segment. It is raised before any cleaned file is renamed into the
    log, so a gap on disk is always covered by it.
  * `cleaner-first-dirty-offset`: where the next pass starts mapping (Kafka's cleaner
    checkpoint). It may lie inside a segment when the offset map filled up. It is written once
    a swap is complete, so a pass cut short by a crash is simply done again.
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from roster.log import fault_hook
from roster.log.api import CleaningStats, LogStorageError
from roster.log.batch import BATCH_HEADER_SIZE, parse_header
from roster.log.compaction import (
    KEEP,
    REMOVE,
    REPLACE,
    CleanerSettings,
    Group,
    MapTooSmall,
    Pass,
    Source,
)
from roster.log.files import open_directory, write_offset_file
from roster.log.offset_map import SLOT_BYTES, OffsetMap
from roster.log.producer_state import AbortedTxn
from roster.log.segment import LOG_SUFFIX, OFFSET_INDEX_SUFFIX, TIME_INDEX_SUFFIX, Segment, file_name
from roster.log.throttle import Throttler
from roster.log.window import MAX_WINDOW, ReadWindow

log = logging.getLogger("roster.log")

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
FIRST_DIRTY_OFFSET = "cleaner-first-dirty-offset"
CLEANED_TAG = ".cleaned"
STAGED_SUFFIXES = (LOG_SUFFIX, OFFSET_INDEX_SUFFIX, TIME_INDEX_SUFFIX)


def offset_map_bytes(settings: CleanerSettings, dirty_bytes: int, record_bytes: float) -> int:
    """The map a pass uses: log.cleaner.dedupe.buffer.size, or less when the dirty bytes hold
    fewer keys than that (`record_bytes`: the smallest average record size seen in the dirty
    segments' first batches). A map that has to be touched only where keys land costs a page
    fault per page, so sizing it to the work keeps a small pass cheap; an estimate that is too
    low only ends the pass early, and the next one goes on."""
    keys = int(dirty_bytes / max(record_bytes, 1) * 1.25) + 64
    return min(settings.map_bytes, 2 * SLOT_BYTES * int(keys / settings.map_load_factor))


def smallest_record_bytes(fds: list[int]) -> float:
    """The smallest bytes-per-record of the first batches of these segments (7, the smallest a
    v2 record can be, when none can be read)."""
    smallest = float("inf")
    for fd in fds:
        head = os.pread(fd, BATCH_HEADER_SIZE, 0)
        if len(head) == BATCH_HEADER_SIZE:
            header = parse_header(head)
            if header.records_count > 0:
                smallest = min(smallest, header.size / header.records_count)
    return smallest if smallest != float("inf") else 7


class CleaningCancelled(Exception):
    pass


@dataclass(slots=True, eq=False)
class Snapshot:
    """One segment as the job captured it."""

    segment: Segment    # the log's object (the swap checks it is still there)
    fd: int             # a duplicate of its log fd, owned by the job
    source: Source


def staged_path(directory: Path, base: int, suffix: str) -> Path:
    return directory / file_name(base, suffix, CLEANED_TAG)


def fsync_directory(directory: Path) -> None:
    """fsync a directory through an fd of its own (safe on any thread, whatever the log does)."""
    fd = open_directory(directory)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileCleaningJob:
    def __init__(self, directory: Path, snapshots: list[Snapshot], first_dirty: int,
                 gaps_below: int, now_ms: int, settings: CleanerSettings, segment_bytes: int,
                 index_interval_bytes: int, aborted: Sequence[AbortedTxn] = ()) -> None:
        self.directory = directory
        self.aborted = aborted  # the log's aborted transactions overlapping the snapshot
        self.snapshots = snapshots
        self.first_dirty = first_dirty
        self.checkpoint = gaps_below        # gaps are allowed below it; run() raises it
        self.end_offset = first_dirty       # the next first dirty offset, once run() is done
        self.removed_aborts: list[tuple[int, int]] = []  # set by run() (compaction.Pass)
        self.index_interval_bytes = index_interval_bytes
        self.now_ms = now_ms
        self.settings = settings
        self.segment_bytes = segment_bytes
        self.groups: list[Group] = []
        self.stats: CleaningStats | None = None
        self.map_capacity = 0
        self.error: BaseException | None = None
        self.run_ms = 0.0
        self._cancelled = False
        self._throttler = Throttler(settings.io_bytes_per_second)

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def finished(self) -> bool:
        return self.stats is not None

    def run(self) -> None:
        started = time.monotonic()
        dirty = [s for s in self.snapshots if s.source.end > self.first_dirty]
        estimate = offset_map_bytes(self.settings, sum(s.source.size for s in dirty),
                                    smallest_record_bytes([s.fd for s in dirty]))
        offset_map = OffsetMap(estimate, self.settings.map_load_factor)
        try:
            try:
                plan = self._map(offset_map)
            except MapTooSmall:
                if offset_map.memory_bytes >= self.settings.map_bytes:
                    raise
                # the estimate missed a batch with more keys than it allowed for: full size
                offset_map.close()
                offset_map = OffsetMap(self.settings.map_bytes, self.settings.map_load_factor)
                plan = self._map(offset_map)
            self.groups = plan.plan()
            bytes_after = 0
            for group in self.groups:
                bytes_after += self._write_group(plan, group)
            fault_hook.reached("cleaner:staged")
            if self.groups:
                self.checkpoint = max(self.checkpoint, self.groups[-1].end)
            write_offset_file(self.directory / CLEANER_CHECKPOINT, self.checkpoint)
            fsync_directory(self.directory)  # the checkpoint is durable before any swap
            fault_hook.reached("cleaner:checkpointed")
            self.end_offset = plan.end_offset
            self.removed_aborts = plan.removed_aborts
            self.stats = plan.stats(self.groups, bytes_after)
        except BaseException as exc:
            self.error = exc
            self.remove_staged_files()
            raise
        finally:
            self.run_ms = (time.monotonic() - started) * 1000
            offset_map.close()  # the map is large; the swap does not need it
            self._close_fds()

    def _map(self, offset_map: OffsetMap) -> Pass:
        """Pass 1 over the snapshot."""
        self.map_capacity = offset_map.capacity
        plan = Pass([s.source for s in self.snapshots], self.first_dirty, self.now_ms,
                    self.settings, self.segment_bytes, offset_map, self.aborted)
        for snapshot in self.snapshots:
            for header, batch in self._batches(snapshot):
                plan.map_batch(header, batch)
        return plan

    def _batches(self, snapshot: Snapshot):
        """(header, bytes) of each batch of a captured segment."""
        size = snapshot.source.size
        window = ReadWindow(snapshot.fd, size, MAX_WINDOW)
        position = 0
        while position < size:
            if self._cancelled:
                raise CleaningCancelled()
            head = window.view(position, BATCH_HEADER_SIZE)
            header = parse_header(head) if head is not None else None
            data = window.view(position, header.size) \
                if header is not None and header.size >= BATCH_HEADER_SIZE else None
            if data is None:
                raise LogStorageError(f"{snapshot.segment.path}: no whole batch at position "
                                      f"{position} of {size}")
            self._throttler.observe(header.size)
            yield header, data
            position += header.size

    def _write_group(self, plan: Pass, group: Group) -> int:
        """Write the group's survivors as a staged segment, fsynced, and settle the group's
        action: KEEP (one segment, nothing changed: the staged copy is removed), REMOVE
        (nothing survives, and it is not the log's first segment) or REPLACE. Returns the bytes
        the group occupies after the pass."""
        staged = Segment.create(self.directory, group.base, self.index_interval_bytes,
                                tag=CLEANED_TAG)
        changed = group.stop - group.first > 1
        try:
            for snapshot in self.snapshots[group.first:group.stop]:
                for header, batch in self._batches(snapshot):
                    cleaned = plan.clean_batch(header, batch)
                    if cleaned is not batch:
                        changed = True
                    if cleaned is None:
                        continue
                    staged.append(cleaned, header if cleaned is batch else parse_header(cleaned))
                    self._throttler.observe(len(cleaned))
            if not changed:
                group.action = KEEP
                return staged.size
            if staged.size == 0 and group.first > 0:
                group.action = REMOVE
                return 0
            staged.seal()
            staged.fsync()
            return staged.size
        finally:
            staged.close()
            if group.action != REPLACE:
                for suffix in STAGED_SUFFIXES:
                    staged_path(self.directory, group.base, suffix).unlink(missing_ok=True)

    def discard(self) -> None:
        self.remove_staged_files()

    def remove_staged_files(self) -> None:
        for group in self.groups:
            if group.action == REPLACE:
                for suffix in STAGED_SUFFIXES:
                    try:
                        staged_path(self.directory, group.base, suffix).unlink(missing_ok=True)
                    except OSError as exc:
                        log.error("cannot remove a file of an abandoned compaction: %s", exc)

    def _close_fds(self) -> None:
        for snapshot in self.snapshots:
            if snapshot.fd >= 0:
                os.close(snapshot.fd)
                snapshot.fd = -1

    def __del__(self) -> None:
        self._close_fds()  # a job dropped without run() must not leak descriptors

