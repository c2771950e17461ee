"""Compaction of compacted logs: what survives, offsets, reads in gaps, restarts, crashes at every
step of the swap, and the background cleaner's scheduling."""
from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from roster.log.api import LogConfig
from roster.log.batch import iter_batches, parse_header
from roster.log.cleaning import CLEANER_CHECKPOINT
from roster.log.compaction import CleanerSettings, clean_now
from roster.log.file import CLEAN_SHUTDOWN, RECOVERY_POINT, FileLog
from roster.log.files import read_offset_file, write_offset_file
from roster.log.memory import MemoryLog
from tests.unit.batches import with_field

DAY_MS = 86_400_000
NOW = 10 * DAY_MS        # "now" for cleaning passes; records are stamped around it
RETENTION = DAY_MS       # delete retention of tombstones
FAR_FUTURE = NOW + 100 * DAY_MS


def batch(records, timestamp: int = NOW, compression: int = 0) -> bytes:
    """A batch of (key, value) records (value None = tombstone), base offset 0."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression,
                                        is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i, (key, value) in enumerate(records):
        builder.append(i, timestamp=timestamp, key=key, value=value, headers=[])
    return bytes(builder.build())


def records(log) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record a reader gets from the log start to the end."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 20)
        if not chunk:
            break
        batches = MemoryRecords(chunk)
        while (b := batches.next_batch()) is not None:
            for record in b:
                assert record.offset >= offset or not out or record.offset > out[-1][0]
                out.append((record.offset, record.key, record.value))
            offset = max(offset, b.base_offset + b.last_offset_delta + 1)
    offsets = [o for o, _, _ in out]
    assert offsets == sorted(set(offsets)), "offsets must increase without repeats"
    return out


def newest(recs) -> dict[bytes, bytes]:
    """key -> newest value, as a replay sees it (a tombstone deletes the key)."""
    state: dict[bytes, bytes] = {}
    for _, key, value in recs:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    return state


def flush(log) -> None:
    job = log.prepare_flush()
    if job is not None:
        job.run()
        log.flushed(job)


def crash(log) -> None:
    """Drop the log as kill -9 would: files released, no clean-shutdown marker, nothing flushed."""
    log._release()


def fill(log, rounds: int, keys: int = 5, value_size: int = 30, start: int = 0) -> None:
    for i in range(start, start + rounds):
        log.append(batch([(b"k%d" % (i % keys), b"%d" % i + b"v" * value_size),
                          (b"other%d" % (i % 3), b"o%d" % i)]))


@pytest.fixture
def partition(tmp_path):
    return tmp_path / "__consumer_offsets-0"


@pytest.fixture
def open_log(partition):
    opened = []

    def open_log(**settings):
        settings.setdefault("retention_ms", -1)
        log = FileLog.open(partition, LogConfig(**settings))
        opened.append(log)
        return log

    yield open_log
    for log in opened:
        if not log._closed:
            log.close()


@pytest.fixture(params=["file", "memory"])
def any_log(request, tmp_path):
    def make(**settings):
        settings.setdefault("retention_ms", -1)
        config = LogConfig(**settings)
        if request.param == "memory":
            return MemoryLog(config)
        return FileLog.open(tmp_path / "p-0", config)
    return make


CLEANING = CleanerSettings(delete_retention_ms=RETENTION, map_bytes=1 << 20)


def clean(log, now=NOW):
    flush(log)
    return clean_now(log, now, CLEANING)


# -- what survives -------------------------------------------------------------------------------

def test_only_the_newest_value_of_each_key_survives_in_closed_segments(any_log):
    log = any_log(segment_bytes=400)
    fill(log, 60)
    before = records(log)
    stats = clean(log)
    after = records(log)
    assert newest(after) == newest(before)
    assert stats.records_before == stats.end_offset > stats.records_after  # dense before
    assert stats.bytes_after < stats.bytes_before
    closed_end = stats.end_offset
    closed_keys = [key for offset, key, _ in after if offset < closed_end]
    assert len(closed_keys) == len(set(closed_keys)), "one record per key below the active segment"
    assert set(after) <= set(before), "survivors keep their offsets, keys and values"
    assert log.log_end_offset == before[-1][0] + 1


def test_records_in_the_active_segment_are_never_touched(open_log, partition):
    log = open_log(segment_bytes=400)
    fill(log, 60)
    active = max(partition.glob("*.log"))
    data = active.read_bytes()
    clean(log)
    assert max(partition.glob("*.log")) == active and active.read_bytes() == data


def test_a_tombstone_stays_for_delete_retention_after_the_pass_that_first_cleaned_it(any_log):
    """KIP-534: the first pass that keeps a tombstone stamps its batch with a delete horizon
    (that pass's time + delete.retention.ms); passes before the horizon keep it, later ones drop
    it. The tombstone's own timestamp does not matter."""
    log = any_log(segment_bytes=300)
    log.append(batch([(b"gone", b"1")]))
    log.append(batch([(b"kept", b"1")]))
    log.append(batch([(b"gone", None)], timestamp=NOW - 5 * DAY_MS))  # an old timestamp
    fill(log, 20, keys=2)
    first_pass = NOW
    clean(log, now=first_pass)
    tomb = [(o, k, v) for o, k, v in records(log) if k == b"gone"]
    assert len(tomb) == 1 and tomb[0][2] is None, "the tombstone alone stands for the key"
    stamped = [parse_header(b) for _, b in _stored_batches(log)
               if parse_header(b).attributes & 0x40]
    assert [h.base_timestamp for h in stamped] == [first_pass + RETENTION]
    fill(log, 20, keys=2, start=20)  # new dirty segments, so there is another pass
    clean(log, now=first_pass + RETENTION - 1)
    assert [(k, v) for _, k, v in records(log) if k == b"gone"] == [(b"gone", None)]
    fill(log, 20, keys=2, start=40)
    clean(log, now=first_pass + RETENTION)
    assert all(k != b"gone" for _, k, _ in records(log))
    assert newest(records(log))[b"kept"] == b"1"


def _stored_batches(log):
    offset, out = log.log_start_offset, []
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 20)
        for position, header in iter_batches(chunk):
            out.append((header.base_offset, chunk[position:position + header.size]))
            offset = max(offset, header.next_offset)
    return out


