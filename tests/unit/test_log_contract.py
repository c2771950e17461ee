"""The PartitionLog contract, run against both implementations: they must behave the same."""
import time

import pytest

from roster.log.api import CorruptBatch, LogConfig, OffsetOutOfRange, RecordTooLarge, TimestampLookup
from roster.log.batch import iter_batches, validate
from roster.log.file import FileLog
from roster.log.memory import MemoryLog
from tests.unit.batches import make_batch

ONE_BATCH_PER_SEGMENT = {"segment_bytes": 1}


@pytest.fixture(params=["memory", "file"])
def open_log(request, tmp_path):
    opened = []

    def open_log(**settings):
        config = LogConfig(**settings)
        if request.param == "memory":
            log = MemoryLog(config)
        else:
            log = FileLog.open(tmp_path / "topic-0", config)
        opened.append(log)
        return log

    yield open_log
    for log in opened:
        log.close()


def batches_in(data: bytes) -> list[tuple[int, int]]:
    """(base offset, last offset) of each batch in a read result, each checked to be intact."""
    ranges = []
    for position, header in iter_batches(data):
        validate(data[position:position + header.size])
        ranges.append((header.base_offset, header.last_offset))
    return ranges


def test_offsets_are_assigned_densely_across_batches_of_different_sizes(open_log):
    log = open_log()
    results = [log.append(make_batch(n, value_size=7 * n)) for n in (1, 5, 2, 10)]
    expected = [(0, 0), (1, 5), (6, 7), (8, 17)]
    assert [(r.base_offset, r.last_offset) for r in results] == expected
    assert results[1].max_timestamp == 1_004
    assert (log.log_start_offset, log.log_end_offset) == (0, 18)
    everything = log.read(0, 1 << 20)
    assert batches_in(everything) == expected
    assert log.size_bytes == len(everything)


def test_a_read_from_the_middle_of_a_batch_returns_that_whole_batch(open_log):
    log = open_log(index_interval_bytes=0)
    for n in (3, 4, 3):
        log.append(make_batch(n))
    assert batches_in(log.read(5, 1))[0] == (3, 6)
    assert batches_in(log.read(9, 1 << 20)) == [(7, 9)]


def test_max_bytes_is_honoured_but_one_batch_always_comes_back(open_log):
    log = open_log()
    sizes = [len(make_batch(n, value_size=30)) for n in (2, 3, 4)]
    for n in (2, 3, 4):
        log.append(make_batch(n, value_size=30))
    assert batches_in(log.read(0, 0)) == [(0, 1)]
    assert batches_in(log.read(0, 1)) == [(0, 1)]
    assert batches_in(log.read(0, sizes[0] + sizes[1] - 1)) == [(0, 1)]
    assert batches_in(log.read(0, sizes[0] + sizes[1])) == [(0, 1), (2, 4)]
    assert batches_in(log.read(3, sizes[1] + sizes[2] - 1)) == [(2, 4)]
    assert batches_in(log.read(3, 1 << 20)) == [(2, 4), (5, 8)]


def test_reads_outside_the_log_are_refused_and_the_end_reads_empty(open_log):
    log = open_log()
    assert log.read(0, 100) == b""
    with pytest.raises(OffsetOutOfRange):
        log.read(1, 100)
    log.append(make_batch(3))
    assert log.read(3, 100) == b""
    for offset in (-1, 4, 1 << 40):
        with pytest.raises(OffsetOutOfRange):
            log.read(offset, 100)


def test_reads_continue_across_segments(open_log):
    log = open_log(**ONE_BATCH_PER_SEGMENT)
    for n in (1, 2, 3):
        log.append(make_batch(n))
    assert batches_in(log.read(0, 1 << 20)) == [(0, 0), (1, 2), (3, 5)]
    assert batches_in(log.read(2, 1 << 20)) == [(1, 2), (3, 5)]


@pytest.mark.parametrize("settings, expected", [
    ({}, [(0, 0), (1, 2), (3, 5)]),
    (ONE_BATCH_PER_SEGMENT, [(3, 5)]),  # the others went into earlier segments
], ids=["one-segment", "rolled"])
def test_active_batch_headers_are_the_active_segments_batches_as_stored(open_log, settings,
                                                                        expected):
    log = open_log(**settings)
    for n in (1, 2, 3):
        log.append(make_batch(n))
    assert [(h.base_offset, h.last_offset) for h in log.active_batch_headers()] == expected


@pytest.mark.parametrize("settings", [{}, {"segment_bytes": 300, "index_interval_bytes": 0}],
                         ids=["one-segment", "small-segments"])
def test_offset_for_timestamp_finds_the_first_record_at_or_after(open_log, settings):
    log = open_log(**settings)
    for timestamps in ([100, 200, 300], [150, 250], [500, 400], [120], [600]):
        log.append(make_batch(len(timestamps), timestamps=timestamps))
    cases = {0: (0, 100), 100: (0, 100), 180: (1, 200), 260: (2, 300), 301: (5, 500),
             450: (5, 500), 501: (8, 600), 600: (8, 600)}
    for target, (offset, timestamp) in cases.items():
        assert log.offset_for_timestamp(target) == TimestampLookup(offset, timestamp), target
    assert log.offset_for_timestamp(601) is None


