"""FileLog: a partition log kept in a directory of segment files, recovered after a crash.

Directory layout (Kafka's names where Kafka has one):
    <base:020d>.log / .index / .timeindex   segments, oldest first; the last one is active
    recovery-point     offset below which everything is known to be fsynced
    log-start-offset   first offset still readable (advanced by retention)
    clean-shutdown     present only between a clean close() and the next open()
    <base>.txnindex / <offset>.snapshot   aborted transactions and producer state
                       (roster.log.txn_files; recovery rebuilds them)
    cleaner-offset-checkpoint  how far compaction has cleaned (compacted topics; roster.log.cleaning)
    *.cleaned          replacement segments a compaction pass is writing; removed on open()

Recovery on open() follows the rules in roster.log.loading.

Compaction: prepare_cleaning() snapshots, the job runs elsewhere (roster.log.cleaning) and
swap_cleaned() installs its files (both in roster.log.file_compaction, with the swap protocol and
its crash analysis).

Durability: appends only reach the page cache. Each segment counts its changes (write generation);
prepare_flush() duplicates the fds of every segment with unsynced changes (a rolled segment
included) and of the directory if files were created or deleted, and flushed() records which
generations the job covered. A failed job therefore leaves its segments unsynced for the next one.
Of the active segment a flush syncs only the `.log`: that is all an acknowledged write needs,
because recovery never trusts the active segment's index files (it rebuilds them from the log,
roster.log.loading). The recovery point therefore stops at the active segment's base offset, and
moves past a segment only once a flush has synced all three of its files, after its roll. close()
syncs everything, the active segment's indexes included, before marking a clean shutdown.
"""
from __future__ import annotations

import bisect
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from roster.log import txn_files
from roster.log.api import AppendResult, LogConfig, LogStorageError, TimestampLookup
from roster.log.batch import BATCH_HEADER_SIZE, BatchHeader, parse_header, restamped
from roster.log.cleaning import CLEANED_TAG, CLEANER_CHECKPOINT, FIRST_DIRTY_OFFSET
from roster.log.file_compaction import FileLogCompaction
from roster.log.files import open_directory, read_offset_file, write_offset_file
from roster.log.loading import load_segments
from roster.log.policy import check_batch, plan_retention, should_roll
from roster.log.producer_state import AbortedIndex, ProducerState
from roster.log.segment import Segment
from roster.log.segmented import SegmentedLog

log = logging.getLogger("roster.log")

RECOVERY_POINT = "recovery-point"
LOG_START_OFFSET = "log-start-offset"
CLEAN_SHUTDOWN = "clean-shutdown"


class FileFlushJob:
    """fsyncs of duplicated fds, so the log may roll or delete segments while it runs."""

    __slots__ = ("end_offset", "recovery_point", "_fds", "segments", "directory_generation")

    def __init__(self, end_offset: int, recovery_point: int, fds: list[int],
                 segments: list[tuple[Segment, int, bool]],
                 directory_generation: int | None) -> None:
        self.end_offset = end_offset          # every offset below it is on disk once the job ran
        self.recovery_point = recovery_point  # every segment below it is, indexes included
        self._fds = fds
        # (segment, write generation captured, whether its index files are synced too)
        self.segments = segments
        self.directory_generation = directory_generation  # None: the directory was not dirty

    def run(self) -> None:
        fds, self._fds = self._fds, []
        try:
            for fd in fds:
                os.fsync(fd)
        finally:
            for fd in fds:
                os.close(fd)

    def __del__(self) -> None:
        # A job dropped without run() (its caller was cancelled) must not leak descriptors.
        for fd in self._fds:
            os.close(fd)