def test_a_rebuilt_batch_keeps_its_base_offset_and_offset_deltas(any_log):
    log = any_log(segment_bytes=1)  # one batch per segment
    log.append(batch([(b"a", b"1"), (b"b", b"1"), (b"c", b"1"), (b"a", b"2")]))
    log.append(batch([(b"c", b"2")]))
    log.append(batch([(b"z", b"active")]))
    clean(log)
    first = log.read(0, 1 << 20)
    header = parse_header(first)
    assert header.base_offset == 0 and header.last_offset_delta == 3 and header.records_count == 2
    assert records(log) == [(1, b"b", b"1"), (3, b"a", b"2"), (4, b"c", b"2"), (5, b"z", b"active")]


def test_a_compressed_batch_is_rebuilt_with_its_codec(any_log):
    log = any_log(segment_bytes=1)
    log.append(batch([(b"a", b"x" * 200), (b"b", b"y" * 200)], compression=1))
    log.append(batch([(b"a", b"new")]))
    log.append(batch([(b"z", b"active")]))
    clean(log)
    assert parse_header(log.read(0, 1 << 20)).compression == 1
    assert records(log) == [(1, b"b", b"y" * 200), (2, b"a", b"new"), (3, b"z", b"active")]


def test_records_without_a_key_are_dropped_as_kafkas_cleaner_drops_them(any_log):
    log = any_log(segment_bytes=1)
    log.append(batch([(None, b"anonymous"), (b"a", b"1")]))
    log.append(batch([(b"a", b"2")]))
    log.append(batch([(b"z", b"active")]))
    clean(log)
    assert records(log) == [(2, b"a", b"2"), (3, b"z", b"active")]


# -- offsets and reads ------------------------------------------------------------------------