def test_max_timestamp_names_the_first_record_that_has_it(open_log):
    log = open_log(**ONE_BATCH_PER_SEGMENT)
    assert log.max_timestamp() is None
    log.append(make_batch(3, timestamps=[10, 30, 20]))
    assert log.max_timestamp() == TimestampLookup(1, 30)
    log.append(make_batch(3, timestamps=[50, 70, 70], compression="gzip", value_size=100))
    log.append(make_batch(2, timestamps=[70, 60]))
    assert log.max_timestamp() == TimestampLookup(4, 70)


def test_advancing_the_log_start_hides_records_and_drops_whole_segments_below_it(open_log):
    log = open_log(**ONE_BATCH_PER_SEGMENT)
    for n in (1, 2, 3):
        log.append(make_batch(n))  # offsets 0 | 1-2 | 3-5 (the active segment)
    size = log.size_bytes
    assert log.advance_log_start(2) == 2
    assert log.log_start_offset == 2 and log.size_bytes < size  # the segment of offset 0 went
    with pytest.raises(OffsetOutOfRange):
        log.read(1, 1 << 20)
    assert batches_in(log.read(2, 1 << 20)) == [(1, 2), (3, 5)]  # the batch holding 2, whole
    assert log.advance_log_start(1) == 2  # never back
    with pytest.raises(OffsetOutOfRange):
        log.advance_log_start(7)
    assert log.advance_log_start(6) == 6 and log.read(6, 1 << 20) == b""
    assert log.append(make_batch(1)).base_offset == 6


def test_retention_by_time_deletes_the_oldest_expired_segments(open_log):
    log = open_log(retention_ms=1_000, **ONE_BATCH_PER_SEGMENT)
    for timestamp in (1_000, 2_000, 3_000, 4_000):
        log.append(make_batch(timestamp=timestamp))
    assert log.enforce_retention(now_ms=2_500) == 1      # 1_000 < 2_500 - 1_000 only
    assert log.enforce_retention(now_ms=3_500) == 1
    assert log.log_start_offset == 2
    with pytest.raises(OffsetOutOfRange):
        log.read(1, 100)
    assert batches_in(log.read(2, 1 << 20)) == [(2, 2), (3, 3)]
    assert log.offset_for_timestamp(0) == TimestampLookup(2, 3_000)


def test_retention_of_an_expired_active_segment_empties_the_log(open_log):
    log = open_log(retention_ms=1_000)
    for timestamp in (1_000, 2_000):
        log.append(make_batch(2, timestamp=timestamp))
    assert log.enforce_retention(now_ms=10_000) == 1
    assert log.log_start_offset == log.log_end_offset == 4
    assert log.size_bytes == 0 and log.read(4, 100) == b""
    assert log.max_timestamp() is None and log.offset_for_timestamp(0) is None
    with pytest.raises(OffsetOutOfRange):
        log.read(3, 100)
    assert log.enforce_retention(now_ms=10_000) == 0
    assert log.append(make_batch()).base_offset == 4


def test_retention_by_size_keeps_at_least_retention_bytes(open_log):
    size = len(make_batch())
    log = open_log(retention_bytes=2 * size, **ONE_BATCH_PER_SEGMENT)
    for _ in range(5):
        log.append(make_batch())
    assert log.enforce_retention(now_ms=0) == 3
    assert (log.log_start_offset, log.size_bytes) == (3, 2 * size)
    with pytest.raises(OffsetOutOfRange):
        log.read(2, 100)


def test_retention_by_size_never_deletes_the_active_segment(open_log):
    log = open_log(retention_bytes=0, **ONE_BATCH_PER_SEGMENT)
    for _ in range(3):
        log.append(make_batch())
    assert log.enforce_retention(now_ms=0) == 2
    assert batches_in(log.read(2, 100)) == [(2, 2)]


def test_no_retention_limits_keep_everything(open_log):
    log = open_log(retention_ms=-1, retention_bytes=-1, **ONE_BATCH_PER_SEGMENT)
    for _ in range(3):
        log.append(make_batch(timestamp=1))
    assert log.enforce_retention(now_ms=1 << 50) == 0


def test_segments_without_timestamps_age_from_their_last_write(open_log):
    log = open_log(retention_ms=60_000, **ONE_BATCH_PER_SEGMENT)
    log.append(make_batch(timestamps=[-1]))
    log.append(make_batch(timestamps=[-1]))
    now = time.time_ns() // 1_000_000
    assert log.enforce_retention(now_ms=now) == 0
    assert log.enforce_retention(now_ms=now + 120_000) == 2
    assert log.log_start_offset == 2


def test_rejected_batches_leave_the_log_untouched(open_log):
    log = open_log(max_message_bytes=200)
    log.append(make_batch())
    before = log.read(0, 1 << 20)
    with pytest.raises(RecordTooLarge):
        log.append(make_batch(value_size=500))
    corrupt = bytearray(make_batch())
    corrupt[-1] ^= 1
    with pytest.raises(CorruptBatch):
        log.append(bytes(corrupt))
    assert log.log_end_offset == 1 and log.read(0, 1 << 20) == before


def test_flush_jobs_cover_everything_appended(open_log):
    log = open_log(**ONE_BATCH_PER_SEGMENT)
    log.append(make_batch(2))
    log.append(make_batch(3))
    job = log.prepare_flush()
    assert job is not None and job.end_offset == 5
    job.run()
    log.flushed(job)
    assert log.prepare_flush() is None
    log.append(make_batch())
    job = log.prepare_flush()
    assert job.end_offset == 6
    job.run()
