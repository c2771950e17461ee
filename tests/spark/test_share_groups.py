"""Share-group reads (`.option("shareGroup", g)`, KIP-932) with a real SparkSession against a real
roster broker, and the same on Apache Kafka 4.4: records are acquired by the driver's
ShareConsumer when Spark plans a micro-batch and accepted once Spark has completed it; a query
stopped, or killed -9, mid-batch has its records come back from the broker (delivery count 2),
not from Spark's checkpoint; two queries on one share group split the records; a batch slower
than the acquisition lock keeps its records by renewing the lock.

Each scenario has its own topic and group, reading from the earliest offset
(share.auto.offset.reset=earliest, set on the group before anyone joins).
"""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from roster.admin.client import AdminClient
from roster.client.producer import Producer
from roster.client.records import OutgoingRecord
from roster.client.share_consumer import ShareConsumer, ShareRecord
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from roster.spark.options import OptionError, read_settings
from roster.spark.share_source import (
    SHARE_SCHEMA,
    batch_of,
    read_share_partition,
    share_partitions,
)
from tests.spark.helpers import wait_until
from tests.support.process import BrokerProcess

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]
REPO = Path(__file__).resolve().parents[2]
GROUP_RESOURCE, SET = 32, 0
LOCK_MS = 2_000


SHORT_LOCKS = {"group.share.min.record.lock.duration.ms": "1000"}


@pytest.fixture(scope="module", params=["roster", "kafka"])
def roster_broker(request, tmp_path_factory):
    """The scenarios run on roster and on Apache Kafka 4.4 (a private peer) with the same
    assertions. Both allow share groups a 2 s acquisition lock (Kafka's floor is
    group.share.min.record.lock.duration.ms, 15 s by default)."""
    if request.param == "kafka":
        from tests.support.kafka_peer import KafkaPeer
        broker = KafkaPeer(extra_settings=SHORT_LOCKS).start()
    else:
        broker = BrokerProcess(tmp_path_factory.mktemp("spark-share-broker"),
                               {"group.initial.rebalance.delay.ms": "0", **SHORT_LOCKS}).start()
    yield broker
    broker.stop()


def share_group(bootstrap: str, group: str, **configs: str) -> None:
    """IncrementalAlterConfigs on the GROUP resource, as kafka-configs --entity-type groups."""
    configs = {"share.auto.offset.reset": "earliest", **configs}
    with AdminClient(bootstrap) as admin:
        resource = admin.entry(ApiKey.INCREMENTAL_ALTER_CONFIGS, "resources")
        config = admin.entry(ApiKey.INCREMENTAL_ALTER_CONFIGS, "resources", "configs")
        answer = admin.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=(
            resource(resource_type=GROUP_RESOURCE, resource_name=group, configs=tuple(
                config(name=k, config_operation=SET, value=v) for k, v in configs.items())),))
    assert answer.responses[0].error_code is ErrorCode.none, answer.responses[0]


def produce_batches(bootstrap: str, topic: str, values: list[bytes], partition: int) -> None:
    """The values in one record batch (a share member acquires whole batches)."""
    async def go():
        producer = Producer(bootstrap)
        try:
            await producer.send_many(topic, [OutgoingRecord(v) for v in values], partition)
        finally:
            await producer.close()
    asyncio.run(go())


def leftovers(bootstrap: str, group: str, topic: str, wait_s: float = 8.0) -> list:
    """What a plain ShareConsumer joining the group gets within `wait_s` (records accepted by
    the query are never delivered again; released or expired ones are)."""
    async def go():
        consumer = ShareConsumer(bootstrap, group, share_acknowledgement_mode="explicit")
        got = []
        try:
            await consumer.subscribe([topic])
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                for record in await consumer.poll(0.5):
                    got.append((record.partition, record.offset, record.delivery_count))
                    consumer.acknowledge(record)
        finally:
            await consumer.close()
        return got
    return asyncio.run(go())


