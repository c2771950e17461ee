"""The read side of transactions in the log: producer state, the last stable offset, the
aborted-transaction index and read_committed reads, checked against a plain model on both log
kinds, and across clean restarts and crashes of a FileLog."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roster.log.api import CorruptBatch, LogConfig
from roster.log.file import CLEAN_SHUTDOWN, FileLog
from roster.log.memory import MemoryLog
from roster.log.producer_state import AbortedTxn
from roster.log.txn_files import read_txn_index, txn_index_bases, txn_index_path
from tests.unit.batches import make_batch
from tests.unit.txn_batches import committed_offsets, marker, txn_batch

PRODUCERS = (7, 8, 9)


class Model:
    """Offsets as a reader sees them, computed the plain way."""

    def __init__(self) -> None:
        self.end = 0
        self.open: dict[int, list[int]] = {}   # producer -> offsets of its open transaction
        self.first: dict[int, int] = {}
        self.aborted: set[int] = set()
        self.data: list[int] = []              # offsets of data records
        self.aborts: list[AbortedTxn] = []

    def append(self, op) -> bytes:
        kind, pid, arg = op
        if kind == "data":
            batch = txn_batch(pid, arg)
            offsets = list(range(self.end, self.end + arg))
            self.data += offsets
            self.first.setdefault(pid, self.end)
            self.open.setdefault(pid, []).extend(offsets)
            self.end += arg
            return batch
        if kind == "plain":
            self.data += list(range(self.end, self.end + arg))
            self.end += arg
            return make_batch(arg)
        commit = arg
        offsets = self.open.pop(pid, [])
        first = self.first.pop(pid, self.end)
        if not commit:
            self.aborted.update(offsets)
            stable = min(self.first.values(), default=self.end + 1)
            self.aborts.append(AbortedTxn(pid, first, self.end, stable))
        self.end += 1
        return marker(pid, commit)

    @property
    def lso(self) -> int:
        return min(self.first.values(), default=self.end)

    def committed_from(self, offset: int) -> list[int]:
        return [o for o in self.data if offset <= o < self.lso and o not in self.aborted]


OPS = st.lists(st.one_of(
    st.tuples(st.just("data"), st.sampled_from(PRODUCERS), st.integers(1, 3)),
    st.tuples(st.just("plain"), st.just(-1), st.integers(1, 2)),
    st.tuples(st.just("end"), st.sampled_from(PRODUCERS), st.booleans()),
), max_size=30)


def check(log, model: Model) -> None:
    assert log.log_end_offset == model.end
    assert log.last_stable_offset == model.lso
    for offset in range(0, model.end + 1):
        data, aborted = log.read_committed(offset, 1 << 20)
        pairs = [(t.producer_id, t.first_offset) for t in aborted]
        assert committed_offsets(data, pairs, offset) == model.committed_from(offset), offset
    assert log.aborted_between(0, model.end) == model.aborts


def fill(log, ops) -> Model:
    model = Model()
    for op in ops:
        log.append(model.append(op))
    return model


@settings(max_examples=150, deadline=None)
@given(ops=OPS)
def test_memory_log_reads_committed_as_the_model(ops):
    log = MemoryLog(LogConfig(segment_bytes=300))
    check(log, fill(log, ops))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, segment_bytes=st.sampled_from([200, 500, 1 << 20]), forget=st.booleans())
def test_file_log_rebuilds_the_same_state_after_a_restart_or_crash(tmp_path_factory, ops,
                                                                   segment_bytes, forget):
    directory = tmp_path_factory.mktemp("p")
    config = LogConfig(segment_bytes=segment_bytes)
    log = FileLog.open(directory, config)
    model = fill(log, ops)
    check(log, model)
    log.close()
    log = FileLog.open(directory, config)  # clean: from the snapshot at the log end
    check(log, model)
    log.close()
    (directory / CLEAN_SHUTDOWN).unlink()  # a crash: the active segment is replayed
    if forget:  # and whatever was not fsynced is gone: snapshots, the active .txnindex
        for path in directory.glob("*.snapshot"):
            path.unlink()
        bases = sorted(int(p.name[:20]) for p in directory.glob("*.log"))
        txn_index_path(directory, bases[-1]).unlink(missing_ok=True)
    log = FileLog.open(directory, config)
    try:
        check(log, model)
    finally:
        log.close()


def test_an_open_transaction_holds_the_lso_and_read_committed_stops_there():
    log = MemoryLog(LogConfig())
    log.append(make_batch(2))                 # 0-1
    log.append(txn_batch(7, 2))               # 2-3 open
    log.append(make_batch(1))                 # 4
    assert log.last_stable_offset == 2
    data, aborted = log.read_committed(0, 1 << 20)
    assert committed_offsets(data, []) == [0, 1] and aborted == []
    assert log.read_committed(3, 1 << 20) == (b"", [])  # between the LSO and the end: empty
    assert log.read(0, 1 << 20).count(b"p7-") == 2       # read_uncommitted sees it all
    log.append(marker(7, commit=False))       # 5
    assert log.last_stable_offset == 6
    data, aborted = log.read_committed(0, 1 << 20)
    assert aborted == [AbortedTxn(7, 2, 5, 6)]
    assert committed_offsets(data, [(7, 2)]) == [0, 1, 4]


def test_a_control_batch_without_a_marker_is_refused():
    log = MemoryLog(LogConfig())
    from tests.unit.batches import with_field
    with pytest.raises(CorruptBatch):
        log.append(with_field(marker(7, True), "h", 61 + 7, 9))  # the key type 9: no marker
    assert log.log_end_offset == 0


def test_producers_are_described_with_their_open_transaction():
    log = MemoryLog(LogConfig())
    log.append(txn_batch(7, 3, epoch=2, sequence=10, timestamp=5_000))
    log.append(txn_batch(8, 1, transactional=False, sequence=0))
    log.append(marker(8, commit=True, coordinator_epoch=4))
    entries = {e.producer_id: e for e in log.producer_entries()}
    assert (entries[7].epoch, entries[7].last_sequence, entries[7].last_timestamp,
            entries[7].txn_first_offset) == (2, 12, 5_002, 0)
    assert (entries[8].coordinator_epoch, entries[8].txn_first_offset) == (4, -1)


def test_retention_deletes_the_txnindex_with_its_segment(tmp_path):
    log = FileLog.open(tmp_path, LogConfig(segment_bytes=1))  # one batch per segment
    try:
        log.append(txn_batch(7, 1))
        log.append(marker(7, commit=False))   # segment 1 holds the abort
        log.append(make_batch(1))
        log.append(make_batch(1))
        assert txn_index_bases(tmp_path) == [1]
        assert read_txn_index(txn_index_path(tmp_path, 1)) == [AbortedTxn(7, 0, 1, 2)]
        log.advance_log_start(3)
        assert txn_index_bases(tmp_path) == []
        assert log.aborted_between(0, 10) == []
    finally:
        log.close()


def _contents(log) -> list[tuple]:
    """(offset, key) of every data record and ("abort"/"commit", offset) of every marker."""
    from roster.log.batch import iter_batches
    from roster.log.producer_state import read_marker
    from roster.record_codec import DefaultRecordBatch

    data, found = log.read(log.log_start_offset, 1 << 30), []
    for position, header in iter_batches(data):
        if header.is_control:
            found.append((("commit" if read_marker(data, position).type else "abort"),
                          header.base_offset))
        else:
            found += [(r.offset, r.key) for r in
                      DefaultRecordBatch(data[position:position + header.size])]
    return found


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_compaction_removes_aborted_data_then_its_marker_after_the_horizon(kind, tmp_path):
    from roster.log.compaction import CleanerSettings, clean_now

    config = LogConfig(segment_bytes=1)  # a batch per segment: every batch but the last is closed
    log = MemoryLog(config) if kind == "memory" else FileLog.open(tmp_path, config)
    settings = CleanerSettings(delete_retention_ms=1_000)
    now = 10**12
    filler = iter(range(100))

    def fill_and_flush():  # new dirty data, and (FileLog) everything on disk
        log.append(txn_batch(-1, 1, transactional=False, keys=[b"f%d" % next(filler)]))
        job = log.prepare_flush()
        if job is not None:
            job.run()
            log.flushed(job)

    try:
        log.append(txn_batch(-1, 2, transactional=False, sequence=-1))  # 0-1: k0, k1
        log.append(txn_batch(7, 2))                 # 2-3: k0, k1, aborted
        log.append(marker(7, commit=False))          # 4
        log.append(txn_batch(8, 1))                  # 5: k0, committed
        log.append(marker(8, commit=True))           # 6
        fill_and_flush()                             # 7
        fill_and_flush()                             # 8
        clean_now(log, now, settings)
        # aborted data gone and never shadowing k1's committed value; k0's older value
        # superseded by the committed one; both markers kept (their transactions had data)
        assert _contents(log)[:5] == [(1, b"k1"), ("abort", 4), (5, b"k0"), ("commit", 6),
                                      (7, b"f0")]
        assert log.read_committed(0, 1 << 20)[1] == [AbortedTxn(7, 2, 4, 5)]
        fill_and_flush()
        clean_now(log, now, settings)               # no data left: the abort marker is stamped
        assert ("abort", 4) in _contents(log)
        fill_and_flush()
        clean_now(log, now + 1_001, settings)       # past its delete horizon: gone
        assert [e for e in _contents(log) if e[0] == "abort"] == []
        assert (5, b"k0") in _contents(log) and ("commit", 6) in _contents(log)
        # its index entry went first: a reader would otherwise skip producer 7 for good
        assert log.aborted_between(0, 100) == []
        if kind == "file":
            log.close()
            log = FileLog.open(tmp_path, config)
            assert log.aborted_between(0, 100) == []
    finally:
        log.close()


def test_compaction_stops_at_the_first_open_transaction():
    from roster.log.compaction import CleanerSettings

    log = MemoryLog(LogConfig(segment_bytes=1))
    log.append(make_batch(1))                      # 0
    log.append(make_batch(1))                      # 1: supersedes 0
    log.append(txn_batch(7, 1))                    # 2: open
    log.append(make_batch(1))                      # 3
    log.append(make_batch(1))                      # 4 (active)
    status = log.cleaning_status(10**12, CleanerSettings())
    assert status.first_uncleanable_offset == 2


def test_idle_producers_are_forgotten_at_a_roll_but_not_an_open_transaction():
    log = MemoryLog(LogConfig(segment_bytes=1))
    log.append(txn_batch(7, 1, transactional=False, timestamp=1_000))   # idle since 1970
    log.append(txn_batch(8, 1, timestamp=1_000))                        # open, as old
    log.append(make_batch(1))                                           # rolls
    assert sorted(e.producer_id for e in log.producer_entries()) == [8]
    assert log.last_stable_offset == 1


KEYS = [b"a", b"b", b"c"]
COMPACT_OPS = st.lists(st.one_of(
    st.tuples(st.just("data"), st.sampled_from(PRODUCERS), st.lists(st.sampled_from(KEYS),
                                                                     min_size=1, max_size=2)),
    st.tuples(st.just("plain"), st.just(-1), st.lists(st.sampled_from(KEYS), min_size=1,
                                                      max_size=2)),
    st.tuples(st.just("end"), st.sampled_from(PRODUCERS), st.booleans()),
), max_size=25)


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=COMPACT_OPS, on_file=st.booleans())
def test_compaction_keeps_what_read_committed_readers_see_of_each_key(tmp_path_factory, ops,
                                                                      on_file):
    """Whatever transactions did, after any number of passes (and a restart, for a FileLog) a
    read_committed reader from the start sees, for every key, the newest committed value, and
    never an aborted one."""
    from roster.log.compaction import CleanerSettings, clean_now
    from tests.unit.txn_batches import committed_records

    config = LogConfig(segment_bytes=1)              # every batch but the last is closed
    directory = tmp_path_factory.mktemp("c") if on_file else None
    log = FileLog.open(directory, config) if on_file else MemoryLog(config)
    counter = iter(range(10**6))
    aborted_values: set[bytes] = set()
    open_values: dict[int, list[tuple[bytes, bytes]]] = {}
    # the model: key -> (its position in the log, newest committed value); values are numbered
    # in the order they are appended, so by offset
    newest: dict[bytes, tuple[int, bytes]] = {}

    def values_for(keys):
        return [b"v%d" % next(counter) for _ in keys]

    def committed(key, value):
        if newest.get(key, (-1,))[0] < int(value[1:]):
            newest[key] = (int(value[1:]), value)

    def end(pid, commit):
        log.append(marker(pid, commit))
        for key, value in open_values.pop(pid, []):
            if commit:
                committed(key, value)
            else:
                aborted_values.add(value)

    for kind, pid, arg in ops:
        if kind == "data":
            values = values_for(arg)
            log.append(txn_batch(pid, len(arg), keys=arg, values=values))
            open_values.setdefault(pid, []).extend(zip(arg, values))
        elif kind == "plain":
            values = values_for(arg)
            log.append(txn_batch(-1, len(arg), transactional=False, sequence=-1, keys=arg,
                                 values=values))
            for key, value in zip(arg, values):
                committed(key, value)
        else:
            end(pid, arg)
    for pid in list(open_values):
        end(pid, False)
    settings_ = CleanerSettings(delete_retention_ms=10)

    def seen() -> dict[bytes, bytes]:
        data, aborted = log.read_committed(0, 1 << 30)
        records = committed_records(data, [(t.producer_id, t.first_offset) for t in aborted])
        assert not {r.value for r in records} & aborted_values
        latest: dict[bytes, bytes] = {}
        for record in records:
            if record.key in KEYS:
                latest[record.key] = record.value
        return latest

    expected = {key: value for key, (_, value) in newest.items()}
    try:
        assert seen() == expected
        for round_ in range(3):
            for prefix in (b"f", b"g"):
                log.append(txn_batch(-1, 1, transactional=False, sequence=-1,
                                     keys=[prefix + b"%d" % round_]))
            job = log.prepare_flush()       # a FileLog cleans only what is on disk
            if job is not None:
                job.run()
                log.flushed(job)
            clean_now(log, 10**12 + 100 * round_, settings_)
            assert seen() == expected
        if on_file:
            log.close()
            log = FileLog.open(directory, config)
            assert seen() == expected
    finally:
        log.close()
