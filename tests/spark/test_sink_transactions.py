"""Spark and transactions. The roster sink writes each task's records and its marker in one
transaction: a task killed (SIGKILL) after its records were acknowledged and before its commit
leaves them aborted, and the replay writes them once. A read_committed reader sees every input
record exactly once; a read_uncommitted one also sees the killed attempt's records, which proves
they were written. The source reads read_committed by default (kafka.isolation.level)."""
from __future__ import annotations

import asyncio
import sys
from collections import Counter

import pytest
from pyspark.sql.utils import StreamingQueryException

from roster.client.transactional_producer import TransactionalProducer
from roster.spark.options import write_settings
from roster.spark.sink import RosterStreamWriter
from roster.spark.source import RosterDataSource
from tests.spark.helpers import stream, wait_until
from tests.support.read_to_end import values_to_end

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


class KilledSource(RosterDataSource):
    @classmethod
    def name(cls):
        return "roster_killed"

    def streamWriter(self, schema, overwrite):
        writer = RosterStreamWriter(write_settings(self.options), schema)
        writer.fail_points = self.options["failpoints"]
        return writer


def test_a_task_killed_between_produce_and_commit_writes_nothing_twice(spark, kafka, tmp_path):
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(KilledSource)
    kafka.create("eos-src", 2)
    kafka.create("eos-dst", 2)
    kafka.produce("eos-src", [(f"k{i}".encode(), f"v{i}".encode(), []) for i in range(30)])
    points = tmp_path / "failpoints"
    points.write_text("before-commit\n")

    def run():
        query = (stream(spark, kafka.bootstrap, subscribe="eos-src", startingOffsets="earliest",
                        maxOffsetsPerTrigger=10, **{"group.id": "eos-src-reader"})
                 .select("key", "value").writeStream.format("roster_killed")
                 .option("kafka.bootstrap.servers", kafka.bootstrap).option("topic", "eos-dst")
                 .option("failpoints", str(points))
                 .option("checkpointLocation", str(tmp_path / "cp"))
                 .trigger(availableNow=True).start())
        try:
            return query.awaitTermination(120)
        finally:
            if query.isActive:
                query.stop()

    with pytest.raises(StreamingQueryException):
        run()                              # a task died after its records were acknowledged
    assert points.read_text().split() == []
    assert run()                           # from the checkpoint: the batch is replayed

    committed = values_to_end(kafka.bootstrap, "eos-dst", "read_committed", 2)
    assert Counter(committed) == Counter(f"v{i}".encode() for i in range(30))
    everything = values_to_end(kafka.bootstrap, "eos-dst", "read_uncommitted", 2)
    written_twice = [v for v, n in Counter(everything).items() if n > 1]
    assert written_twice, "the killed attempt wrote nothing: the test did not test the window"


def test_the_source_reads_read_committed_unless_told_otherwise(spark, kafka):
    kafka.create("eos-read", 1)

    async def transactions():
        producer = TransactionalProducer(kafka.bootstrap, "eos-read-tx")
        await producer.init_transactions()
        for value, commit in ((b"committed", True), (b"aborted", False), (b"open", None)):
            producer.begin_transaction()
            await producer.send("eos-read", value)
            if commit is not None:
                await (producer.commit_transaction() if commit else
                       producer.abort_transaction())
        return producer                 # its last transaction stays open

    loop = asyncio.new_event_loop()
    producer = loop.run_until_complete(transactions())
    try:
        def read(**options):
            reader = spark.read.format("roster").option("kafka.bootstrap.servers",
                                                        kafka.bootstrap)
            for name, value in options.items():
                reader = reader.option(name, value)
            return [r.value for r in reader.option("subscribe", "eos-read").load().collect()]

        # up to the open transaction's first offset, without the aborted record
        assert read() == [b"committed"]
        assert read(**{"kafka.isolation.level": "read_uncommitted"}) == \
            [b"committed", b"aborted", b"open"]
        loop.run_until_complete(producer.commit_transaction())
        # the commit marker is written once EndTxn is answered: then the LSO moves past it
        wait_until(lambda: read() == [b"committed", b"open"], 30, "the commit to be read")
    finally:
        loop.run_until_complete(producer.close())
        loop.close()