class Rows:
    """foreachBatch sink keeping every call (replays too) with each row's place, value and
    delivery count."""

    def __init__(self, on_batch=None) -> None:
        self.calls: list[tuple[int, list[tuple]]] = []
        self.lock = threading.Lock()
        self.on_batch = on_batch

    def __call__(self, df, batch_id: int) -> None:
        rows = [(r.partition, r.offset, r.value, r.deliveryCount) for r in df.select(
            "partition", "offset", "value", "deliveryCount").collect()]
        with self.lock:
            self.calls.append((batch_id, rows))
        if self.on_batch is not None:
            self.on_batch(df, batch_id, rows)

    @property
    def rows(self) -> list[tuple]:
        with self.lock:
            return [row for _, rows in self.calls for row in rows]

    def places(self) -> list[tuple[int, int]]:
        return sorted((p, o) for p, o, _, _ in self.rows)


def start(spark, bootstrap, sink, checkpoint, topic, group, available_now=False, **options):
    reader = (spark.readStream.format("roster").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("shareGroup", group))
    for key, value in options.items():
        reader = reader.option(key, str(value))
    writer = reader.load().writeStream.foreachBatch(sink) \
        .option("checkpointLocation", str(checkpoint))
    writer = writer.trigger(availableNow=True) if available_now \
        else writer.trigger(processingTime="300 milliseconds")
    return writer.start()


def stop_all(*queries):
    for query in queries:
        if query is not None and query.isActive:
            query.stop()


# -- options, without Spark --------------------------------------------------------------------

@pytest.mark.parametrize("option, value, message", [
    ("group.id", "g", "named by the option shareGroup"),
    ("startingOffsets", "earliest", "share.auto.offset.reset"),
    ("group.instance.id", "i", "no static membership"),
    ("subscribePattern", "t.*", "topic names"),
    ("isolation.level", "read_uncommitted", "share.isolation.level"),
    ("commitOffsets", "false", "acknowledged"),
])
def test_options_that_do_not_apply_to_a_share_group_are_refused(option, value, message):
    options = {"kafka.bootstrap.servers": "h:1", "sharegroup": "g", "subscribe": "t",
               option.lower(): value}
    with pytest.raises(OptionError, match=message):
        read_settings(options, streaming=True)


def test_a_share_group_is_read_by_streaming_queries_only():
    with pytest.raises(OptionError, match="streaming query only"):
        read_settings({"kafka.bootstrap.servers": "h:1", "sharegroup": "g", "subscribe": "t"},
                      streaming=False)


def test_a_consumer_group_checkpoint_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="checkpoint of its own"):
        batch_of({"t": {"0": 12}}, "start offset")
    assert batch_of({"batch": 7}, "start offset") == 7 and batch_of(None, "start") == 0


def test_the_arrow_batches_have_the_schema_spark_derives_from_the_share_schema(spark):
    from pyspark.sql.pandas.types import to_arrow_schema
    expected = to_arrow_schema(spark.createDataFrame([], SHARE_SCHEMA).schema, timezone="UTC")
    record = ShareRecord("t", 3, 41, 1_700_000_000_123, b"k", b"v", (("h", b"1"),), 2)
    [part] = share_partitions([record])
    [batch] = list(read_share_partition(part))
    assert batch.schema.equals(expected)
    assert batch.to_pylist() == [{
        "key": b"k", "value": b"v", "topic": "t", "partition": 3, "offset": 41,
        "timestamp": batch.column("timestamp")[0].as_py(), "timestampType": None,
        "headers": [{"key": "h", "value": b"1"}], "deliveryCount": 2}]
    assert batch.column("timestamp")[0].value == 1_700_000_000_123_000     # microseconds


# -- with Spark ----------------------------------------------------------------------------

def test_every_record_is_delivered_once_and_accepted_when_spark_completes_its_batch(
        spark, kafka, tmp_path):
    kafka.create("sh-once", 2)
    share_group(kafka.bootstrap, "sh-once")
    for p in (0, 1):
        for chunk in range(3):
            produce_batches(kafka.bootstrap, "sh-once",
                            [f"{p}-{chunk}-{i}".encode() for i in range(5)], p)
    sink = Rows()
    query = start(spark, kafka.bootstrap, sink, tmp_path / "cp", "sh-once", "sh-once",
                  available_now=True, maxOffsetsPerTrigger=10)
    try:
        assert query.awaitTermination(180), "the AvailableNow query did not finish"
        assert query.exception() is None
    finally:
        stop_all(query)
    assert sink.places() == [(p, o) for p in (0, 1) for o in range(15)]   # each record once
    assert {count for _, _, _, count in sink.rows} == {1}
    assert len([c for c in sink.calls if c[1]]) >= 3        # at most ~10 records a batch
    # every batch was accepted once Spark completed it: the group delivers nothing again
    assert leftovers(kafka.bootstrap, "sh-once", "sh-once") == []


