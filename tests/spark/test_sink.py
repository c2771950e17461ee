"""The roster sink: keys, values and headers round-trip; a replayed micro-batch is not written
twice."""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import ArrayType, BinaryType, StringType, StructField, StructType
from pyspark.sql.utils import StreamingQueryException

from roster.spark.options import write_settings
from roster.spark.sink import RosterStreamWriter
from roster.spark.source import RosterDataSource
from tests.spark.helpers import stream

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

HEADERS = ArrayType(StructType([StructField("key", StringType()),
                                StructField("value", BinaryType())]))
SCHEMA = StructType([StructField("key", StringType()), StructField("value", BinaryType()),
                     StructField("headers", HEADERS)])
ARROW_INPUT = pa.schema([("key", pa.string()), ("value", pa.binary()), ("headers", pa.list_(
    pa.struct([("key", pa.string()), ("value", pa.binary())])))])


def read_all(spark, bootstrap, topic):
    return spark.read.format("roster").option("kafka.bootstrap.servers", bootstrap) \
        .option("subscribe", topic).load().collect()


def test_batch_write_round_trips_keys_values_and_headers(spark, kafka):
    rows = [(f"k{i}" if i % 5 else None, f"v{i}".encode(), [("n", str(i).encode()), ("z", None)])
            for i in range(40)]
    spark.createDataFrame(rows, SCHEMA).write.format("roster") \
        .option("kafka.bootstrap.servers", kafka.bootstrap).option("topic", "sink-rt") \
        .mode("append").save()
    got = read_all(spark, kafka.bootstrap, "sink-rt")
    assert len(got) == len(rows)
    assert {r.value: (r.key, [(h.key, h.value) for h in r.headers]) for r in got} == \
        {v: ((k.encode() if k else None), h) for k, v, h in rows}
    # keyed records land where Kafka's default partitioner puts them
    from roster.client.producer import default_partition
    partitions = {r.partition for r in got}
    count = max(partitions) + 1
    for r in got:
        if r.key is not None:
            assert r.partition == default_partition(r.key, count, None)


def test_partition_and_topic_columns(spark, kafka):
    kafka.create("sink-cols", 3)
    df = spark.createDataFrame([("sink-cols", 2, "a", "x"), ("sink-cols", 1, "b", "y")],
                               "topic string, partition int, key string, value string")
    df.write.format("roster").option("kafka.bootstrap.servers", kafka.bootstrap) \
        .mode("append").save()
    got = read_all(spark, kafka.bootstrap, "sink-cols")
    assert sorted((r.partition, r.key, r.value) for r in got) == [(1, b"b", b"y"),
                                                                  (2, b"a", b"x")]


def test_batch_writes_need_mode_append_and_say_so(spark, kafka):
    """PySpark refuses its default save mode (ErrorIfExists) for every Python data source, in
    the JVM before the source is asked; overwrite reaches the source, which refuses it rather
    than append in silence. Neither writes anything."""
    from pyspark.errors import AnalysisException
    kafka.create("sink-modes", 1)
    df = spark.createDataFrame([("k", "v")], "key string, value string")

    def writer():
        return df.write.format("roster").option("kafka.bootstrap.servers", kafka.bootstrap) \
            .option("topic", "sink-modes")
    with pytest.raises(AnalysisException, match="ErrorIfExists") as default:
        writer().save()
    assert "Append" in str(default.value)
    with pytest.raises(Exception, match=r'mode\("append"\)'):
        writer().mode("overwrite").save()
    assert read_all(spark, kafka.bootstrap, "sink-modes") == []
    writer().mode("append").save()
    assert [(r.key, r.value) for r in read_all(spark, kafka.bootstrap, "sink-modes")] == \
        [(b"k", b"v")]


