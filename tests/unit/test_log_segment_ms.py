"""segment.ms as Kafka's LogSegment.shouldRoll applies it, for both logs: a batch whose
maxTimestamp is more than segment.ms past the active segment's first batch's rolls the segment;
a batch within it joins; without segment.ms nothing rolls by time; a reopened log measures from
the first batch on disk."""
from __future__ import annotations

import pytest

from roster.log.api import LogConfig
from roster.log.file import FileLog
from roster.log.memory import MemoryLog
from tests.unit.batches import make_batch

HOUR = 3_600_000


@pytest.fixture(params=["memory", "file"])
def open_log(request, tmp_path):
    opened = []

    def open_log(**settings):
        config = LogConfig(**settings)
        log = MemoryLog(config) if request.param == "memory" else \
            FileLog.open(tmp_path / "topic-0", config)
        opened.append(log)
        return log

    yield open_log
    for log in opened:
        log.close()


def segment_count(log) -> int:
    return len(log._segments)


def test_a_batch_past_segment_ms_rolls_the_active_segment(open_log):
    log = open_log(segment_ms=HOUR)
    log.append(make_batch(timestamp=10 * HOUR))
    log.append(make_batch(timestamp=10 * HOUR + HOUR))       # exactly segment.ms: joins
    assert segment_count(log) == 1
    log.append(make_batch(timestamp=10 * HOUR + HOUR + 1))   # past it: a new segment
    assert segment_count(log) == 2
    log.append(make_batch(timestamp=10 * HOUR + HOUR + 2))   # measured from the new first
    assert segment_count(log) == 2


def test_without_segment_ms_time_never_rolls(open_log):
    log = open_log()
    log.append(make_batch(timestamp=0))
    log.append(make_batch(timestamp=1000 * HOUR))
    assert segment_count(log) == 1


def test_a_reopened_file_log_measures_from_its_first_batch_on_disk(tmp_path):
    path = tmp_path / "topic-0"
    log = FileLog.open(path, LogConfig(segment_ms=HOUR))
    log.append(make_batch(timestamp=5 * HOUR))
    log.close()
    log = FileLog.open(path, LogConfig(segment_ms=HOUR))
    try:
        log.append(make_batch(timestamp=6 * HOUR + 1))
        assert segment_count(log) == 2
    finally:
        log.close()
