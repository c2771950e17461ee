"""Testing a Spark streaming query that reads through roster.spark: copy this file next to your
job.

The query under test reads a topic as a member of a consumer group (the roster source: its
driver-side reader is the member), counts orders per customer in each micro-batch
(foreachBatch) and commits what it processed to the group. The test checks, in seconds:

- the group's next OffsetCommit is refused (an injected fault, REBALANCE_IN_PROGRESS): the
  query keeps going and a later batch's commit covers the offsets;
- the reader's session expires (a clock jump of 46 s instead of a 45 s wait): the member joins
  again, the query goes on, and every record is counted exactly once (the checkpoint decides
  where each batch starts, not the group);
- in the end the group's committed offset is the end of the topic.

Needs `pip install roster[spark] pytest-asyncio` and a Java runtime for Spark; fixtures from
roster's pytest plugin (docs/testing.md). The SparkSession is made once per module (it takes
seconds); `spark.sql.streaming.noDataMicroBatches.enabled=false` keeps idle triggers cheap.
"""
from __future__ import annotations

import os
import sys
import threading
import time

import pytest

SESSION_TIMEOUT_MS = 45_000


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    import roster.spark
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    running = SparkSession.getActiveSession()   # another suite's: use it, leave it running
    session = running or (SparkSession.builder.master("local[2]").appName("roster-example")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    roster.spark.register(session)
    yield session
    if running is None:
        session.stop()


class OrderCounts:
    """The job's sink: orders per customer, summed over the micro-batches it was given."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.offsets: list[int] = []
        self._guard = threading.Lock()

    def batch(self, frame, batch_id: int) -> None:
        rows = frame.selectExpr("CAST(key AS STRING) AS customer", "offset").collect()
        with self._guard:
            for row in rows:
                self.counts[row.customer] = self.counts.get(row.customer, 0) + 1
                self.offsets.append(row.offset)

    def total(self) -> int:
        with self._guard:
            return len(self.offsets)


def start_query(spark, bootstrap, topic: str, group_id: str, checkpoint, sink: OrderCounts):
    orders = (spark.readStream.format("roster")
              .option("kafka.bootstrap.servers", str(bootstrap))
              .option("subscribe", topic)
              .option("group.id", group_id)
              .option("session.timeout.ms", SESSION_TIMEOUT_MS)
              .option("heartbeat.interval.ms", 500)
              .option("startingOffsets", "earliest")
              .load())
    return (orders.writeStream.foreachBatch(sink.batch)
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="500 milliseconds")
            .start())


def produce(bootstrap, topic: str, customers: list[str]) -> None:
    from confluent_kafka import Producer
    producer = Producer(bootstrap.confluent)
    for customer in customers:
        producer.produce(topic, b"order", key=customer.encode())
    assert producer.flush(30) == 0


def wait_until(condition, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def roster_broker_line_says(line: str, group_id: str, text: str) -> bool:
    """Whether a line of the broker's log (roster_broker.log) speaks of the group so."""
    return f"group {group_id}" in line and text in line


def committed(roster_broker, group_id: str, topic: str) -> int | None:
    fetched = roster_broker.call(roster_broker.broker.groups.fetch_offsets, group_id,
                                 [(topic, 0)])
    return fetched[0].offset


def test_the_query_counts_every_order_once_through_a_refused_commit_and_an_expired_session(
        spark, roster_broker, roster_bootstrap, roster_topic, roster_group_id, tmp_path):
    sink = OrderCounts()
    produce(roster_bootstrap, roster_topic, ["ada", "bob", "ada", "cy", "bob"])
    roster_broker.faults.fail_next_commit(roster_group_id, error="REBALANCE_IN_PROGRESS")
    query = start_query(spark, roster_bootstrap, roster_topic, roster_group_id,
                        tmp_path / "checkpoint", sink)
    try:
        wait_until(lambda: sink.total() == 5, "the first five orders")
        produce(roster_bootstrap, roster_topic, ["cy", "ada"])
        wait_until(lambda: committed(roster_broker, roster_group_id, roster_topic) == 7,
                   "a later commit covering the refused one's offsets")

        mark = roster_broker.log.mark()
        roster_broker.clock.advance(SESSION_TIMEOUT_MS / 1000 + 1)   # the reader's session
        said = lambda text: any(roster_broker_line_says(line, roster_group_id, text)  # noqa
                                for line in roster_broker.log.since(mark))
        assert said("its session timed out")        # the broker expired the member at once
        wait_until(lambda: said("is Stable in generation"), "the reader joined again")
        produce(roster_bootstrap, roster_topic, ["bob", "dee", "ada"])
        wait_until(lambda: sink.total() == 10, f"all ten orders (got {sink.offsets})")
        wait_until(lambda: committed(roster_broker, roster_group_id, roster_topic) == 10,
                   "the offsets committed again after the member rejoined")
        assert query.exception() is None
    finally:
        query.stop()
    assert sorted(sink.offsets) == list(range(10))            # each once
    assert sink.counts == {"ada": 4, "bob": 3, "cy": 2, "dee": 1}