def test_the_same_batch_id_through_the_writer_twice_writes_once(spark, kafka):
    settings = write_settings({"kafka.bootstrap.servers": kafka.bootstrap, "topic": "sink-twice"})
    writer = RosterStreamWriter(settings, SCHEMA)
    rows = pa.RecordBatch.from_pylist(
        [{"key": f"k{i}", "value": f"v{i}".encode(), "headers": [{"key": "h", "value": b"1"}]}
         for i in range(25)], schema=ARROW_INPUT)
    outcomes = []
    for attempt in range(2):
        loop = asyncio.new_event_loop()
        try:
            outcomes.append(writer._write_once(iter([rows]), loop, "twice", task=3, batch_id=7,
                                               query_id="q-twice"))
        finally:
            loop.close()
    assert (outcomes[0].records, outcomes[0].skipped) == (25, False)
    assert (outcomes[1].records, outcomes[1].skipped) == (0, True)
    assert len(read_all(spark, kafka.bootstrap, "sink-twice")) == 25
    # the next batch id is written again
    loop = asyncio.new_event_loop()
    try:
        later = writer._write_once(iter([rows.slice(0, 5)]), loop, "twice", task=3, batch_id=8,
                                   query_id="q-twice")
    finally:
        loop.close()
    assert (later.records, later.skipped) == (5, False)


class FlakyOnce(RosterStreamWriter):
    """Fails Spark's sink commit of batch 1 once (after every task wrote and committed its
    marker), like a driver that dies right there; the restarted query replays batch 1."""

    def commit(self, messages, batchId):
        flag = Path(self.flag)
        with open(flag.with_suffix(".commits"), "a") as out:   # what each commit was told
            out.write(json.dumps([batchId, [(m.task, m.records, m.skipped) for m in messages
                                            if m is not None]]) + "\n")
        if batchId == 1 and not flag.exists():
            flag.write_text("failed once")
            raise RuntimeError("injected failure in the sink commit of batch 1")
        super().commit(messages, batchId)


class FlakySource(RosterDataSource):
    @classmethod
    def name(cls):
        return "roster_flaky"

    def streamWriter(self, schema, overwrite):
        writer = FlakyOnce(write_settings(self.options), schema)
        writer.flag = self.options["failflag"]
        return writer


def test_a_replayed_micro_batch_is_not_written_twice(spark, kafka, tmp_path):
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(FlakySource)
    kafka.create("sink-src", 2)
    produced = kafka.produce("sink-src", [(f"k{i}".encode(), f"v{i}".encode(),
                                           [("i", str(i).encode())]) for i in range(30)])

    def run():
        query = (stream(spark, kafka.bootstrap, subscribe="sink-src", startingOffsets="earliest",
                        maxOffsetsPerTrigger=10, **{"group.id": "sink-src-reader"})
                 .select("key", "value", "headers").writeStream.format("roster_flaky")
                 .option("kafka.bootstrap.servers", kafka.bootstrap).option("topic", "sink-dst")
                 .option("failflag", str(tmp_path / "failed"))
                 .option("checkpointLocation", str(tmp_path / "cp"))
                 .trigger(availableNow=True).start())
        try:
            return query.awaitTermination(120)
        finally:
            if query.isActive:
                query.stop()

    with pytest.raises(StreamingQueryException, match="injected failure"):
        run()
    assert (tmp_path / "failed").exists()
    partial = read_all(spark, kafka.bootstrap, "sink-dst")
    assert len(partial) == 20              # batches 0 and 1 were written; 1 is not committed

    assert run()                           # replays batch 1, then batch 2
    commits = [json.loads(line) for line in (tmp_path / "failed.commits").read_text().splitlines()]
    assert [batch for batch, _ in commits] == [0, 1, 1, 2]
    first, replay = commits[1][1], commits[2][1]
    assert sum(n for _, n, _ in first) == 10 and not any(skipped for _, _, skipped in first)
    assert replay and all(skipped and n == 0 for _, n, skipped in replay)   # nothing rewritten
    got = read_all(spark, kafka.bootstrap, "sink-dst")
    assert sorted((r.key, r.value, [(h.key, h.value) for h in r.headers]) for r in got) == \
        sorted((f"k{i}".encode(), f"v{i}".encode(), [("i", str(i).encode())])
               for i in range(30))
    assert len(produced) == 30
