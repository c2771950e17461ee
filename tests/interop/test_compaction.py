"""Compaction of __consumer_offsets in a real broker: the partition shrinks while committers keep
committing, restarts return the last commits, and kill -9 in the middle of a compaction pass
loses no acknowledged commit. Every wait is on a condition or a log line, never a bare sleep."""
from __future__ import annotations

import datetime
import re
import threading

import pytest

from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from tests.interop.test_bad_input import _create
from tests.interop.test_group_durability import committed_offsets, wait_until
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("compaction")]

SETTINGS = {"offsets.topic.segment.bytes": "16384", "log.cleaner.backoff.ms": "200",
            "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}
PARTITION = "__consumer_offsets-0"
_TOPIC = element(request_schema(8, 2), "topics")
_PART = element(_TOPIC, "partitions")


def commit(wire: Wire, group: str, topic: str, partition: int, offset: int,
           metadata: str = "") -> None:
    """OffsetCommit v2 as a standalone consumer (no membership); fails unless acknowledged."""
    answer = wire.call(8, 2, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                       retention_time=datetime.timedelta(milliseconds=-1), topics=(make(
                           _TOPIC, name=topic, partitions=(make(
                               _PART, partition_index=partition, committed_offset=offset,
                               committed_metadata=metadata),)),))
    error = answer.topics[0].partitions[0].error_code
    assert error.value == 0, error


def partition_bytes(broker) -> int:
    return sum(p.stat().st_size for p in (broker.data_dir / PARTITION).glob("*.log"))


def lines_after(broker, mark: int, pattern: str) -> list[str]:
    return [line for line in broker.output[mark:] if re.search(pattern, line)]


def test_commits_compact_the_offsets_partition_and_the_last_ones_survive_restarts(
        broker_factory):
    broker = broker_factory(SETTINGS)
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "t", 4).error_code == 0
        last: dict[tuple[str, int], int] = {}
        written = 0
        for i in range(1_200):
            group, partition = f"g{i % 3}", i % 4
            metadata = f"commit {i} " + "m" * 200
            commit(wire, group, "t", partition, i, metadata)
            last[(group, partition)] = i
            written += len(metadata)
    # 12 keys, ~250 KB written: once compacted, the closed segments hold about 12 records
    wait_until(lambda: partition_bytes(broker) < written / 5, 60,
               "the offsets partition to shrink")
    done = lines_after(broker, 0, r"compacted __consumer_offsets-0 offsets 0\.\.\d+: "
                                  r"\d+ -> \d+ records, \d+ -> \d+ bytes")
    assert done, "an INFO line reports each pass"
    expected = {group: {("t", p): o for (g, p), o in last.items() if g == group}
                for group in ("g0", "g1", "g2")}
    for restart in ("clean", "kill -9"):
        if restart == "clean":
            broker.stop()
        else:
            broker.kill9()
            # a pass the restarted broker began would stage .cleaned files of its own
            broker.settings["log.cleaner.enable"] = "false"
        broker.start()
        for group, offsets in expected.items():
            assert committed_offsets(broker.bootstrap, group) == offsets, (restart, group)
    assert not list((broker.data_dir / PARTITION).glob("*.cleaned"))


def test_kill_9_during_compaction_loses_no_acknowledged_commit(broker_factory):
    """Committers write large commits (so each pass has real work), the broker is killed as soon
    as a pass announces itself, and the restarted broker returns, for every key, the last
    acknowledged offset or a later one that was written but not yet acknowledged."""
    broker = broker_factory({**SETTINGS, "offset.metadata.max.bytes": "4096"})
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "t", 4).error_code == 0
    acked: dict[tuple[str, int], int] = {}
    attempted: dict[tuple[str, int], int] = {}
    lock = threading.Lock()
    next_offset = 0

    def committer(index: int, stop: threading.Event) -> None:
        nonlocal next_offset
        try:
            with Wire(broker.bootstrap, timeout_s=5) as wire:
                while not stop.is_set():
                    key = (f"g{index}", next_offset % 4)
                    with lock:
                        next_offset += 1
                        offset = next_offset
                        attempted[key] = offset
                    commit(wire, key[0], "t", key[1], offset, "x" * 3000)
                    with lock:
                        acked[key] = offset
        except (OSError, ConnectionError):
            return  # the broker was killed: whatever was acknowledged is recorded

    for round_number in range(3):
        mark = len(broker.output)
        stop = threading.Event()
        threads = [threading.Thread(target=committer, args=(i, stop)) for i in range(4)]
        for t in threads:
            t.start()
        wait_until(lambda: lines_after(broker, mark, r"compacting __consumer_offsets-0"), 60,
                   f"a compaction pass to start (round {round_number})")
        broker.kill9()
        stop.set()
        for t in threads:
            t.join(30)
        if round_number == 2:
            # A pass the restarted broker begins stages .cleaned files of its own; with the
            # cleaner off, any .cleaned file after the start is one the killed pass left behind.
            broker.settings["log.cleaner.enable"] = "false"
        broker.start()
        with lock:
            snapshot = dict(acked), dict(attempted)
        for group in {g for g, _ in snapshot[0]}:
            found = committed_offsets(broker.bootstrap, group)
            for (g, partition), offset in snapshot[0].items():
                if g == group:
                    got = found.get(("t", partition), -1)
                    assert offset <= got <= snapshot[1][(g, partition)], \
                        f"round {round_number} {group}/{partition}: acknowledged {offset}, got {got}"
    assert not list((broker.data_dir / PARTITION).glob("*.cleaned")), \
        "opening the log removes what the killed pass staged"