def test_a_query_stopped_mid_batch_has_its_records_redelivered_by_the_broker(
        spark, kafka, tmp_path):
    """The query stops while its first micro-batch runs (inside a Spark job its batch function
    started): Spark never completes that batch, the source releases its records, and the
    restarted query (same checkpoint) gets them from the broker with delivery count 2; Spark's
    replay of the unfinished batch plans no records of its own."""
    kafka.create("sh-stop", 1)
    share_group(kafka.bootstrap, "sh-stop")
    produce_batches(kafka.bootstrap, "sh-stop", [f"v{i}".encode() for i in range(10)], 0)
    running = threading.Event()

    def hang(df, batch_id, rows):
        if rows:
            running.set()
            df.sparkSession.range(10**12).selectExpr("sum(id)").collect()   # until stopped

    first = Rows(hang)
    query = start(spark, kafka.bootstrap, first, tmp_path / "cp", "sh-stop", "sh-stop")
    try:
        assert running.wait(120), "the first micro-batch never ran"
    finally:
        query.stop()
    assert first.places() == [(0, o) for o in range(10)]
    assert {count for _, _, _, count in first.rows} == {1}

    again = Rows()
    query = start(spark, kafka.bootstrap, again, tmp_path / "cp", "sh-stop", "sh-stop")
    try:
        wait_until(lambda: len(again.rows) >= 10, 120, "the released records", queries=(query,))
        time.sleep(1.0)     # a duplicate would come in the next micro-batches
    finally:
        stop_all(query)
    assert again.places() == [(0, o) for o in range(10)]
    assert {count for _, _, _, count in again.rows} == {2}
    # Spark re-ran the batch it had planned (id 0) without records: they came from the broker
    assert again.calls[0] == (0, [])
    assert leftovers(kafka.bootstrap, "sh-stop", "sh-stop") == []


def test_two_queries_on_one_share_group_split_the_records(spark, kafka, tmp_path):
    kafka.create("sh-split", 2)
    share_group(kafka.bootstrap, "sh-split")
    a, b = Rows(), Rows()
    qa = qb = None
    try:
        qa = start(spark, kafka.bootstrap, a, tmp_path / "a", "sh-split", "sh-split",
                   maxOffsetsPerTrigger=5)
        qb = start(spark, kafka.bootstrap, b, tmp_path / "b", "sh-split", "sh-split",
                   maxOffsetsPerTrigger=5)
        wait_until(lambda: qa.lastProgress is not None and qb.lastProgress is not None, 120,
                   "both queries planning", queries=(qa, qb))
        produced = []
        for round_ in range(20):
            for p in (0, 1):
                values = [f"{round_}-{p}-{i}".encode() for i in range(5)]
                produce_batches(kafka.bootstrap, "sh-split", values, p)
                produced += [(p, 5 * round_ + i) for i in range(5)]
            time.sleep(0.1)
        wait_until(lambda: len(a.rows) + len(b.rows) >= 200, 120, "all 200 records",
                   queries=(qa, qb))
        time.sleep(1.0)     # a duplicate would come in the next micro-batches
    finally:
        stop_all(qa, qb)
    assert sorted(a.places() + b.places()) == sorted(produced)   # every record, none twice
    assert a.rows and b.rows, (len(a.rows), len(b.rows))
    assert {count for _, _, _, count in a.rows + b.rows} == {1}
    assert leftovers(kafka.bootstrap, "sh-split", "sh-split") == []


