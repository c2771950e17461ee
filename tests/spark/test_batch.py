"""Batch reads and writes through format("roster")."""
from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def _read(spark, bootstrap, **options):
    reader = spark.read.format("roster").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_batch_read_returns_exactly_the_produced_records(spark, kafka):
    kafka.create("batch-in", 3)
    before = int(time.time() * 1000)
    records = [(f"k{i}".encode(), f"v{i}".encode(), [("h", str(i).encode())]) for i in range(60)]
    placed = kafka.produce("batch-in", records)
    rows = _read(spark, kafka.bootstrap, subscribe="batch-in").collect()

    assert sorted((r.partition, r.offset) for r in rows) == sorted(placed)
    by_place = {(r.partition, r.offset): r for r in rows}
    for (key, value, headers), place in zip(records, placed):
        row = by_place[place]
        assert (row.key, row.value, row.topic) == (key, value, "batch-in")
        assert [(h.key, h.value) for h in row.headers] == headers
        assert row.timestampType == 0
        stamp = row.timestamp.replace(tzinfo=None) if row.timestamp.tzinfo else row.timestamp
        assert abs(stamp.timestamp() * 1000 - before) < 120_000


def test_batch_read_honours_starting_and_ending_offsets(spark, kafka):
    kafka.create("batch-range", 2)
    for p in (0, 1):
        kafka.produce("batch-range", [(None, f"p{p}-{i}".encode()) for i in range(10)], p)
    rows = _read(spark, kafka.bootstrap, subscribePattern="batch-r.*",
                 startingOffsets='{"batch-range": {"0": 3, "1": -2}}',
                 endingOffsets='{"batch-range": {"0": 5, "1": -1}}').collect()
    got = sorted((r.partition, r.offset) for r in rows)
    assert got == [(0, 3), (0, 4)] + [(1, o) for o in range(10)]


def test_batch_read_of_nothing_is_no_rows(spark, kafka):
    """An empty topic, or a range with nothing in it: the reader plans no partition, and pyspark
    then runs one InputPartition(None) task, which must read nothing (it failed with
    AttributeError)."""
    kafka.create("batch-empty", 2)
    assert _read(spark, kafka.bootstrap, subscribe="batch-empty").collect() == []
    kafka.produce("batch-empty", [(None, b"x")], 0)
    assert _read(spark, kafka.bootstrap, subscribe="batch-empty",
                 startingOffsets='{"batch-empty":{"0":1,"1":0}}').collect() == []
