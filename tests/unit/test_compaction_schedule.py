"""When a compacted log is cleaned, as Kafka's LogCleanerManager decides: the dirty ratio
(strictly above min.cleanable.dirty.ratio), min.compaction.lag.ms holding young segments back,
max.compaction.lag.ms forcing a pass, compact+delete retention under the cleaner, and each
topic's own settings over the broker's defaults."""
from __future__ import annotations

from roster.broker.partitions.cleaner import cleaner_settings
from roster.config import BrokerConfig
from roster.log.api import LogConfig
from roster.log.compaction import CleanerSettings, Source, clean_now, cleanable_range
from roster.log.file import FileLog
from tests.unit.test_compaction_model import flush_file, make_batch, stored

NOW = 1_000_000_000
HOUR = 3_600_000


def segments(*timestamps: int, size: int = 100) -> list[Source]:
    """Consecutive closed segments of 10 offsets, each with the given record timestamps."""
    return [Source(10 * i, 10 * i + 10, size, stamp, stamp) for i, stamp in enumerate(timestamps)]


def test_the_dirty_ratio_must_be_strictly_above_the_minimum():
    half = cleanable_range(segments(0, 0, 0, 0), 20, 0, NOW, CleanerSettings())
    assert (half.clean_bytes, half.dirty_bytes, half.dirty_ratio) == (200, 200, 0.5)
    assert not half.should_clean(0.5) and half.should_clean(0.49)


def test_min_compaction_lag_leaves_segments_with_young_records_uncleanable():
    lag = CleanerSettings(min_compaction_lag_ms=HOUR)
    stamps = (NOW - 3 * HOUR, NOW - 2 * HOUR, NOW - HOUR + 1, NOW - 5 * HOUR)
    status = cleanable_range(segments(*stamps), 0, 0, NOW, lag)
    assert status.first_uncleanable_offset == 20, "the first young segment stops the range"
    assert status.dirty_bytes == 200
    assert cleanable_range(segments(NOW - 1), 0, 0, NOW, lag).dirty_bytes == 0


def test_max_compaction_lag_cleans_whatever_the_ratio():
    old_dirt = segments(NOW, NOW, NOW, NOW - 2 * HOUR)   # only the last segment is dirty
    status = cleanable_range(old_dirt, 30, 0, NOW, CleanerSettings(max_compaction_lag_ms=HOUR))
    assert status.dirty_ratio == 0.25 and status.needs_compaction_now
    assert status.should_clean(0.5)
    assert not cleanable_range(old_dirt, 30, 0, NOW, CleanerSettings()).should_clean(0.5)
    young = CleanerSettings(max_compaction_lag_ms=3 * HOUR)
    assert not cleanable_range(old_dirt, 30, 0, NOW, young).should_clean(0.5)


def test_a_first_dirty_offset_below_the_log_start_restarts_at_the_log_start():
    status = cleanable_range(segments(0, 0, 0)[1:], 5, 10, NOW, CleanerSettings())
    assert status.first_dirty_offset == 10 and status.clean_bytes == 0


def test_young_records_are_not_compacted_until_the_lag_has_passed(tmp_path):
    log = FileLog.open(tmp_path / "p-0", LogConfig(segment_bytes=200, retention_ms=-1))
    try:
        for i in range(40):
            log.append(make_batch([(b"k%d" % (i % 4), b"v%d" % i)], NOW, False, 0, 0))
        flush_file(log)
        lag = CleanerSettings(min_compaction_lag_ms=HOUR)
        assert clean_now(log, NOW + HOUR - 1, lag) is None
        assert clean_now(log, NOW + HOUR, lag) is not None
    finally:
        log.close()


def test_compact_and_delete_retention_deletes_old_segments_and_the_cleaner_goes_on(tmp_path):
    config = LogConfig(segment_bytes=200, retention_ms=HOUR)
    log = FileLog.open(tmp_path / "p-0", config)
    try:
        for i in range(30):
            log.append(make_batch([(b"k%d" % (i % 3), b"old%d" % i)], NOW - 2 * HOUR, False, 0, 0))
        for i in range(30):
            log.append(make_batch([(b"k%d" % (i % 5), b"new%d" % i)], NOW, False, 0, 0))
        flush_file(log)
        assert log.enforce_retention(NOW) > 0, "time retention still deletes old segments"
        start = log.log_start_offset
        status = log.cleaning_status(NOW, CleanerSettings())
        assert status.first_dirty_offset == start, "the cleaner starts at the new log start"
        assert clean_now(log, NOW, CleanerSettings()) is not None
        values = [value for _, records in stored(log) for _, _, value, _ in records]
        assert not any(value.startswith(b"old") for value in values)
    finally:
        log.close()


def test_a_topics_own_settings_override_the_brokers():
    config = BrokerConfig.from_overrides({"log.cleaner.delete.retention.ms": "5",
                                          "log.cleaner.dedupe.buffer.size": "4800"})
    mine = cleaner_settings({"cleanup.policy": "compact", "delete.retention.ms": "7",
                             "min.cleanable.dirty.ratio": "0.1", "min.compaction.lag.ms": "3",
                             "max.compaction.lag.ms": "9"}, config)
    assert (mine.delete_retention_ms, mine.min_cleanable_ratio, mine.min_compaction_lag_ms,
            mine.max_compaction_lag_ms, mine.map_bytes) == (7, 0.1, 3, 9, 4800)
    default = cleaner_settings({"cleanup.policy": "compact"}, config)
    assert (default.delete_retention_ms, default.min_cleanable_ratio) == (5, 0.5)


def test_the_cleaner_io_throttle_sleeps_down_to_the_configured_rate():
    from roster.log.throttle import Throttler

    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    throttle = Throttler(1_000_000, clock=lambda: now[0], sleep=sleep)
    for _ in range(10):            # 10 MB in 0.5 s: twenty times the rate
        now[0] += 0.05
        throttle.observe(1_000_000)
    assert abs(now[0] - 10.0) < 0.2, "the elapsed time is what 10 MB at 1 MB/s takes"
    assert Throttler(float("inf"), clock=lambda: 0.0, sleep=sleep).unlimited
    assert BrokerConfig.from_overrides({})["log.cleaner.io.max.bytes.per.second"] > 1e300
