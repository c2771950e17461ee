"""The connector's pure parts without Spark or a broker: options, offsets arithmetic, the
executor's range reader (over a fake broker), and the sink's marker rule."""
from __future__ import annotations

import struct

import pytest

from roster.client.records import OutgoingRecord, encode_batch
from roster.protocol.errors import ErrorCode
from roster.spark import offsets as O
from roster.spark import reading
from roster.spark.options import OptionError, read_settings, write_settings
from roster.spark.sink import marker_done, sink_id
from roster.spark.wire import FetchResult

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]
BOOT = {"kafka.bootstrap.servers": "h:1"}


def spark_options(**options):
    """Like Spark's CaseInsensitiveDict: lower-cased keys."""
    return {k.lower(): str(v) for k, v in {**BOOT, **options}.items()}


def test_options_are_read_in_lower_case_with_or_without_the_kafka_prefix():
    s = read_settings(spark_options(subscribePattern="a.*", startingOffsets="group",
                                    maxOffsetsPerTrigger=5, **{
                                        "kafka.group.id": "g", "group.instance.id": "i",
                                        "partition.assignment.strategy":
                                            "org.apache.kafka.clients.consumer.StickyAssignor,"
                                            "range",
                                        "failOnDataLoss": "false"}), streaming=True)
    assert (s.subscribe_pattern, s.starting.kind, s.max_offsets_per_trigger) == ("a.*", "group", 5)
    assert (s.group_id, s.group_instance_id, s.assignors) == ("g", "i", ("sticky", "range"))
    assert s.fail_on_data_loss is False and s.matches("abc") and not s.matches("xabc")


@pytest.mark.parametrize("options, streaming, message", [
    ({}, True, "exactly one"),
    ({"subscribe": "a", "subscribePattern": "b"}, True, "exactly one"),
    ({"subscribe": "a", "startingOffsets": "group"}, True, "group.id"),
    ({"subscribe": "a", "startingOffsets": "latest"}, False, "batch"),
    ({"subscribe": "a", "endingOffsets": "earliest"}, False, "endingOffsets"),
    ({"subscribe": "a", "startingOffsets": "{oops"}, True, "JSON"),
    ({"subscribe": "a", "partition.assignment.strategy": "fair"}, True, "unknown assignor"),
    ({"subscribe": "a", "kafka.security.protocol": "SASL_SSL"}, True, "sasl.mechanism: set"),
    ({"subscribe": "a", "kafka.security.protocol": "SASL_SSL",
      "kafka.sasl.mechanism": "GSSAPI"}, True, "roster's clients speak PLAIN"),
    ({"subscribe": "a", "kafka.security.protocol": "TLS"}, True, "security.protocol=TLS"),
])
def test_bad_options_are_refused_clearly(options, streaming, message):
    with pytest.raises(OptionError, match=message):
        read_settings(spark_options(**options), streaming=streaming)


def test_starting_offsets_json_and_policies():
    s = read_settings(spark_options(subscribe="t", startingOffsets='{"t": {"0": 23, "1": -2}}'),
                      streaming=True)
    assert [s.starting.fallback(("t", p)) for p in (0, 1, 2)] == [23, -2, -2]
    assert read_settings(spark_options(subscribe="t"), streaming=True).starting.kind == "latest"
    assert read_settings(spark_options(subscribe="t"), streaming=False).starting.kind == \
        "earliest"
    with pytest.raises(OptionError, match="bootstrap"):
        read_settings({"subscribe": "t"}, streaming=True)


def test_offsets_json_round_trip():
    offsets = {("a", 0): 5, ("a", 10): 7, ("b", 1): 0}
    assert O.to_json(offsets) == {"a": {"0": 5, "10": 7}, "b": {"1": 0}}
    assert O.from_json(O.to_json(offsets)) == offsets and O.from_json({}) == {}


def test_budget_is_proportional_exact_and_always_progresses():
    assert O.split_budget({("t", 0): 90, ("t", 1): 10}, 10) == {("t", 0): 9, ("t", 1): 1}
    assert O.split_budget({("t", 0): 5, ("t", 1): 5}, None) == {("t", 0): 5, ("t", 1): 5}
    shares = O.split_budget({("t", p): 3 for p in range(4)}, 2)
    assert sum(shares.values()) == 2
    assert O.split_budget({("t", 0): 0, ("t", 1): 7}, 3) == {("t", 0): 0, ("t", 1): 3}