def test_a_read_at_an_offset_in_a_gap_returns_the_next_batch(any_log):
    log = any_log(segment_bytes=400)
    fill(log, 60)
    end_before = log.log_end_offset
    clean(log)
    assert log.log_end_offset == end_before and log.log_start_offset == 0
    survivors = [offset for offset, _, _ in records(log)]
    for offset in range(0, end_before):
        data = log.read(offset, 1)
        first = parse_header(data)
        expected = next(o for o in survivors if o >= offset)
        # A rewritten batch keeps its lastOffsetDelta, so it may span the offset with no record
        # at or after it; the consumer then reads on. Either way nothing lies before expected.
        assert first.base_offset <= max(offset, first.base_offset) <= first.last_offset
        found = [r.offset for r in MemoryRecords(log.read(offset, 1 << 20)).next_batch()]
        assert [o for o in found if o >= offset][:1] in ([expected], []), offset
    assert log.read(end_before, 100) == b""
    assert log.append(batch([(b"n", b"1")])).base_offset == end_before


def test_the_first_segment_stays_so_the_log_start_does_not_move(open_log, partition):
    log = open_log(segment_bytes=1)
    log.append(batch([(b"a", b"1")]))
    log.append(batch([(b"a", b"2")]))
    log.append(batch([(b"a", b"3")]))
    log.append(batch([(b"z", b"active")]))
    clean(log)
    assert log.log_start_offset == 0
    assert (partition / f"{0:020d}.log").stat().st_size == 0
    assert not (partition / f"{1:020d}.log").exists(), "a segment with no survivor is removed"
    expected = [(2, b"a", b"3"), (3, b"z", b"active")]
    assert records(log) == expected
    log.close()
    log = open_log(segment_bytes=1)
    assert log.log_start_offset == 0 and records(log) == expected


# -- restarts ----------------------------------------------------------------------------------

def everything(log):
    """All a client can observe, read at every offset."""
    return (log.log_start_offset, log.log_end_offset,
            [log.read(o, 1 << 20) for o in range(log.log_start_offset, log.log_end_offset + 1)],
            [log.read(o, 1) for o in range(log.log_start_offset, log.log_end_offset + 1)],
            log.max_timestamp())


@pytest.mark.parametrize("how", ["clean", "kill", "kill-without-recovery-point"])
def test_a_reopened_compacted_log_reads_exactly_as_before(open_log, partition, how):
    settings = {"segment_bytes": 500, "index_interval_bytes": 100}
    log = open_log(**settings)
    fill(log, 80)
    clean(log)
    fill(log, 40, start=80)
    clean(log)  # a second pass merges the shrunken segments
    seen = everything(log)
    if how == "clean":
        log.close()
    else:
        crash(log)
        if how == "kill-without-recovery-point":
            (partition / RECOVERY_POINT).unlink(missing_ok=True)
    log = open_log(**settings)
    assert everything(log) == seen


def test_a_restart_does_not_clean_again(open_log, partition):
    log = open_log(segment_bytes=500)
    fill(log, 80)
    stats = clean(log)
    log.close()
    assert read_offset_file(partition / CLEANER_CHECKPOINT) == stats.end_offset
    log = open_log(segment_bytes=500)
    status = log.cleaning_status(NOW, CLEANING)
    assert status.dirty_bytes == 0 and status.first_dirty_offset == stats.end_offset
    assert log.prepare_cleaning(NOW, CLEANING) is None


def test_dirty_ratio_counts_bytes_written_since_the_last_cleaning(any_log):
    log = any_log(segment_bytes=500)
    flush(log)
    assert log.cleaning_status(NOW, CLEANING).dirty_ratio == 0
    fill(log, 40)
    flush(log)
    assert log.cleaning_status(NOW, CLEANING).dirty_ratio == 1
    clean(log)
    assert log.cleaning_status(NOW, CLEANING).dirty_ratio == 0
    fill(log, 40, start=40)
    flush(log)
    status = log.cleaning_status(NOW, CLEANING)
    assert 0 < status.clean_bytes < status.dirty_bytes and status.dirty_ratio > 0.5


def test_unflushed_segments_are_not_cleaned(open_log):
    log = open_log(segment_bytes=400)
    fill(log, 30)
    assert log.prepare_cleaning(NOW, CLEANING) is None, "nothing closed is on disk yet"
    assert log.cleaning_status(NOW, CLEANING).dirty_bytes == 0


# -- recovery rules ------------------------------------------------------------------------------

