"""The cleaner's memory is bounded by log.cleaner.dedupe.buffer.size, not by the size of the log.

A log with more distinct keys than the offset map holds is cleaned in several passes, each
mapping as many keys as fit (the map's capacity is the same whatever the log holds), and each
resuming where the previous stopped. The Python heap a pass uses (measured with tracemalloc; the
map itself is an mmap outside it, of a fixed size) does not grow with the log: a log four times
larger peaks no higher.
"""
from __future__ import annotations

import tracemalloc
from pathlib import Path

from roster.log.api import LogConfig, LogStorageError
from roster.log.compaction import CleanerSettings, clean_now
from roster.log.file import FileLog
from roster.log.offset_map import SLOT_BYTES
from tests.unit.test_compaction_model import flush_file, make_batch, stored

MAP_BYTES = SLOT_BYTES * 1024             # 1024 slots, 921 keys at the 0.9 load factor
SETTINGS = CleanerSettings(map_bytes=MAP_BYTES)
CONFIG = LogConfig(segment_bytes=32 * 1024, retention_ms=-1)


def build(directory: Path, keys: int) -> FileLog:
    log = FileLog.open(directory, CONFIG)
    for round_ in range(2):       # every key twice: the first value must go
        for start in range(0, keys, 10):
            log.append(make_batch([(b"key-%08d" % k, b"value %d of %d" % (round_, k))
                                   for k in range(start, min(start + 10, keys))],
                                  1_000, False, 0, 0))
    # one batch larger than a segment closes the last one, so every key is out of the active
    # segment (which is never cleaned)
    log.append(make_batch([(b"big", b"x" * CONFIG.segment_bytes)], 1_000, False, 0, 0))
    log.append(make_batch([(b"active", b"x")], 1_000, False, 0, 0))
    flush_file(log)
    return log


def clean_fully(log) -> tuple[int, int, set[int]]:
    """(passes, peak traced bytes of any pass, map capacities used)"""
    passes, peak, capacities = 0, 0, set()
    original = log.prepare_cleaning

    def prepare(now_ms, settings):
        job = original(now_ms, settings)
        jobs[:] = [job]
        return job

    jobs: list = []   # only the newest is kept: holding them all would itself grow the heap
    log.prepare_cleaning = prepare
    tracemalloc.start()
    try:
        while True:
            tracemalloc.reset_peak()
            if clean_now(log, 2_000, SETTINGS) is None:
                break
            peak = max(peak, tracemalloc.get_traced_memory()[1])
            passes += 1
            capacities.add(jobs[-1].map_capacity)
    finally:
        tracemalloc.stop()
        del log.prepare_cleaning
    return passes, peak, capacities


def test_a_log_with_more_keys_than_the_map_holds_is_cleaned_in_bounded_memory(tmp_path):
    results = {}
    for keys in (1_000, 4_000):
        log = build(tmp_path / f"p-{keys}", keys)
        try:
            passes, peak, capacities = clean_fully(log)
            values = {key: value for _, records in stored(log)
                      for _, key, value, _ in records}
            assert len(values) == keys + 2
            assert all(value.startswith(b"value 1 ") for key, value in values.items()
                       if key.startswith(b"key-")), "each key keeps its newest value"
            assert sum(len(records) for _, records in stored(log)) == keys + 2, \
                "and only that"
        finally:
            log.close()
        assert capacities == {921}, "the map never grows past log.cleaner.dedupe.buffer.size"
        assert passes >= (2 * keys) // 921, "a full map ends a pass; the next one resumes"
        results[keys] = peak
    small, large = results[1_000], results[4_000]
    assert large < small * 1.25 + 64 * 1024, \
        f"a pass over 4x the keys must not need more heap ({small} vs {large} bytes)"
    assert large < 1024 * 1024


def test_a_batch_with_more_keys_than_the_estimated_map_gets_the_full_map(tmp_path):
    """The map is sized from the dirty segments' first batches; a later batch of many small
    records may not fit that estimate, and the pass then maps with the configured size."""
    log = FileLog.open(tmp_path / "p-0", LogConfig(segment_bytes=100_000, retention_ms=-1))
    try:
        log.append(make_batch([(b"big", b"x" * 60_000)], 1_000, False, 0, 0))
        log.append(make_batch([(b"k%d" % i, b"") for i in range(3_000)], 1_000, False, 0, 0))
        log.append(make_batch([(b"active", b"y" * 60_000)], 1_000, False, 0, 0))  # rolls
        flush_file(log)
        settings = CleanerSettings(map_bytes=1 << 20)
        passes = 0
        while clean_now(log, 2_000, settings) is not None:  # the second maps the big batch
            passes += 1
        assert passes == 2 and log.cleaning_status(2_000, settings).first_dirty_offset == 3_001
    finally:
        log.close()


def test_a_map_too_small_for_one_batch_is_an_error_that_names_the_setting(tmp_path):
    log = FileLog.open(tmp_path / "p-0", LogConfig(segment_bytes=1, retention_ms=-1))
    try:
        log.append(make_batch([(b"k%d" % i, b"") for i in range(100)], 1_000, False, 0, 0))
        log.append(make_batch([(b"active", b"")], 1_000, False, 0, 0))
        flush_file(log)
        try:
            clean_now(log, 2_000, CleanerSettings(map_bytes=SLOT_BYTES * 64))
        except LogStorageError as exc:
            assert "log.cleaner.dedupe.buffer.size" in str(exc)
        else:
            raise AssertionError("a pass that cannot map one batch must fail")
        assert not list((tmp_path / "p-0").glob("*.cleaned"))
    finally:
        log.close()