def test_plan_end_moves_forward_drops_lost_and_enters_gained_at_their_start():
    start = {("t", 0): 10, ("t", 1): 20, ("t", 2): 30}
    latest = {("t", 0): 15, ("t", 1): 18}          # partition 1's log end went backwards
    end = O.plan_end(start, kept=[("t", 0), ("t", 1)], gained={("t", 3): 4}, latest=latest,
                     limit=None)
    assert end == {("t", 0): 15, ("t", 1): 20, ("t", 3): 4}   # ("t", 2) was lost
    capped = O.plan_end(start, [("t", 0)], {}, latest, limit=None, target={("t", 0): 12})
    assert capped == {("t", 0): 12}
    assert O.ranges(start, end) == [(("t", 0), 10, 15)]       # gained: nothing this batch


def _batch(first_offset: int, count: int) -> bytes:
    data = bytearray(encode_batch([OutgoingRecord(f"v{first_offset + i}".encode(), b"k",
                                                  (("h", b"1"),)) for i in range(count)],
                                  "none", 1_700_000_000_000))
    struct.pack_into(">q", data, 0, first_offset)   # base offset (outside the CRC)
    return bytes(data)


class FakeBroker:
    """Serves Fetch from a log holding offsets [log_start, 20) in batches of 10."""
    log_start = 0

    def __init__(self, *args) -> None:
        pass

    async def fetch(self, topic, partition, offset, max_bytes, wait_ms):
        if offset < self.log_start or offset > 20:
            return FetchResult(ErrorCode.offset_out_of_range, 20, self.log_start, b"")
        base = offset - offset % 10
        return FetchResult(ErrorCode.none, 20, self.log_start,
                           _batch(max(base, self.log_start), 10 - max(base, self.log_start) % 10))

    def close(self) -> None:
        pass


def _read(monkeypatch, start, end, fail, log_start=0):
    broker = type("B", (FakeBroker,), {"log_start": log_start})
    monkeypatch.setattr(reading, "Broker", broker)
    part = reading.RangePartition("h:1", "c", "t", 0, start, end, 1 << 20, 0, fail)
    return [row for batch in reading.read_range(part) for row in batch.to_pylist()]


def test_read_range_yields_exactly_the_range_in_schema_order(monkeypatch):
    rows = _read(monkeypatch, 3, 13, fail=True)
    assert [r["offset"] for r in rows] == list(range(3, 13))      # stops at 13 mid-batch
    assert list(rows[0]) == ["key", "value", "topic", "partition", "offset", "timestamp",
                             "timestampType", "headers"]
    first = rows[0]
    assert (first["key"], first["value"], first["topic"], first["partition"],
            first["timestampType"], first["headers"]) == \
        (b"k", b"v3", "t", 0, 0, [{"key": "h", "value": b"1"}])
    assert first["timestamp"].timestamp() == 1_700_000_000


def test_read_range_below_the_log_start_fails_or_skips(monkeypatch):
    with pytest.raises(reading.DataLossError, match="failOnDataLoss=false"):
        _read(monkeypatch, 2, 12, fail=True, log_start=5)
    rows = _read(monkeypatch, 2, 12, fail=False, log_start=5)
    assert [r["offset"] for r in rows] == list(range(5, 12))


def test_markers_count_only_for_the_same_query():
    assert marker_done(8, '{"batch":7,"query":"q"}', 7, "q")
    assert marker_done(9, '{"batch":8,"query":"q"}', 7, "q")     # a later batch is done too
    assert not marker_done(7, '{"batch":6,"query":"q"}', 7, "q")
    assert not marker_done(-1, "", 0, "q")
    assert not marker_done(8, '{"batch":7,"query":"other"}', 7, "q")
    s = write_settings({**BOOT, "checkpointlocation": "/cp"})
    assert sink_id(s, "qid") == "qid" and sink_id(s, None).startswith("cp-")
    assert sink_id(write_settings({**BOOT, "sink.id": "mine"}), "qid") == "mine"


def test_request_timeout_is_kafkas_request_timeout_ms_for_reads_and_writes():
    from roster.spark.source import _partition
    assert read_settings(spark_options(subscribe="t"), streaming=True).request_timeout_ms == 30_000
    s = read_settings(spark_options(subscribe="t", **{"kafka.request.timeout.ms": 5000}),
                      streaming=True)
    assert s.request_timeout_ms == 5000
    assert _partition(s, ("t", 0), 0, 1).request_timeout_ms == 5000   # the executors' reads
    assert write_settings(spark_options(**{"request.timeout.ms": 700})).request_timeout_ms == 700
    with pytest.raises(OptionError, match="request.timeout.ms must be at least 1"):
        write_settings(spark_options(**{"kafka.request.timeout.ms": 0}))
