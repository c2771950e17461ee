"""Compaction of a FileLog, part one: the cleaning job that runs on a worker thread.

    prepare (log's thread)  FileLog.prepare_cleaning snapshots the cleanable segments: the closed
                            segments from the log start up to the first one that is not flushed
                            yet (so every record a decision rests on is already on disk). It
                            duplicates their fds, so whatever the log does meanwhile (append,
                            roll, close) the job reads what it captured.
    run (worker thread)     pass 1 builds key -> newest offset over the snapshot; pass 2 writes
                            each group that changes into `<base>.log.cleaned` with its
                            `.index.cleaned` and `.timeindex.cleaned` (built by the same code as
                            appends, so they equal a rebuild), and fsyncs them. Last, it raises the
                            cleaner checkpoint to the end of the snapshot (see below) durably.
    swap (log's thread)     FileLog.swap_cleaned renames the files into place (roster.log.file).

The cleaner checkpoint (`cleaner-offset-checkpoint`, written atomically) is the offset up to
which the log has been cleaned: segments wholly below it may have gaps between batches and
after their last batch, and recovery accepts those gaps there (roster.log.loading) while keeping
the strict, dense checks for every later segment. It is raised before any cleaned file is renamed
into the log, so a gap on disk is always covered by it. It also tells the cleaner how much of the
log is dirty, so a restart does not clean again what was already cleaned.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from roster.log.api import CleaningStats, LogStorageError
from roster.log.batch import BATCH_HEADER_SIZE, parse_header
from roster.log.compaction import KEEP, REPLACE, Group, Pass, Source
from roster.log.files import open_directory, write_offset_file
from roster.log.segment import LOG_SUFFIX, OFFSET_INDEX_SUFFIX, TIME_INDEX_SUFFIX, Segment, file_name
from roster.log.window import MAX_WINDOW, ReadWindow

log = logging.getLogger("roster.log")

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
CLEANED_TAG = ".cleaned"
STAGED_SUFFIXES = (LOG_SUFFIX, OFFSET_INDEX_SUFFIX, TIME_INDEX_SUFFIX)


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
    def __init__(self, directory: Path, snapshots: list[Snapshot], checkpoint: int,
                 tombstone_cutoff_ms: int, segment_bytes: int, index_interval_bytes: int) -> None:
        self.directory = directory
        self.snapshots = snapshots
        self.checkpoint = checkpoint        # the cleaner checkpoint run() writes
        self.index_interval_bytes = index_interval_bytes
        self.plan = Pass([s.source for s in snapshots], tombstone_cutoff_ms, segment_bytes)
        self.groups: list[Group] = []
        self.stats: CleaningStats | None = None
        self.error: BaseException | None = None
        self.run_ms = 0.0
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def finished(self) -> bool:
        return self.stats is not None

    def run(self) -> None:
        started = time.monotonic()
        try:
            for number, snapshot in enumerate(self.snapshots):
                for header, batch in self._batches(snapshot):
                    self.plan.map_batch(number, header, batch)
            self.groups = self.plan.plan()
            bytes_after = 0
            for group in self.groups:
                if group.action == KEEP:
                    bytes_after += self.snapshots[group.first].source.size
                elif group.action == REPLACE:
                    bytes_after += self._write_group(group)
            write_offset_file(self.directory / CLEANER_CHECKPOINT, self.checkpoint)
            fsync_directory(self.directory)  # the checkpoint is durable before any swap
            self.stats = self.plan.stats(self.groups, bytes_after)
        except BaseException as exc:
            self.error = exc
            self.remove_staged_files()
            raise
        finally:
            self.run_ms = (time.monotonic() - started) * 1000
            self.plan.newest = {}  # the map can be large; the swap does not need it
            self._close_fds()

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
            yield header, data
            position += header.size

    def _write_group(self, group: Group) -> int:
        """Write the group's survivors as a staged segment, fsynced; returns its size."""
        staged = Segment.create(self.directory, group.base, self.index_interval_bytes,
                                tag=CLEANED_TAG)
        try:
            for snapshot in self.snapshots[group.first:group.stop]:
                for header, batch in self._batches(snapshot):
                    cleaned = self.plan.clean_batch(header, batch)
                    if cleaned is None:
                        continue
                    staged.append(cleaned, header if cleaned is batch else parse_header(cleaned))
            staged.seal()
            staged.fsync()
            return staged.size
        finally:
            staged.close()

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

