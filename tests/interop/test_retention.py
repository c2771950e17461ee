"""Retention deletes whole old segments; clients see the new log start offset."""
from __future__ import annotations

import time

import pytest

from roster.protocol.errors import ErrorCode
from tests.interop.test_bad_input import _create
from tests.support import clients
from tests.support.wire import Wire

pytestmark = pytest.mark.interop
DAY_MS = 86_400_000


def _log_start(wire, topic: str) -> int:
    from roster.protocol.build import element
    from roster.protocol.codec import request_schema
    entry = element(request_schema(2, 7), "topics")
    part = element(entry, "partitions")
    answer = wire.call(2, 7, replica_id=-1, isolation_level=0, topics=(entry(
        name=topic, partitions=(part(partition_index=0, timestamp=-2, current_leader_epoch=-1),)),))
    return answer.topics[0].partitions[0].offset


def _wait_for_log_start(wire, topic: str, expected: int, timeout_s: float = 30) -> int:
    deadline = time.monotonic() + timeout_s
    start = None
    while time.monotonic() < deadline:
        start = _log_start(wire, topic)
        if start == expected:
            return start
        time.sleep(0.05)  # polling the broker's answer, not waiting for time to pass
    raise AssertionError(f"log start of {topic} is {start}, never {expected}")


# Ten ~970-byte batches in 2048-byte segments: five segments of two batches each.
# By time (1 day): the four segments holding only 10-day-old records go; the log starts at 8.
# By size (3000 bytes, all records recent): the oldest segments go while the rest still hold
# 3000 bytes; the log starts at 6.
@pytest.mark.parametrize("config,age_days,expected_start",
                         [(("retention.ms", str(DAY_MS)), 10, 8),
                          (("retention.bytes", "3000"), 0, 6)], ids=["by-time", "by-size"])
def test_retention_removes_old_segments(broker_factory, config, age_days, expected_start):
    # produce with retention idle so the segment layout is exactly the one described above
    broker = broker_factory({"log.retention.check.interval.ms": "600000"})
    now = int(time.time() * 1000)
    old = [clients.Rec(0, None, b"o" * 900, (), now - age_days * DAY_MS + i) for i in range(8)]
    new = [clients.Rec(0, None, b"n" * 900, (), now + i) for i in range(2)]
    with Wire(broker.bootstrap) as wire:
        # segment.bytes may not go below 1 MiB (Kafka 4); Kafka's internal.segment.bytes may
        assert _create(wire, "ret", 1, configs=[("internal.segment.bytes", "2048"), config]) \
            .error_code == 0
        for record in old + new:  # one batch per record, so segments roll every ~2 batches
            clients.produce_confluent(broker.bootstrap, "ret", [record], "none")
    broker.settings["log.retention.check.interval.ms"] = "100"
    broker.restart()
    with Wire(broker.bootstrap) as wire:
        start = _wait_for_log_start(wire, "ret", expected_start)
    segment_bases = sorted(int(p.stem) for p in (broker.data_dir / "ret-0").glob("*.log"))
    assert segment_bases[0] == start, "the log starts at the first remaining segment"
    seen = clients.consume_kafka_python(broker.bootstrap, "ret", 1, 10 - start)
    assert [r.offset for r in seen] == list(range(start, 10))
    with Wire(broker.bootstrap) as wire:
        assert _fetch_error(wire, "ret", 0) == ErrorCode.offset_out_of_range
        assert _fetch_error(wire, "ret", start) == ErrorCode.none


def _fetch_error(wire, topic: str, offset: int):
    import datetime

    from roster.protocol.build import element
    from roster.protocol.codec import request_schema
    entry = element(request_schema(1, 12), "topics")
    part = element(entry, "partitions")
    answer = wire.call(1, 12, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0,
                       max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                       topics=(entry(topic=topic, partitions=(part(
                           partition=0, fetch_offset=offset, partition_max_bytes=1 << 20),)),),
                       forgotten_topics_data=(), rack_id="")
    return answer.responses[0].partitions[0].error_code
