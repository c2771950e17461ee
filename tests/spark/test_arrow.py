"""The Arrow paths: read() hands Spark pyarrow record batches, and the sink takes them. Both
must carry exactly the records, with their types, whatever the batching, compression, headers
and keys."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from roster.client.producer import Producer, default_partition
from roster.spark.arrow_records import ARROW_SCHEMA
from roster.spark.source import SCHEMA
from tests.spark.helpers import stream

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_the_arrow_schema_is_the_one_spark_derives_from_the_source_schema(spark):
    # pyspark refuses a batch whose schema does not equal this (Schema.equals), so a drift
    # in either would fail every read
    spark_schema = spark.createDataFrame([], SCHEMA).schema
    assert to_arrow_schema(spark_schema, timezone="UTC").equals(ARROW_SCHEMA)


def _produce(bootstrap, topic, records, compression="none"):
    """records: (key, value, headers); one produce call per record, so every record is its own
    batch except the compressed ones, sent in one batch per partition."""
    async def go():
        producer = Producer(bootstrap, compression=compression)
        try:
            if compression == "none":
                return [await producer.send(topic, v, key=k, headers=h) for k, v, h in records]
            from roster.client.records import OutgoingRecord
            return await producer.send_many(topic, [OutgoingRecord(v, k, tuple(h))
                                                    for k, v, h in records])
        finally:
            await producer.close()
    return asyncio.run(go())


class AllColumns:
    """foreachBatch sink keeping every column of every row, by batch id."""

    def __init__(self) -> None:
        self.by_batch: dict[int, list] = {}
        self.lock = threading.Lock()

    def __call__(self, df, batch_id: int) -> None:
        rows = df.collect()
        with self.lock:
            self.by_batch[batch_id] = rows

    @property
    def rows(self):
        with self.lock:
            return [row for rows in self.by_batch.values() for row in rows]


def test_a_streaming_read_returns_exactly_the_produced_records_with_their_types(
        spark, kafka, tmp_path):
    kafka.create("arrow-in", 2)
    before = int(time.time() * 1000)
    plain = [(f"k{i}".encode() if i % 3 else None, f"value-{i}".encode() * (i % 7 + 1),
              [("h", str(i).encode()), ("none", None)] if i % 4 == 0 else [])
             for i in range(120)]
    squeezed = [(None, f"gz-{i}".encode(), [("g", b"1")] if i % 2 else []) for i in range(80)]
    placed = _produce(kafka.bootstrap, "arrow-in", plain)
    placed += _produce(kafka.bootstrap, "arrow-in", squeezed, compression="gzip")
    after = int(time.time() * 1000)
    produced = dict(zip(placed, plain + squeezed))

    sink = AllColumns()
    # small fetches: many Fetch round trips per range (and a Fetch in flight while a batch is
    # handed over); a small trigger cap: ranges that end inside a record batch
    query = (stream(spark, kafka.bootstrap, subscribe="arrow-in", startingOffsets="earliest",
                    maxOffsetsPerTrigger=37, **{"group.id": "g-arrow",
                                                "max.partition.fetch.bytes": 600})
             .writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(120)
    finally:
        if query.isActive:
            query.stop()

    rows = sink.rows
    assert sorted((r.partition, r.offset) for r in rows) == sorted(placed)   # each once
    for row in rows:
        key, value, headers = produced[(row.partition, row.offset)]
        assert (row.key, row.value, row.topic, row.timestampType) == (key, value, "arrow-in", 0)
        assert [(h.key, h.value) for h in row.headers] == headers
        stamp = row.timestamp.timestamp() * 1000
        assert before - 1000 <= stamp <= after + 1000


def _read_back(spark, bootstrap, topic):
    return spark.read.format("roster").option("kafka.bootstrap.servers", bootstrap) \
        .option("subscribe", topic).load().collect()


@pytest.mark.parametrize("compression", ["none", "lz4", "zstd"])
def test_the_sink_writes_every_row_once_over_many_rounds(spark, kafka, compression):
    topic = f"arrow-out-{compression}"
    kafka.create(topic, 3)
    rows = [(f"key-{i}" if i % 2 else None, f"v{i}", [("n", str(i).encode())] if i % 5 else None)
            for i in range(103)]
    df = spark.createDataFrame(rows, "key string, value string, "
                                     "headers array<struct<key:string,value:binary>>")
    (df.repartition(2).write.format("roster").option("kafka.bootstrap.servers", kafka.bootstrap)
     .option("topic", topic).option("sink.chunkRecords", "10")
     .option("compression.type", compression).mode("append").save())

    got = _read_back(spark, kafka.bootstrap, topic)
    assert sorted((r.value, r.key, [(h.key, h.value) for h in r.headers]) for r in got) == \
        sorted((v.encode(), (k.encode() if k else None), h or []) for k, v, h in rows)
    for r in got:          # keyed records where Kafka's default partitioner puts them
        if r.key is not None:
            assert r.partition == default_partition(r.key, 3, None)
    assert {r.partition for r in got if r.key is None} == {0, 1, 2}    # round robin


def test_a_read_that_spark_stops_early_ends_cleanly(spark, kafka):
    # limit(): Spark stops taking batches while the next Fetch is already in flight
    kafka.create("arrow-limit", 1)
    _produce(kafka.bootstrap, "arrow-limit", [(None, b"x" * 100, [])] * 50, compression="lz4")
    _produce(kafka.bootstrap, "arrow-limit", [(None, b"y" * 100, [])] * 50, compression="lz4")
    df = spark.read.format("roster").option("kafka.bootstrap.servers", kafka.bootstrap) \
        .option("subscribe", "arrow-limit").option("max.partition.fetch.bytes", "100").load()
    assert [r.offset for r in df.limit(3).collect()] == [0, 1, 2]
    assert df.count() == 100


def test_rows_without_keys_go_where_the_per_row_partitioner_puts_them():
    """Batches without key/partition/headers take the stride path; with an all-empty headers
    column the same rows take the per-row path. Placement and order must be the same, and the
    round-robin counter must carry over between batches (sizes not multiples of the count)."""
    import pyarrow as pa

    from roster.record_codec import MemoryRecords
    from roster.spark.options import write_settings
    from roster.spark.producing import ArrowProducer, Round

    def placed(with_headers: bool) -> dict:
        loop = asyncio.new_event_loop()
        producer = ArrowProducer(write_settings({"kafka.bootstrap.servers": "127.0.0.1:9",
                                                 "topic": "t"}), loop)
        producer.cluster.partitions["t"] = 3        # no metadata request: nothing to connect to
        current, start = Round(0), 0
        for size in (7, 2, 1, 11):
            columns = {"key": pa.nulls(size, pa.binary()),
                       "value": pa.array([b"%d" % i for i in range(start, start + size)])}
            if with_headers:
                columns["headers"] = pa.array([[]] * size, ARROW_SCHEMA.field("headers").type)
            producer._add(current, pa.RecordBatch.from_pydict(columns))
            start += size
        producer.cluster.close()
        loop.close()
        out = {}
        for tp, data in current.batches().items():
            batch = MemoryRecords(data).next_batch()
            out[tp] = [(r.offset, r.key, r.value, list(r.headers)) for r in batch]
        return out

    fast, per_row = placed(False), placed(True)
    assert fast == per_row
    assert sorted(fast) == [("t", 0), ("t", 1), ("t", 2)]
    assert sum(len(v) for v in fast.values()) == 21