class FileLog(FileLogCompaction, SegmentedLog):
    def __init__(self, directory: Path, config: LogConfig, directory_fd: int,
                 segments: list[Segment], log_start: int, recovery_point: int,
                 persisted_recovery_point: int, cleaned_to: int = 0,
                 first_dirty: int = 0) -> None:
        self._dir = directory
        self._cleaned_to = cleaned_to  # gaps are allowed below it (roster.log.cleaning)
        self._first_dirty = first_dirty  # where the next compaction pass starts mapping
        self._config = config
        self._dir_fd = directory_fd
        self._segments = segments
        self._log_start = log_start
        self._recovery_point = recovery_point
        self._persisted_recovery_point = persisted_recovery_point
        # Like a segment's write generation: bumped when files are created or deleted, and a
        # flush job that fsyncs the directory records the generation it covered.
        self._dir_generation = 0
        self._dir_synced_generation = 0
        self._closed = False
        self._producers = ProducerState()
        self._aborted = AbortedIndex()

    def __repr__(self) -> str:
        return f"FileLog({str(self._dir)!r}, offsets {self.log_start_offset}..{self.log_end_offset})"

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path, config: LogConfig) -> FileLog:
        """Open (or create) the log in `directory`, recovering it if it was not closed cleanly."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            for leftover in directory.glob("*.tmp"):  # an interrupted write_offset_file
                leftover.unlink()
            leftovers = sorted(directory.glob("*" + CLEANED_TAG))  # an interrupted compaction
            for leftover in leftovers:
                leftover.unlink()
            if leftovers:
                log.info("removed %d file(s) of an interrupted compaction from %s: %s",
                         len(leftovers), directory, " ".join(p.name for p in leftovers))
            directory_fd = open_directory(directory)
        except OSError as exc:
            raise LogStorageError(f"cannot open log directory {directory}: {exc}") from exc
        try:
            return cls._open(directory, config, directory_fd)
        except BaseException:
            os.close(directory_fd)
            raise

    @classmethod
    def _open(cls, directory: Path, config: LogConfig, directory_fd: int) -> FileLog:
        marker = directory / CLEAN_SHUTDOWN
        clean = marker.exists()
        recovery_point = read_offset_file(directory / RECOVERY_POINT) or 0
        log_start = read_offset_file(directory / LOG_START_OFFSET) or 0
        cleaned_to = read_offset_file(directory / CLEANER_CHECKPOINT) or 0
        # Missing until a first swap completes (a directory of an older roster, or a crash in
        # the first pass): everything is dirty, and the next pass cleans it all again.
        first_dirty = read_offset_file(directory / FIRST_DIRTY_OFFSET) or 0
        segments: list[Segment] = []
        try:
            changed = load_segments(directory, config, clean, recovery_point, log_start,
                                    cleaned_to, segments)
            if not segments:
                segments.append(Segment.create(directory, log_start, config.index_interval_bytes))
                changed = True
            if cleaned_to > segments[-1].next_offset:
                # Recovery cut the log below the checkpoint: segments written from here on must
                # not inherit the permission to have gaps.
                cleaned_to = segments[-1].next_offset
                write_offset_file(directory / CLEANER_CHECKPOINT, cleaned_to)
                changed = True
            if clean:
                marker.unlink()
                changed = True
            if changed:
                os.fsync(directory_fd)
            producers, aborted = txn_files.restore(directory, segments, clean, recovery_point)
        except OSError as exc:
            for segment in segments:
                segment.close()
            raise LogStorageError(f"cannot open the log in {directory}: {exc}") from exc
        log_end = segments[-1].next_offset
        log_start = min(max(log_start, segments[0].base_offset), log_end)
        if clean:
            recovery_point = log_end
        if first_dirty > log_end:  # Kafka's rule: a checkpoint past the end cleans all again
            first_dirty = log_start
        opened = cls(directory, config, directory_fd, segments, log_start,
                     min(recovery_point, log_end), recovery_point, cleaned_to, first_dirty)
        opened._producers, opened._aborted = producers, aborted
        return opened

    # -- the PartitionLog protocol (offsets and sizes: SegmentedLog) ---------------------------

    def append(self, batch: bytes) -> AppendResult:
        self._require_open()
        header = check_batch(batch, self._config)
        self._check_control(header, batch)
        base = self.log_end_offset
        stored = restamped(batch, base)  # pieces written with one writev: no copy of the records
        header.base_offset = base
        header.partition_leader_epoch = 0
        active = self._segments[-1]
        try:
            if should_roll(active.size, active.base_offset, len(batch), header.last_offset,
                           self._config, self._aged(active, header.max_timestamp)):
                active = self._roll()
            active.append(stored, header)
        except OSError as exc:
            raise LogStorageError(f"cannot append to {active.path}: {exc}") from exc
        if header.producer_id >= 0:
            txn_files.record_abort(self._dir, active.base_offset,
                                   self._track_producer(header, batch))
        return AppendResult(base, header.last_offset, header.max_timestamp)

    def read(self, offset: int, max_bytes: int) -> bytes:
        self._require_open()
        segments = self._segments_from(offset)
        chunks: list[bytes] = []
        budget = max_bytes
        try:
            for segment in segments:
                if offset >= segment.next_offset:
                    continue
                data, full = segment.read(offset, budget, at_least_one=not chunks)
                if data:
                    chunks.append(data)
                    budget -= len(data)
                if full:
                    break
                offset = segment.next_offset
        except OSError as exc:
            raise LogStorageError(f"cannot read {self._dir} at offset {offset}: {exc}") from exc
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def active_batch_headers(self) -> Iterator[BatchHeader]:
        self._require_open()
        for _, header in self._segments[-1].walk(0):
            yield header

    def offset_for_timestamp(self, timestamp: int) -> TimestampLookup | None:
        self._require_open()
        try:
            for segment in self._segments:
                if segment.max_timestamp >= timestamp:
                    found = segment.find_timestamp(timestamp)
                    if found is not None:
                        return TimestampLookup(*found)
        except OSError as exc:
            raise LogStorageError(f"cannot search {self._dir} by timestamp: {exc}") from exc
        return None

    def max_timestamp(self) -> TimestampLookup | None:
        self._require_open()
        best = self._segment_with_max_timestamp()
        if best is None:
            return None
        try:
            found = best.max_timestamp_record()
        except OSError as exc:
            raise LogStorageError(f"cannot read {best.path}: {exc}") from exc
        return TimestampLookup(*found) if found is not None else None

    def prepare_flush(self, with_active_indexes: bool = False) -> FileFlushJob | None:
        """A job that makes everything appended so far durable; None if it already is. Of the
        active segment only the `.log` is synced unless `with_active_indexes` (see the module
        docstring for why that is enough)."""
        self._require_open()
        end = self.log_end_offset
        active = self._segments[-1]
        work: list[tuple[Segment, int, bool]] = []
        for segment in self._segments:
            whole = with_active_indexes or segment is not active
            if segment.write_generation > (segment.synced_generation if whole
                                           else segment.log_synced_generation):
                work.append((segment, segment.write_generation, whole))
        directory_dirty = self._dir_generation > self._dir_synced_generation
        recovery_point = end if with_active_indexes else active.base_offset
        if not work and not directory_dirty and self._recovery_point >= recovery_point:
            return None
        fds: list[int] = []
        try:
            for segment, _, whole in work:
                fds.extend(segment.duplicate_fds(with_indexes=whole))
            if directory_dirty:
                fds.append(os.dup(self._dir_fd))
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            raise LogStorageError(f"cannot prepare a flush of {self._dir}: {exc}") from exc
        return FileFlushJob(end, recovery_point, fds, work,
                            self._dir_generation if directory_dirty else None)

    def flushed(self, job: FileFlushJob) -> None:
        for segment, generation, whole in job.segments:
            segment.log_synced_generation = max(segment.log_synced_generation, generation)
            if whole:
                segment.synced_generation = max(segment.synced_generation, generation)
        if job.directory_generation is not None:
            self._dir_synced_generation = max(self._dir_synced_generation, job.directory_generation)
        if self._closed or job.recovery_point <= self._recovery_point:
            return
        self._recovery_point = job.recovery_point
        # Recovery scans whole segments, so a recovery point inside the active segment saves
        # nothing over that segment's base. Rewriting the file only when the point has moved
        # into a newer segment keeps it off the hot path: once per roll, as in "roll-after-flush".
        holder = self._segments[max(bisect.bisect_right(self._segments, self._recovery_point,
                                                        key=_base_offset) - 1, 0)]
        if holder.base_offset > self._persisted_recovery_point:
            self._persist_recovery_point()

    def enforce_retention(self, now_ms: int) -> int:
        self._require_open()
        plan = plan_retention([(s.size, s.retention_timestamp()) for s in self._segments],
                              now_ms, self._config)
        if plan.delete == 0:
            return 0
        try:
            if plan.roll_first:
                self._roll()
            new_start = self._segments[plan.delete].base_offset
            if new_start > self._log_start:
                # Persisted before the files go: a crash in between leaves segments below the
                # log start, which open() deletes, never a log start below the surviving data.
                write_offset_file(self._dir / LOG_START_OFFSET, new_start)
                self._log_start = new_start
        except OSError as exc:
            raise LogStorageError(f"retention of {self._dir} failed: {exc}") from exc
        self._drop_oldest(plan.delete)
        log.info("retention deleted %d segment(s) of %s; the log now starts at %d",
                 plan.delete, self._dir, self._log_start)
        return plan.delete

    def _persist_log_start(self, offset: int) -> None:
        try:
            write_offset_file(self._dir / LOG_START_OFFSET, offset)
            os.fsync(self._dir_fd)  # the rename too: an answered DeleteRecords must hold
        except OSError as exc:
            raise LogStorageError(f"cannot move the log start of {self._dir}: {exc}") from exc

    def _drop_oldest(self, count: int) -> None:
        """Delete the oldest `count` segments (all below the log start)."""
        if count <= 0:
            return
        doomed = self._segments[:count]
        del self._segments[:count]
        for segment in doomed:
            try:
                segment.delete()
            except OSError as exc:
                log.error("cannot delete segment %s: %s", segment.path, exc)
        self._aborted.drop_before(self._segments[0].base_offset)
        txn_files.delete_txn_indexes_below(self._dir, self._segments[0].base_offset)
        self._dir_generation += 1

    def close(self) -> None:
        """Flush, record the recovery point and log start, mark a clean shutdown, release files."""
        if self._closed:
            return
        try:
            self._segments[-1].seal()
            txn_files.sealed(self._dir, self._segments[-1].base_offset, self.log_end_offset,
                             self._producers)  # a clean start replays nothing
            job = self.prepare_flush(with_active_indexes=True)
            if job is not None:
                job.run()
                self.flushed(job)
            write_offset_file(self._dir / RECOVERY_POINT, self._recovery_point)
            write_offset_file(self._dir / LOG_START_OFFSET, self._log_start)
            marker = os.open(self._dir / CLEAN_SHUTDOWN, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.fsync(marker)
            finally:
                os.close(marker)
            os.fsync(self._dir_fd)
        except OSError as exc:
            raise LogStorageError(f"cannot close {self._dir} cleanly: {exc}") from exc
        finally:
            self._release()

    def delete(self) -> None:
        """Release the files and remove the partition directory."""
        self._release()
        try:
            shutil.rmtree(self._dir)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise LogStorageError(f"cannot delete {self._dir}: {exc}") from exc

    # -- internals ---------------------------------------------------------------------------

    def _require_open(self) -> None:
        if self._closed:
            raise LogStorageError(f"the log in {self._dir} is closed")

    def _first_timestamp(self, segment: Segment) -> int:
        """The maxTimestamp of the segment's first batch (segment.ms rolls from it)."""
        return parse_header(segment.read_bytes(0, BATCH_HEADER_SIZE)).max_timestamp

    def _roll(self) -> Segment:
        """Seal the active segment and start an empty one at the log end."""
        old = self._segments[-1]
        old.seal()
        self._expire_producers()
        txn_files.sealed(self._dir, old.base_offset, old.next_offset, self._producers)
        new = Segment.create(self._dir, old.next_offset, self._config.index_interval_bytes)
        self._segments.append(new)
        self._dir_generation += 1
        log.debug("rolled %s to a new segment at offset %d", self._dir, new.base_offset)
        return new

    def _persist_recovery_point(self) -> None:
        try:
            write_offset_file(self._dir / RECOVERY_POINT, self._recovery_point)
        except OSError as exc:
            # Only costs a longer recovery scan after a crash; the old value is still correct.
            log.error("cannot write the recovery point of %s: %s", self._dir, exc)
            return
        self._persisted_recovery_point = self._recovery_point

    def _release(self) -> None:
        if self._closed:
            return
        self._closed = True
        for segment in self._segments:
            segment.close()
        os.close(self._dir_fd)


def _base_offset(segment: Segment) -> int:
    return segment.base_offset

