"""FileLog behaviour that only files have: segments on disk, restarts, recovery, storage errors."""
import errno
import logging
import os

import pytest

import roster.log.files
import roster.log.segment
from roster.log.api import LogConfig, LogStorageError, OffsetOutOfRange
from roster.log.file import CLEAN_SHUTDOWN, LOG_START_OFFSET, RECOVERY_POINT, FileLog
from roster.log.files import read_offset_file
from tests.unit.batches import make_batch

ONE_BATCH_PER_SEGMENT = {"segment_bytes": 1}


@pytest.fixture
def partition(tmp_path):
    return tmp_path / "topic-0"


@pytest.fixture
def open_log(partition):
    opened = []

    def open_log(**settings):
        log = FileLog.open(partition, LogConfig(**settings))
        opened.append(log)
        return log

    yield open_log
    for log in opened:
        log.close()


def names(partition, suffix=".log"):
    return sorted(p.name for p in partition.iterdir() if p.name.endswith(suffix))


def segment(partition, base, suffix=".log"):
    return partition / f"{base:020d}{suffix}"


def crash(log, partition):
    """Leave the directory as a crash after the last append would: no clean-shutdown marker."""
    log.close()
    (partition / CLEAN_SHUTDOWN).unlink()


def snapshot(log):
    """Everything a client can observe, for comparing a log before and after a restart."""
    reads = {offset: log.read(offset, 1 << 20)
             for offset in range(log.log_start_offset, log.log_end_offset + 1)}
    lookups = {ts: log.offset_for_timestamp(ts) for ts in range(0, 5_000, 250)}
    return (log.log_start_offset, log.log_end_offset, log.size_bytes, reads, lookups,
            log.max_timestamp())


def test_an_empty_directory_is_an_empty_log_at_zero(open_log, partition):
    log = open_log()
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (0, 0, 0)
    assert names(partition) == [f"{0:020d}.log"]
    assert log.prepare_flush() is None


def test_segments_roll_when_the_next_batch_would_not_fit(open_log, partition):
    size = len(make_batch())
    log = open_log(segment_bytes=2 * size + 10)
    for _ in range(5):
        log.append(make_batch())
    assert names(partition) == [f"{base:020d}.log" for base in (0, 2, 4)]
    assert [segment(partition, base).stat().st_size for base in (0, 2, 4)] == [2 * size, 2 * size, size]


def test_a_batch_larger_than_a_segment_gets_an_empty_segment_of_its_own(open_log, partition):
    log = open_log(segment_bytes=300)
    log.append(make_batch())
    big = log.append(make_batch(value_size=1_000))
    log.append(make_batch())
    assert big.base_offset == 1
    assert names(partition) == [f"{base:020d}.log" for base in (0, 1, 2)]


def test_a_reopened_log_reads_exactly_as_before(open_log, partition):
    settings = {"segment_bytes": 700, "index_interval_bytes": 150}
    log = open_log(**settings)
    for i in range(30):
        log.append(make_batch(1 + i % 4, timestamp=1_000 + 97 * i, value_size=5 + i))
    before = snapshot(log)
    log.close()
    assert (partition / CLEAN_SHUTDOWN).exists()
    log = open_log(**settings)
    assert not (partition / CLEAN_SHUTDOWN).exists()
    assert snapshot(log) == before
    assert log.prepare_flush() is None  # nothing to redo after a clean shutdown
    assert log.append(make_batch()).base_offset == before[1]
    after_append = snapshot(log)
    log.close()
    assert snapshot(open_log(**settings)) == after_append


@pytest.mark.parametrize("damage", ["cut mid-batch", "cut mid-header", "garbage appended",
                                    "crc mismatch"])