def test_gaps_outside_the_compacted_region_are_still_damage(open_log, partition, caplog):
    """A closed segment past the checkpoint, and the active segment, stay dense: a batch whose
    base offset jumps ahead there is cut off as before."""
    log = open_log(segment_bytes=400)
    fill(log, 40)
    clean(log)
    checkpoint = read_offset_file(partition / CLEANER_CHECKPOINT)
    fill(log, 40, start=40)
    crash(log)
    (partition / RECOVERY_POINT).unlink()
    later = sorted(partition.glob("*.log"))
    victim = next(p for p in later if int(p.name[:20]) >= checkpoint)
    data = victim.read_bytes()
    positions = [position for position, _ in iter_batches(data)]
    second = positions[1]
    jumped = with_field(data[second:], "q", 0, parse_header(data, second).base_offset + 5,
                        fix_crc=False)
    victim.write_bytes(data[:second] + jumped)
    with caplog.at_level(logging.WARNING, logger="roster.log"):
        log = open_log(segment_bytes=400)
    assert "was expected" in caplog.text
    assert log.log_end_offset == parse_header(data, second).base_offset


def test_recovery_below_the_checkpoint_lowers_it(open_log, partition):
    log = open_log(segment_bytes=400)
    fill(log, 40)
    clean(log)
    log.close()
    write_offset_file(partition / CLEANER_CHECKPOINT, 10_000)
    log = open_log(segment_bytes=400)
    assert read_offset_file(partition / CLEANER_CHECKPOINT) == log.log_end_offset


def test_leftovers_of_an_interrupted_compaction_are_removed_on_open(open_log, partition):
    log = open_log(segment_bytes=400)
    fill(log, 40)
    flush(log)
    seen = everything(log)
    crash(log)
    (partition / f"{0:020d}.log.cleaned").write_bytes(b"half a segment")
    (partition / f"{0:020d}.index.cleaned").write_bytes(b"x" * 8)
    log = open_log(segment_bytes=400)
    assert not list(partition.glob("*.cleaned"))
    assert everything(log) == seen


# -- crash at every step of the swap ------------------------------------------------------------

MERGING = LogConfig(segment_bytes=700, retention_ms=-1)
LATER = NOW + RETENTION   # the horizon the first pass stamped on the "dead" tombstone


def build_for_merge(partition) -> tuple[dict, list]:
    """A log whose next pass rewrites several groups, one of them merging several segments and
    one removing segments (every record superseded), and drops an expired tombstone."""
    log = FileLog.open(partition, LogConfig(segment_bytes=300, retention_ms=-1))
    log.append(batch([(b"dead", b"old")], timestamp=0))
    log.append(batch([(b"dead", None)], timestamp=0))   # its horizon: NOW + RETENTION
    fill(log, 30, keys=7)
    clean(log)                 # a first pass shrinks the segments and stamps the horizon
    for i in range(8):         # segments whose every record a later one supersedes
        log.append(batch([(b"dup", b"%d" % i + b"d" * 40)]))
    log.append(batch([(b"fresh", None)], timestamp=NOW))  # first cleaned at LATER: kept
    fill(log, 10, keys=7, start=30)
    log.append(batch([(b"dup", b"last")]))
    flush(log)
    log.close()
    log = FileLog.open(partition, MERGING)  # larger segments from now on: groups merge
    expected = newest(records(log))
    before = records(log)
    log.close()
    return expected, before


