"""The cleaner against a plain model of what compaction must leave, with a manual clock and an
offset map so small that one cleaning takes several passes.

The model is the list of every record ever appended. After each pass (ending at offset E, the
first offset it left dirty) a full read from the log start must show:
  * only appended records, each at its own offset with its own key, value and timestamp;
  * every record at or after E (nothing there is touched);
  * below E, at most one record per key, and never a record older than its key's newest one;
  * every key's newest record, unless it is a tombstone, which is gone exactly when a pass ran
    at or after its delete horizon: the time of the first pass whose range covered it plus
    delete.retention.ms (KIP-534); a removed tombstone leaves nothing older of its key behind;
  * the batch holding an idempotent producer's last records, still there (empty if need be)
    with its base offset and lastOffsetDelta, as Kafka keeps it for the producer's sequence.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from roster.log.api import LogConfig
from roster.log.batch import iter_batches
from roster.log.compaction import CleanerSettings, clean_now
from roster.log.file import FileLog
from roster.log.memory import MemoryLog
from roster.record_codec import DefaultRecordBatch
from tests.unit.test_log_compaction import flush as flush_file

RETENTION = 1_000                 # delete.retention.ms
TINY_MAP = 24 * 8                 # 8 slots: 7 keys per pass at the 0.9 load factor
PRODUCER = 7


def make_batch(records, timestamp: int, producer: bool, sequence: int, compression: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False,
        producer_id=PRODUCER if producer else -1, producer_epoch=0 if producer else -1,
        base_sequence=sequence if producer else -1, batch_size=1 << 30)
    for i, (key, value) in enumerate(records):
        builder.append(i, timestamp=timestamp, key=key, value=value, headers=[])
    return bytes(builder.build())


def stored(log):
    """(header, records) of every stored batch from the log start, as a consumer reads them."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 20)
        if not chunk:
            break
        for position, header in iter_batches(chunk):
            data = chunk[position:position + header.size]
            out.append((header, [(r.offset, r.key, r.value, r.timestamp)
                                 for r in DefaultRecordBatch(bytes(data))]))
            offset = max(offset, header.next_offset)
    return out


keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h", b"i", b"j", None])
values = st.one_of(st.none(), st.binary(min_size=0, max_size=12))
operations = st.lists(st.one_of(
    st.tuples(st.just("append"), st.lists(st.tuples(keys, values), min_size=1, max_size=4),
              st.booleans(), st.sampled_from([0, 0, 1, 3])),
    st.tuples(st.just("append"), st.lists(st.tuples(keys, values), min_size=1, max_size=4),
              st.booleans(), st.just(0)),
    st.tuples(st.just("tick"), st.sampled_from([1, 400, RETENTION - 1, RETENTION])),
    st.tuples(st.just("clean")),
), min_size=3, max_size=45)


class Model:
    def __init__(self) -> None:
        self.appended: dict[int, tuple] = {}     # offset -> (key, value, timestamp)
        self.horizon: dict[int, int] = {}        # tombstone offset -> its delete horizon
        self.removable: set[int] = set()         # tombstones a pass at/after the horizon saw
        self.producer_last: tuple[int, int] | None = None  # (base offset, last offset)

    def newest(self) -> dict[bytes, int]:
        latest: dict[bytes, int] = {}
        for offset, (key, _, _) in sorted(self.appended.items()):
            if key is not None:
                latest[key] = offset
        return latest

    def passed(self, end: int, now: int) -> None:
        """A pass at `now` left [0, end) clean."""
        for offset, (key, value, _) in self.appended.items():
            if value is None and key is not None and offset < end:
                self.horizon.setdefault(offset, now + RETENTION)
                if now >= self.horizon[offset]:
                    self.removable.add(offset)

    def check(self, log, end: int) -> None:
        batches = stored(log)
        seen = [record for _, records in batches for record in records]
        offsets = [offset for offset, _, _, _ in seen]
        assert offsets == sorted(set(offsets)), "offsets increase without repeats"
        for offset, key, value, timestamp in seen:
            assert self.appended[offset] == (key, value, timestamp), f"offset {offset} changed"
        present = set(offsets)
        assert {o for o in self.appended if o >= end} <= present, "the dirty part is untouched"
        below = [key for offset, key, _, _ in seen if offset < end]
        assert None not in below and len(below) == len(set(below)), "one record per key below E"
        newest = self.newest()
        for offset, key, _, _ in seen:
            assert key is None or offset >= end or newest[key] == offset or \
                any(o >= end and k == key for o, k, _, _ in seen), f"stale {key!r} at {offset}"
        for key, offset in newest.items():
            tombstone = self.appended[offset][1] is None
            if not tombstone:
                assert offset in present, f"the newest value of {key!r} is gone"
            elif offset in self.removable:
                assert offset not in present, f"tombstone {offset} outlived its horizon"
                assert all(k != key for _, k, _, _ in seen), f"{key!r} came back"
            else:
                assert offset in present, f"tombstone {offset} went before its horizon"
        if self.producer_last is not None:
            base, last = self.producer_last
            assert any(h.base_offset == base and h.last_offset == last and
                       h.producer_id == PRODUCER for h, _ in batches), \
                "the producer's last batch keeps its offsets"


def run(log, ops, flush) -> int:
    model, clock, sequence, passes = Model(), 1_000_000, 0, 0
    cleaning = CleanerSettings(delete_retention_ms=RETENTION, map_bytes=TINY_MAP,
                               producer_expiration_ms=10**12)
    end = 0
    for op in ops:
        if op[0] == "append":
            _, records, producer, compression = op
            result = log.append(make_batch(records, clock, producer, sequence, compression))
            for i, (key, value) in enumerate(records):
                model.appended[result.base_offset + i] = (key, value, clock)
            if producer:
                sequence += len(records)
                model.producer_last = (result.base_offset, result.last_offset)
        elif op[0] == "tick":
            clock += op[1]
        else:
            flush(log)
            while (stats := clean_now(log, clock, cleaning)) is not None:
                passes += 1
                end = stats.end_offset
                model.passed(end, clock)
                model.check(log, end)
    model.check(log, end)
    return passes


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segment_bytes=st.sampled_from([1, 150, 400]), ops=operations)
def test_the_file_log_cleaner_keeps_what_the_model_says(segment_bytes, ops):
    config = LogConfig(segment_bytes=segment_bytes, retention_ms=-1, index_interval_bytes=64)
    with tempfile.TemporaryDirectory() as tmp:
        log = FileLog.open(Path(tmp) / "p-0", config)
        try:
            run(log, ops, flush_file)
        finally:
            log.close()


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segment_bytes=st.sampled_from([1, 150, 400]), ops=operations)
def test_the_memory_model_cleaner_keeps_what_the_model_says(segment_bytes, ops):
    run(MemoryLog(LogConfig(segment_bytes=segment_bytes, retention_ms=-1)), ops, lambda log: None)


def test_a_tiny_offset_map_cleans_in_several_passes_that_each_resume_where_the_last_stopped():
    with tempfile.TemporaryDirectory() as tmp:
        log = FileLog.open(Path(tmp) / "p-0", LogConfig(segment_bytes=200, retention_ms=-1))
        ops = [("append", [(b"k%d" % (i % 30), b"v%d" % i)], False, 0) for i in range(120)]
        ops += [("append", [(b"active", b"1")], False, 0), ("clean",)]
        try:
            passes = run(log, ops, flush_file)
        finally:
            log.close()
    assert passes >= 4, "30 keys through a 7-key map take several passes"
