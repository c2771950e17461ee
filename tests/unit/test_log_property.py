"""FileLog agrees with MemoryLog, the model, through random appends, reads and restarts, including
restarts after a crash that tore the end of the active segment."""
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roster.log.api import LogConfig, OffsetOutOfRange
from roster.log.batch import iter_batches
from roster.log.file import CLEAN_SHUTDOWN, RECOVERY_POINT, FileLog
from roster.log.memory import MemoryLog
from tests.unit.batches import make_batch

configs = st.builds(
    LogConfig,
    segment_bytes=st.sampled_from([1, 300, 1_500, 1 << 20]),
    index_interval_bytes=st.sampled_from([0, 100, 4096]),
)

appends = st.tuples(
    st.just("append"),
    st.integers(1, 5),                                    # records
    st.integers(0, 150),                                  # value size
    st.lists(st.integers(0, 5_000), min_size=5, max_size=5),  # record timestamps
    st.sampled_from(["none", "none", "gzip", "lz4"]),
)
reads = st.tuples(st.just("read"), st.integers(-2, 200), st.integers(0, 3_000))
lookups = st.tuples(st.just("lookup"), st.integers(-1, 5_100))
flushes = st.tuples(st.just("flush"))
restarts = st.tuples(
    st.just("restart"),
    st.sampled_from(["clean", "unclean", "cut", "garbage"]),
    st.floats(0, 1),                  # where to cut the active segment
    st.binary(min_size=1, max_size=80),  # garbage to append
    st.booleans(),                    # lose the recovery-point file too
)
operations = st.lists(st.one_of(appends, appends, reads, lookups, flushes, restarts),
                      min_size=10, max_size=50)


def crash_and_damage(directory: Path, how: str, where: float, garbage: bytes,
                     lose_recovery_point: bool) -> int:
    """Damage the closed log like a crash would; return how many batches of the active segment
    lose their place (the model drops as many of its newest batches)."""
    (directory / CLEAN_SHUTDOWN).unlink()
    if lose_recovery_point:
        (directory / RECOVERY_POINT).unlink(missing_ok=True)
    active = max(directory.glob("*.log"))
    data = active.read_bytes()
    if how == "cut":
        cut = int(where * len(data))
        active.write_bytes(data[:cut])
        return len(list(iter_batches(data))) - len(list(iter_batches(data[:cut])))
    if how == "garbage":
        active.write_bytes(data + garbage)
    return 0


def same_read(file_log, model, offset, max_bytes):
    try:
        expected = model.read(offset, max_bytes)
    except OffsetOutOfRange:
        try:
            file_log.read(offset, max_bytes)
        except OffsetOutOfRange:
            return
        raise AssertionError(f"FileLog read offset {offset}, MemoryLog refused it")
    assert file_log.read(offset, max_bytes) == expected, (offset, max_bytes)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs, ops=operations)
def test_file_log_agrees_with_the_memory_model(config, ops):
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "topic-0"
        file_log = FileLog.open(directory, config)
        model = MemoryLog(config)
        appended: list[bytes] = []
        try:
            for op in ops:
                kind = op[0]
                if kind == "append":
                    _, count, value_size, timestamps, codec = op
                    batch = make_batch(count, timestamps=timestamps[:count], value_size=value_size,
                                       compression=codec)
                    appended.append(batch)
                    assert file_log.append(batch) == model.append(batch)
                elif kind == "read":
                    same_read(file_log, model, op[1], op[2])
                elif kind == "lookup":
                    assert file_log.offset_for_timestamp(op[1]) == model.offset_for_timestamp(op[1])
                elif kind == "flush":
                    job = file_log.prepare_flush()
                    if job is not None:
                        job.run()
                        file_log.flushed(job)
                else:
                    _, how, where, garbage, lose_recovery_point = op
                    file_log.close()
                    if how != "clean":
                        lost = crash_and_damage(directory, how, where, garbage, lose_recovery_point)
                        if lost:
                            del appended[-lost:]
                            model = MemoryLog(config)
                            for batch in appended:
                                model.append(batch)
                    file_log = FileLog.open(directory, config)
                assert (file_log.log_start_offset, file_log.log_end_offset, file_log.size_bytes) == \
                       (model.log_start_offset, model.log_end_offset, model.size_bytes)
            for offset in range(model.log_end_offset + 1):
                for max_bytes in (0, 500, 1 << 20):
                    same_read(file_log, model, offset, max_bytes)
            assert file_log.max_timestamp() == model.max_timestamp()
        finally:
            file_log.close()