def test_a_damaged_tail_is_cut_off_on_an_unclean_open(open_log, partition, caplog, damage):
    log = open_log()
    batches = [make_batch(n, value_size=40) for n in (2, 3, 4)]
    for batch in batches:
        log.append(batch)
    crash(log, partition)
    path = segment(partition, 0)
    intact = len(batches[0]) + len(batches[1])
    with open(path, "r+b") as f:
        if damage == "cut mid-batch":
            f.truncate(intact + len(batches[2]) // 2)
        elif damage == "cut mid-header":
            f.truncate(intact + 20)
        elif damage == "garbage appended":
            f.seek(0, os.SEEK_END)
            f.write(b"\x00\x01not a batch at all" * 7)
        else:
            f.seek(-3, os.SEEK_END)
            f.write(b"XYZ")
    kept_end = 5 if damage != "garbage appended" else 9
    kept_size = intact if damage != "garbage appended" else intact + len(batches[2])
    cut = path.stat().st_size - kept_size

    with caplog.at_level(logging.WARNING, logger="roster.log"):
        log = open_log()
    assert (log.log_end_offset, log.size_bytes, path.stat().st_size) == (kept_end, kept_size, kept_size)
    warning, = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert path.name in warning.getMessage()
    assert f"position {kept_size}" in warning.getMessage()
    assert f"cutting {cut} bytes" in warning.getMessage()
    assert log.append(make_batch()).base_offset == kept_end
    assert log.read(kept_end, 1 << 20)[8 + 4:] == make_batch()[12:]


def test_a_clean_open_does_not_rescan_segments(open_log, partition):
    log = open_log()
    log.append(make_batch(3))
    log.close()
    with open(segment(partition, 0), "r+b") as f:
        f.seek(-1, os.SEEK_END)
        f.write(b"!")
    assert open_log().log_end_offset == 3  # trusted, as Kafka trusts a clean shutdown


def test_damage_in_an_early_segment_drops_every_later_segment(open_log, partition, caplog):
    log = open_log(**ONE_BATCH_PER_SEGMENT)
    for _ in range(4):
        log.append(make_batch(2))
    crash(log, partition)
    (partition / RECOVERY_POINT).unlink()  # nothing is known to be flushed: scan everything
    with open(segment(partition, 2), "r+b") as f:
        f.seek(-1, os.SEEK_END)
        f.write(b"!")
    with caplog.at_level(logging.WARNING, logger="roster.log"):
        log = open_log(**ONE_BATCH_PER_SEGMENT)
    assert log.log_end_offset == 2
    assert names(partition) == [f"{base:020d}.log" for base in (0, 2)]
    assert names(partition, ".index") == [f"{base:020d}.index" for base in (0, 2)]
    assert any("deleting the 2 later segment(s)" in r.getMessage() for r in caplog.records)
    assert log.append(make_batch()).base_offset == 2


def test_segments_below_the_recovery_point_are_trusted(open_log, partition):
    log = open_log(**ONE_BATCH_PER_SEGMENT)
    for _ in range(4):
        log.append(make_batch(2))
    crash(log, partition)
    assert read_offset_file(partition / RECOVERY_POINT) == 8  # close() synced everything
    with open(segment(partition, 0), "r+b") as f:  # flushed long ago: not checked again
        f.seek(-1, os.SEEK_END)
        f.write(b"!")
    with open(segment(partition, 6), "r+b") as f:  # the segment holding the recovery point is
        f.truncate(50)
    log = open_log(**ONE_BATCH_PER_SEGMENT)
    assert log.log_end_offset == 6
    assert log.read(0, 1)[-1:] == b"!"


def test_an_unclean_open_keeps_intact_data_and_flushes_it_again(open_log, partition, caplog):
    log = open_log()
    for n in (1, 2, 3):
        log.append(make_batch(n))
    before = snapshot(log)
    crash(log, partition)
    with caplog.at_level(logging.WARNING, logger="roster.log"):
        log = open_log()
    assert snapshot(log) == before
    assert not caplog.records
    job = log.prepare_flush()
    assert job is not None and job.end_offset == 6
    job.run()
    log.flushed(job)


@pytest.mark.parametrize("damage", ["missing", "malformed", "stale"])
def test_unusable_index_files_are_rebuilt(open_log, partition, caplog, damage):
    settings = {"segment_bytes": 1_000, "index_interval_bytes": 0}
    log = open_log(**settings)
    for i in range(12):
        log.append(make_batch(2, timestamp=100 * i, value_size=60))
    before = snapshot(log)
    log.close()
    index, time_index = segment(partition, 0, ".index"), segment(partition, 0, ".timeindex")
    originals = index.read_bytes(), time_index.read_bytes()
    assert len(originals[0]) > 8 and len(originals[1]) > 12
    if damage == "missing":
        index.unlink()
        time_index.unlink()
    elif damage == "malformed":
        index.write_bytes(originals[0] + b"\x01")
        time_index.write_bytes(b"\x00" * 12 * 2)
    else:  # well-formed entries that point at the wrong batch
        index.write_bytes(originals[0][:-8] + originals[0][-16:-8])
    with caplog.at_level(logging.WARNING, logger="roster.log"):
        log = open_log(**settings)
    assert "rebuilding the indexes" in caplog.text
    assert snapshot(log) == before
    assert (index.read_bytes(), time_index.read_bytes()) == originals


def test_retention_deletes_files_and_the_new_log_start_survives_restarts(open_log, partition):
    settings = {"retention_ms": 1_000, **ONE_BATCH_PER_SEGMENT}
    log = open_log(**settings)
    for timestamp in (1_000, 2_000, 3_000, 4_000):
        log.append(make_batch(timestamp=timestamp))
    assert log.enforce_retention(now_ms=3_500) == 2
    assert names(partition) == [f"{base:020d}.log" for base in (2, 3)]
    assert names(partition, ".index") == [f"{base:020d}.index" for base in (2, 3)]
    log.close()
    log = open_log(**settings)
    assert (log.log_start_offset, log.log_end_offset) == (2, 4)
    with pytest.raises(OffsetOutOfRange):
        log.read(1, 100)

    assert log.enforce_retention(now_ms=1_000_000) == 2  # everything, the active segment too
    assert names(partition) == [f"{4:020d}.log"]
    assert read_offset_file(partition / LOG_START_OFFSET) == 4
    crash(log, partition)
    log = open_log(**settings)
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (4, 4, 0)
    assert log.append(make_batch()).base_offset == 4


def test_a_log_start_moved_by_delete_records_survives_a_crash(open_log, partition):
    log = open_log(**ONE_BATCH_PER_SEGMENT)
    for n in (2, 2, 2):
        log.append(make_batch(n))  # offsets 0-1 | 2-3 | 4-5
    assert log.advance_log_start(3) == 3
    assert names(partition) == [f"{base:020d}.log" for base in (2, 4)]
    crash(log, partition)
    log = open_log(**ONE_BATCH_PER_SEGMENT)
    assert (log.log_start_offset, log.log_end_offset) == (3, 6)
    with pytest.raises(OffsetOutOfRange):
        log.read(2, 100)


def test_segments_a_crash_left_below_the_log_start_are_deleted(open_log, partition):
    log = open_log(**ONE_BATCH_PER_SEGMENT)
    for _ in range(3):
        log.append(make_batch())
    crash(log, partition)
    (partition / LOG_START_OFFSET).write_text("2\n")  # retention got this far, then crashed
    log = open_log(**ONE_BATCH_PER_SEGMENT)
    assert (log.log_start_offset, log.log_end_offset) == (2, 3)
    assert names(partition) == [f"{2:020d}.log"]


class FlakyOs:
    """The os module, except that write() or writev() fails with ENOSPC on one call (after an
    optional short write on the first call), as a full disk would. Patched into roster.log.files
    only."""

    def __init__(self, fail_on_call: int, short_first_write: bool) -> None:
        self.calls = 0
        self.fail_on_call = fail_on_call
        self.short_first_write = short_first_write

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if self.calls == 1 and self.short_first_write:
            return os.write(fd, bytes(data[:len(data) // 2]))
        return os.write(fd, data)

    def writev(self, fd, buffers):
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if self.calls == 1 and self.short_first_write:
            data = b"".join(buffers)
            return os.write(fd, data[:len(data) // 2])
        return os.writev(fd, buffers)


@pytest.mark.parametrize("fail_on_call, short_first_write", [(1, False), (2, True)],
                         ids=["batch write fails", "short write then failure"])
def test_a_failed_write_changes_nothing(open_log, partition, monkeypatch, fail_on_call,
                                        short_first_write):
    settings = {"index_interval_bytes": 0}  # so the second append also adds index entries
    log = open_log(**settings)
    log.append(make_batch(2, timestamp=1_000))
    files = [segment(partition, 0, suffix) for suffix in (".log", ".index", ".timeindex")]
    before = snapshot(log), [f.stat().st_size for f in files]

    monkeypatch.setattr(roster.log.files, "os", FlakyOs(fail_on_call, short_first_write))
    with pytest.raises(LogStorageError, match="No space left"):
        log.append(make_batch(3, timestamp=2_000))
    monkeypatch.undo()

    assert (snapshot(log), [f.stat().st_size for f in files]) == before
    assert log.append(make_batch(3, timestamp=2_000)).base_offset == 2
    after = snapshot(log)
    log.close()
    assert snapshot(open_log(**settings)) == after


def test_a_failed_index_write_at_a_roll_changes_nothing(open_log, partition, monkeypatch):
    # Appends keep index entries in memory; a roll seals the old segment, which writes them.
    settings = {"index_interval_bytes": 0, **ONE_BATCH_PER_SEGMENT}
    log = open_log(**settings)
    log.append(make_batch(2, timestamp=1_000))
    before = snapshot(log)

    monkeypatch.setattr(roster.log.files, "os", FlakyOs(1, False))
    with pytest.raises(LogStorageError, match="No space left"):
        log.append(make_batch(3, timestamp=2_000))
    monkeypatch.undo()

    assert snapshot(log) == before
    assert log.append(make_batch(3, timestamp=2_000)).base_offset == 2
    after = snapshot(log)
    log.close()
    assert snapshot(open_log(**settings)) == after


def test_a_flush_job_survives_the_segments_it_covers_being_deleted(open_log, partition):
    log = open_log(retention_ms=0, **ONE_BATCH_PER_SEGMENT)
    for _ in range(3):
        log.append(make_batch(timestamp=1))
    job = log.prepare_flush()
    assert log.enforce_retention(now_ms=1_000) == 3
    job.run()
    log.flushed(job)
    # The base of the segment that was active when the job was prepared: the job synced only
    # its .log, and recovery never trusts an active segment's index files.
    assert read_offset_file(partition / RECOVERY_POINT) == 2


def test_the_recovery_point_is_written_once_a_flush_reaches_a_newer_segment(open_log, partition):
    log = open_log(**ONE_BATCH_PER_SEGMENT)

    def flush():
        job = log.prepare_flush()
        job.run()
        log.flushed(job)

    log.append(make_batch())
    flush()
    assert read_offset_file(partition / RECOVERY_POINT) is None  # still inside segment 0
    log.append(make_batch())  # rolls
    flush()
    # Segment 0 is synced whole now (indexes included); segment 1 is active, which recovery
    # never trusts, so the recovery point stops at its base.
    assert read_offset_file(partition / RECOVERY_POINT) == 1


def test_delete_removes_the_partition_directory(partition):
    log = FileLog.open(partition, LogConfig())
    log.append(make_batch())
    log.delete()
    assert not partition.exists()
    with pytest.raises(LogStorageError):
        log.read(0, 100)


def test_a_closed_log_refuses_work(partition):
    log = FileLog.open(partition, LogConfig())
    log.close()
    log.close()  # idempotent
    with pytest.raises(LogStorageError, match="closed"):
        log.append(make_batch())


def test_a_flush_syncs_the_active_segment_log_alone_and_rolled_segments_whole(open_log, partition):
    batch_size = len(make_batch(2))
    settings = {"index_interval_bytes": 0, "segment_bytes": 2 * batch_size}
    log = open_log(**settings)
    log.append(make_batch(2, timestamp=1_000))
    log.append(make_batch(2, timestamp=2_000))
    job = log.prepare_flush()
    assert [(s.base_offset, whole) for s, _, whole in job.segments] == [(0, False)]
    assert (job.end_offset, job.recovery_point) == (4, 0)
    job.run()
    log.flushed(job)
    # Index entries of the active segment live in memory until it is sealed.
    assert segment(partition, 0, ".index").stat().st_size == 0
    assert log.offset_for_timestamp(1_500).offset == 2

    log.append(make_batch(2, timestamp=3_000))  # rolls: segment 0 is sealed, its indexes written
    assert segment(partition, 0, ".index").stat().st_size > 0
    job = log.prepare_flush()
    assert [(s.base_offset, whole) for s, _, whole in job.segments] == [(0, True), (4, False)]
    assert (job.end_offset, job.recovery_point) == (6, 4)
    job.run()
    log.flushed(job)
    assert read_offset_file(partition / RECOVERY_POINT) == 4
    assert log.prepare_flush() is None

    before = snapshot(log)
    crash(log, partition)
    assert snapshot(open_log(**settings)) == before


def test_a_large_segment_reserves_blocks_ahead_and_gives_them_back_when_sealed(
        open_log, partition, monkeypatch):
    monkeypatch.setattr(roster.log.segment, "PREALLOCATE_AFTER", 0)
    monkeypatch.setattr(roster.log.segment, "PREALLOCATE_STEP", 4 << 20)
    settings = {"segment_bytes": 1 << 20}
    log = open_log(**settings)
    batch = make_batch(10, value_size=1000)
    for _ in range(5):
        log.append(batch)
    active = segment(partition, 0)
    if active.stat().st_blocks * 512 < 4 << 20:
        pytest.skip("this file system does not preallocate (fallocate KEEP_SIZE)")
    assert active.stat().st_size == log.size_bytes  # reserved blocks lie beyond the file's end
    before = snapshot(log)
    log.close()
    assert active.stat().st_blocks * 512 < 1 << 20
    assert snapshot(open_log(**settings)) == before
