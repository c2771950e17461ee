"""Streaming reads: the reader is a member of the consumer group and commits what it read."""
from __future__ import annotations

import pytest

from tests.spark.helpers import Collected, run_available_now, start, wait_until

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_committed_group_offsets_equal_what_the_query_processed(spark, kafka, tmp_path):
    kafka.create("s-commit", 2)
    placed = kafka.produce("s-commit", [(f"k{i}".encode(), f"v{i}".encode()) for i in range(30)])
    sink = run_available_now(spark, kafka.bootstrap, tmp_path / "cp", subscribe="s-commit",
                             startingOffsets="earliest", maxOffsetsPerTrigger=10,
                             **{"group.id": "g-commit"})
    assert sink.places() == sorted(placed)
    assert len(sink.batches) == 3                    # 30 records, at most 10 per batch
    ends = {p: max(o for q, o in placed if q == p) + 1 for p in (0, 1)}
    assert kafka.committed("g-commit", "s-commit", 2) == ends


def test_restart_from_checkpoint_resumes_exactly(spark, kafka, tmp_path):
    kafka.create("s-restart", 2)
    first = kafka.produce("s-restart", [(None, f"a{i}".encode()) for i in range(20)])
    options = dict(subscribe="s-restart", startingOffsets="earliest", maxOffsetsPerTrigger=7,
                   **{"group.id": "g-restart"})
    run1 = run_available_now(spark, kafka.bootstrap, tmp_path / "cp", **options)
    assert run1.places() == sorted(first)
    second = kafka.produce("s-restart", [(None, f"b{i}".encode()) for i in range(15)])
    run2 = run_available_now(spark, kafka.bootstrap, tmp_path / "cp", **options)
    assert run2.places() == sorted(second)
    assert kafka.committed("g-restart", "s-restart", 2) == {
        p: max(o for q, o in first + second if q == p) + 1 for p in (0, 1)}


def test_starting_offsets_group_resumes_from_committed_offsets(spark, kafka, tmp_path):
    kafka.create("s-group", 2)
    for p in (0, 1):
        kafka.produce("s-group", [(None, f"{p}-{i}".encode()) for i in range(10)], p)
    # the group has an offset for partition 0 only: partition 1 falls back to earliest
    from roster.spark.wire import run_sync

    async def commit(broker):
        await broker.commit("g-group", {("s-group", 0): (4, "")})
    run_sync(commit, bootstrap=kafka.bootstrap)

    sink = run_available_now(spark, kafka.bootstrap, tmp_path / "cp1", subscribe="s-group",
                             startingOffsets="group", **{"group.id": "g-group"})
    assert sink.places() == [(0, o) for o in range(4, 10)] + [(1, o) for o in range(10)]
    assert kafka.committed("g-group", "s-group", 2) == {0: 10, 1: 10}

    for p in (0, 1):
        kafka.produce("s-group", [(None, b"more")] * 3, p)
    # a new query (fresh checkpoint) in the same group picks up where the group is
    sink = run_available_now(spark, kafka.bootstrap, tmp_path / "cp2", subscribe="s-group",
                             startingOffsets="group", **{"group.id": "g-group"})
    assert sink.places() == [(p, o) for p in (0, 1) for o in range(10, 13)]


def test_subscribe_pattern_picks_up_a_topic_created_while_running(spark, kafka, tmp_path):
    kafka.create("pat-one", 1)
    first = kafka.produce("pat-one", [(None, b"1")] * 5)
    sink = Collected()
    query = start(spark, kafka.bootstrap, sink, tmp_path / "cp", subscribePattern="pat-.*",
                  startingOffsets="earliest", **{"group.id": "g-pattern",
                                                 "metadata.max.age.ms": 300})
    try:
        wait_until(lambda: len(sink.rows) >= 5, 60, "the first topic's records")
        kafka.create("pat-two", 2)
        second = kafka.produce("pat-two", [(f"k{i}".encode(), b"2") for i in range(8)])
        wait_until(lambda: len(sink.rows) >= 13, 60, "the new topic's records")
        assert sorted((t, p, o) for t, p, o, _ in sink.rows) == sorted(
            [("pat-one", p, o) for p, o in first] + [("pat-two", p, o) for p, o in second])
    finally:
        query.stop()


def test_a_subscribed_topic_created_after_the_query_started_is_read(spark, kafka, tmp_path):
    sink = Collected()
    query = start(spark, kafka.bootstrap, sink, tmp_path / "cp", subscribe="late-topic",
                  startingOffsets="earliest", **{"group.id": "g-late",
                                                 "metadata.max.age.ms": 300})
    try:
        wait_until(lambda: query.lastProgress is not None, 60, "the first trigger")
        kafka.create("late-topic", 2)
        placed = kafka.produce("late-topic", [(f"k{i}".encode(), b"v") for i in range(10)])
        wait_until(lambda: len(sink.rows) >= 10, 60, "the late topic's records")
        assert sorted((p, o) for _, p, o, _ in sink.rows) == sorted(placed)
    finally:
        query.stop()