def test_a_crash_at_any_step_of_the_swap_reopens_to_every_newest_value(tmp_path):
    pristine = tmp_path / "pristine"
    expected, before = build_for_merge(pristine)
    reference = tmp_path / "reference"
    shutil.copytree(pristine, reference)
    log = FileLog.open(reference, MERGING)
    job = log.prepare_cleaning(LATER, CLEANING)
    job.run()
    steps = list(log.swap_cleaned(job))
    actions = {group.action for group in job.groups}
    assert {"replace", "remove"} <= actions and any(g.stop - g.first > 2 for g in job.groups)
    final = records(log)
    log.close()
    assert newest(final) == expected and b"dead" not in {k for _, k, _ in final}
    assert len(steps) > 10

    for crash_after in range(len(steps) + 1):
        for lose_recovery_point in (False, True):
            directory = tmp_path / f"crash-{crash_after}-{lose_recovery_point}"
            shutil.copytree(pristine, directory)
            log = FileLog.open(directory, MERGING)
            job = log.prepare_cleaning(LATER, CLEANING)
            job.run()
            swap = log.swap_cleaned(job)
            for _ in range(crash_after):
                step = next(swap)
                if step is not None:
                    step()
            crash(log)
            if lose_recovery_point:
                (directory / RECOVERY_POINT).unlink(missing_ok=True)
            log = FileLog.open(directory, MERGING)
            swap.close()
            recovered = records(log)
            where = f"crash after step {crash_after}, recovery point lost: {lose_recovery_point}"
            assert newest(recovered) == expected, where
            assert set(recovered) <= set(before), where
            assert log.log_end_offset == before[-1][0] + 1, where
            assert not list(directory.glob("*.cleaned")), where
            # and the next pass finishes the job
            stats = clean(log, now=LATER)
            assert stats is None or newest(records(log)) == expected, where
            log.close()


# -- the model and the file log agree --------------------------------------------------------------

keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f"])
record_ops = st.tuples(keys, st.one_of(st.none(), st.binary(min_size=0, max_size=40)),
                       st.sampled_from([0, NOW - RETENTION + 1, NOW]))
operations = st.lists(st.one_of(
    st.tuples(st.just("append"), st.lists(record_ops, min_size=1, max_size=4)),
    st.tuples(st.just("append"), st.lists(record_ops, min_size=1, max_size=4)),
    st.tuples(st.just("append"), st.lists(record_ops, min_size=1, max_size=4)),
    st.tuples(st.just("clean"), st.sampled_from([NOW, FAR_FUTURE])),
    st.tuples(st.just("restart"), st.sampled_from(["clean", "kill", "kill-lose-recovery-point"])),
), min_size=5, max_size=40)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segment_bytes=st.sampled_from([1, 200, 600, 5_000]), ops=operations)
def test_after_any_appends_compactions_and_restarts_a_full_read_gives_every_newest_value(
        segment_bytes, ops):
    config = LogConfig(segment_bytes=segment_bytes, retention_ms=-1, index_interval_bytes=100)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "p-0"
        file_log = FileLog.open(directory, config)
        model = MemoryLog(config)
        state: dict[bytes, bytes] = {}   # what a replay of everything ever appended gives
        try:
            for op in ops:
                if op[0] == "append":
                    data = batch([(k, v) for k, v, _ in op[1]], timestamp=op[1][0][2])
                    assert file_log.append(data) == model.append(data)
                    for key, value, _ in op[1]:
                        if value is None:
                            state.pop(key, None)
                        else:
                            state[key] = value
                elif op[0] == "clean":
                    flush(file_log)
                    assert clean_now(file_log, op[1], CLEANING) == \
                        clean_now(model, op[1], CLEANING)
                else:
                    flush(file_log)
                    if op[1] == "clean":
                        file_log.close()
                    else:
                        crash(file_log)
                        if op[1] == "kill-lose-recovery-point":
                            (directory / RECOVERY_POINT).unlink(missing_ok=True)
                    file_log = FileLog.open(directory, config)
                got = records(file_log)
                assert newest(got) == state
                assert got == records(model)
                for offset in range(0, file_log.log_end_offset + 1, 3):
                    assert file_log.read(offset, 150) == model.read(offset, 150), offset
        finally:
            if not file_log._closed:
                file_log.close()


# -- the background cleaner -----------------------------------------------------------------------