def test_a_batch_slower_than_the_lock_keeps_its_records(spark, kafka, tmp_path):
    """With a 2 s acquisition lock and a batch that takes 6 s, the source renews the locks:
    another member of the group polling all the while gets none of the batch's records, and
    nothing is delivered twice."""
    kafka.create("sh-slow", 1)
    share_group(kafka.bootstrap, "sh-slow", **{"share.record.lock.duration.ms": str(LOCK_MS)})
    produce_batches(kafka.bootstrap, "sh-slow", [f"v{i}".encode() for i in range(10)], 0)
    running, done = threading.Event(), threading.Event()

    def slow(df, batch_id, rows):
        if rows and not running.is_set():
            running.set()
            time.sleep(3 * LOCK_MS / 1000)
            done.set()

    sink = Rows(slow)
    query = start(spark, kafka.bootstrap, sink, tmp_path / "cp", "sh-slow", "sh-slow")
    try:
        assert running.wait(120), "the first micro-batch never ran"
        meanwhile = leftovers(kafka.bootstrap, "sh-slow", "sh-slow", wait_s=3 * LOCK_MS / 1000)
        assert done.wait(30)
        time.sleep(1.5)     # the next trigger accepts the batch
    finally:
        stop_all(query)
    assert meanwhile == []
    assert sink.places() == [(0, o) for o in range(10)]
    assert {count for _, _, _, count in sink.rows} == {1}
    assert leftovers(kafka.bootstrap, "sh-slow", "sh-slow") == []


# the crashing query: its own SparkSession in a child process, holding its first micro-batch
# (it prints the batch's records, then sleeps) until the test kills the child's process group
CRASHING = textwrap.dedent("""
    import sys, time
    from tests.spark.session import local_session

    bootstrap, topic, group, checkpoint = sys.argv[1:5]
    spark = local_session("roster-share-crash")

    def batch(df, batch_id):
        rows = sorted((r.partition, r.offset, r.deliveryCount) for r in df.collect())
        if rows:
            print("batch", batch_id, rows, flush=True)
            time.sleep(600)

    (spark.readStream.format("roster").option("kafka.bootstrap.servers", bootstrap)
     .option("subscribe", topic).option("shareGroup", group).load()
     .writeStream.foreachBatch(batch).option("checkpointLocation", checkpoint)
     .trigger(processingTime="300 milliseconds").start())
    time.sleep(600)
""")


def test_after_a_crash_the_records_come_back_from_the_broker_not_the_checkpoint(
        spark, kafka, tmp_path):
    """The driver (JVM, Python and the source's runner) is killed -9 while its first batch
    runs: nothing is released on purpose, the broker gives the records back when the dead
    member's connections close (or its locks expire). The query restarted from the same
    checkpoint replays the unfinished batch without records and gets them from the broker,
    delivery count 2."""
    kafka.create("sh-crash", 1)
    share_group(kafka.bootstrap, "sh-crash")
    produce_batches(kafka.bootstrap, "sh-crash", [f"v{i}".encode() for i in range(10)], 0)
    checkpoint = tmp_path / "cp"
    child = subprocess.Popen([sys.executable, "-c", CRASHING, kafka.bootstrap, "sh-crash",
                              "sh-crash", str(checkpoint)], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        line = ""
        deadline = time.monotonic() + 180
        while not line.startswith("batch") and time.monotonic() < deadline:
            line = child.stdout.readline()
            assert line or child.poll() is None, "the crashing query exited"
        assert line.startswith("batch 0 "), line
        assert line.split(" ", 2)[2].strip() == str([(0, o, 1) for o in range(10)])
    finally:
        os.killpg(child.pid, signal.SIGKILL)      # the child's group: its Python and its JVM
        child.wait(30)

    again = Rows()
    query = start(spark, kafka.bootstrap, again, checkpoint, "sh-crash", "sh-crash")
    try:
        wait_until(lambda: len(again.rows) >= 10, 120, "the crashed batch's records",
                   queries=(query,))
        time.sleep(1.0)     # a duplicate would come in the next micro-batches
    finally:
        stop_all(query)
    assert again.calls[0] == (0, [])           # Spark's replay of batch 0: no records
    assert again.places() == [(0, o) for o in range(10)]
    assert {count for _, _, _, count in again.rows} == {2}
    assert leftovers(kafka.bootstrap, "sh-crash", "sh-crash") == []