def test_the_cleaner_compacts_only_compacted_topics_once_they_are_dirty_enough(tmp_path, caplog):
    from roster.broker.partitions.cleaner import LogCleaner
    from roster.broker.partitions.topics import TopicManager
    from roster.config import BrokerConfig

    config = BrokerConfig.from_overrides({"log.cleaner.min.cleanable.ratio": "0.5"})
    topics = TopicManager(tmp_path, config, FileLog.open)
    compacted = topics.create("__consumer_offsets", 1,
                              {"cleanup.policy": "compact", "segment.bytes": "400"}, internal=True)
    plain = topics.create("plain", 1, {})
    plain.partitions[0].reconfigure(LogConfig(segment_bytes=400, retention_ms=-1))
    for log in (compacted.partitions[0], plain.partitions[0]):
        fill(log, 40)
        flush(log)
    cleaner = LogCleaner(topics, config, lambda: NOW)

    async def once():
        try:
            return await cleaner.clean_once()
        finally:
            await cleaner.stop()

    with caplog.at_level(logging.INFO, logger="roster.cleaner"):
        assert asyncio.run(once()) == 1
    assert "compacting __consumer_offsets-0" in caplog.text
    assert "compacted __consumer_offsets-0 offsets 0.." in caplog.text
    assert re.search(r"offsets 0\.\.\d+: \d+ -> \d+ records, \d+ -> \d+ bytes, "
                     r"\d+ -> \d+ segments in \d+ ms", caplog.text)
    assert len(records(plain.partitions[0])) == 80, "a delete-policy topic is not compacted"
    # a little new dirt is not enough to clean again
    fill(compacted.partitions[0], 3, start=40)
    flush(compacted.partitions[0])
    assert compacted.partitions[0].cleaning_status(NOW, CLEANING).dirty_ratio < 0.5
    assert asyncio.run(once()) == 0
    topics.close()


def test_cancelling_the_cleaner_mid_pass_leaves_nothing_behind(tmp_path):
    from roster.broker.partitions.cleaner import LogCleaner
    from roster.broker.partitions.topics import TopicManager
    from roster.config import BrokerConfig

    config = BrokerConfig.from_overrides({})
    topics = TopicManager(tmp_path, config, FileLog.open)
    topic = topics.create("__consumer_offsets", 1,
                          {"cleanup.policy": "compact", "segment.bytes": "400"}, internal=True)
    log = topic.partitions[0]
    fill(log, 200)
    flush(log)
    seen = records(log)
    cleaner = LogCleaner(topics, config, lambda: NOW)

    async def cancel_soon():
        task = asyncio.ensure_future(cleaner.clean_once())
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await cleaner.stop()

    asyncio.run(cancel_soon())
    assert not list((tmp_path / "__consumer_offsets-0").glob("*.cleaned"))
    assert newest(records(log)) == newest(seen)
    topics.close()
    assert os.path.exists(tmp_path / "__consumer_offsets-0" / CLEAN_SHUTDOWN)


def test_cleaner_settings_have_kafkas_names_and_defaults():
    from roster.config import BrokerConfig, ConfigError
    config = BrokerConfig.from_overrides({})
    assert config["log.cleaner.enable"] is True
    assert config["log.cleaner.backoff.ms"] == 15_000
    assert config["log.cleaner.min.cleanable.ratio"] == 0.5
    assert config["log.cleaner.delete.retention.ms"] == 86_400_000
    assert config["log.cleaner.min.compaction.lag.ms"] == 0
    assert config["log.cleaner.max.compaction.lag.ms"] == 2**63 - 1
    assert config["log.cleaner.dedupe.buffer.size"] == 134_217_728
    assert config["log.cleaner.io.buffer.load.factor"] == 0.9
    assert config["offsets.topic.segment.bytes"] == 104_857_600
    assert BrokerConfig.from_overrides(
        {"log.cleaner.min.cleanable.ratio": "0.25"})["log.cleaner.min.cleanable.ratio"] == 0.25
    with pytest.raises(ConfigError, match="at most 1"):
        BrokerConfig.from_overrides({"log.cleaner.min.cleanable.ratio": "1.5"})


def test_the_cleaner_drives_the_memory_model_too():
    from roster.broker.partitions.cleaner import LogCleaner
    from roster.config import BrokerConfig
    from roster.log.memory import MemoryLog

    log = MemoryLog(LogConfig(segment_bytes=400, retention_ms=-1))
    fill(log, 40)
    before = records(log)
    stats = asyncio.run(LogCleaner([], BrokerConfig.from_overrides({}), lambda: NOW)
                        .clean("model-0", log, CLEANING, 1.0))
    assert stats.records_after < stats.records_before
    assert newest(records(log)) == newest(before)
