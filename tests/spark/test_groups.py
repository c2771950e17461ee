"""Several streaming queries in one consumer group: they split the partitions, hand them over
on a rebalance between micro-batches, and a static query restarts without a rebalance."""
from __future__ import annotations

import threading
import time

import pytest

from roster.protocol.consumer_protocol import decode_assignment
from tests.spark.helpers import Collected, start, wait_until

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def assignments(kafka, group: str) -> dict[str, list[int]]:
    """member (instance id, else member id) -> partitions, from DescribeGroups."""
    described = kafka.describe(group)
    if described is None or described.group_state != "Stable":
        return {}
    return {m.group_instance_id or m.member_id: sorted(
        p for _, parts in decode_assignment(m.member_assignment).partitions for p in parts)
        for m in described.members}


def split_evenly(kafka, group: str, members: int, partitions: int):
    owned = assignments(kafka, group)
    if len(owned) == members and sorted(sum(owned.values(), [])) == list(range(partitions)) \
            and all(len(p) == partitions // members for p in owned.values()):
        return owned
    return None


def stop_all(*queries):
    for query in queries:
        if query is not None and query.isActive:
            query.stop()


def test_two_queries_in_one_group_split_partitions_and_read_every_record_once(
        spark, kafka, tmp_path):
    kafka.create("g-split", 4)
    options = dict(subscribe="g-split", startingOffsets="group", maxOffsetsPerTrigger=6,
                   **{"group.id": "split", "session.timeout.ms": 10_000,
                      "heartbeat.interval.ms": 300})
    a, b = Collected(), Collected()
    qa = qb = None
    try:
        qa = start(spark, kafka.bootstrap, a, tmp_path / "a", **options)
        qb = start(spark, kafka.bootstrap, b, tmp_path / "b", **options)
        wait_until(lambda: split_evenly(kafka, "split", 2, 4), 90, "two members, 2+2 partitions",
                   queries=(qa, qb))
        produced = kafka.produce("g-split", [(f"k{i}".encode(), f"v{i}".encode())
                                             for i in range(40)])
        wait_until(lambda: len(a.rows) + len(b.rows) >= 40, 90, "all 40 records read",
                   queries=(qa, qb))
        assert a.partitions() and b.partitions()
        assert not a.partitions() & b.partitions()            # split, not shared
        assert sorted(a.places() + b.places()) == sorted(produced)   # every record once

        # B leaves (a dynamic member): A takes over B's partitions at B's committed offsets.
        # A query commits a batch when Spark plans the next one, so wait for that first: the
        # last batch before a stop is otherwise re-read by the partitions' next owner.
        ends = {p: max([o + 1 for q, o in produced if q == p] or [0]) for p in range(4)}
        wait_until(lambda: kafka.committed("split", "g-split", 4) == ends, 30,
                   "both queries to commit what they read", queries=(qa, qb))
        qb.stop()
        wait_until(lambda: split_evenly(kafka, "split", 1, 4), 60, "A owning all 4 partitions",
                   queries=(qa,))
        more = kafka.produce("g-split", [(f"k{i}".encode(), b"late") for i in range(40, 60)])
        wait_until(lambda: len(a.rows) + len(b.rows) >= 60, 90, "the 20 later records",
                   queries=(qa,))
        time.sleep(1.0)  # a duplicate would arrive in the next micro-batches
        assert sorted(a.places() + b.places()) == sorted(produced + more)
    finally:
        stop_all(qa, qb)


def test_restarting_a_static_query_causes_no_rebalance_for_the_other(spark, kafka, tmp_path):
    kafka.create("g-static", 4)
    def options(instance):
        return dict(subscribe="g-static", startingOffsets="group",
                    **{"group.id": "static", "group.instance.id": instance,
                       "session.timeout.ms": 30_000, "heartbeat.interval.ms": 300})
    a, b = Collected(), Collected()
    qa = qb = None
    watching = threading.Event()
    seen: list = []

    def watch():  # what DescribeGroups says about B, every 50 ms, while A restarts
        while not watching.is_set():
            described = kafka.describe("static")
            if described is None:
                seen.append(("missing", []))
                continue
            seen.append((described.group_state, [
                (m.member_id, m.member_metadata, m.member_assignment)
                for m in described.members if m.group_instance_id == "b"]))
            time.sleep(0.05)
    try:
        qa = start(spark, kafka.bootstrap, a, tmp_path / "a", **options("a"))
        qb = start(spark, kafka.bootstrap, b, tmp_path / "b", **options("b"))
        before = wait_until(lambda: split_evenly(kafka, "static", 2, 4), 90, "a 2+2 split",
                            queries=(qa, qb))
        first = kafka.produce("g-static", [(f"k{i}".encode(), b"x") for i in range(20)])
        wait_until(lambda: len(a.rows) + len(b.rows) >= 20, 60, "the first 20 records",
                   queries=(qa, qb))
        b_member = [m for m in kafka.describe("static").members if m.group_instance_id == "b"]

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        qa.stop()                                    # SIGTERM to A's runner: no LeaveGroup
        a_batches = len(a.batches)
        qa = start(spark, kafka.bootstrap, a, tmp_path / "a", **options("a"))
        second = kafka.produce("g-static", [(f"k{i}".encode(), b"y") for i in range(20, 40)])
        wait_until(lambda: len(a.rows) + len(b.rows) >= 40, 60,
                   "the second 20 records, A restarted", queries=(qa, qb))
        watching.set()
        watcher.join(5)

        assert assignments(kafka, "static") == before          # same split, same owners
        b_after = [m for m in kafka.describe("static").members if m.group_instance_id == "b"]
        # B never rejoined: same member id, same JoinGroup metadata, same assignment
        assert [(m.member_id, m.member_metadata, m.member_assignment) for m in b_after] == \
            [(m.member_id, m.member_metadata, m.member_assignment) for m in b_member]
        assert seen and all(state == "Stable" for state, _ in seen), \
            sorted({state for state, _ in seen})
        assert all(view == seen[0][1] for _, view in seen)
        assert sorted(a.places() + b.places()) == sorted(first + second), \
            (before, a.by_batch, a.batches, b.by_batch)
        assert len(a.batches) > a_batches                   # the restarted A read too
        assert a.partitions() <= set(before["a"]) and b.partitions() <= set(before["b"])
    finally:
        stop_all(qa, qb)


def test_a_query_joining_mid_stream_takes_over_partitions_without_gaps_or_duplicates(
        spark, kafka, tmp_path):
    """Records keep arriving while a second query joins: the first hands partitions over at
    the end of its micro-batch in flight (committing it), the second starts from there."""
    kafka.create("g-handover", 4)
    options = dict(subscribe="g-handover", startingOffsets="group", maxOffsetsPerTrigger=30,
                   **{"group.id": "handover", "session.timeout.ms": 10_000,
                      "heartbeat.interval.ms": 300})
    produced: list = []
    stop = threading.Event()

    def produce():
        n = 0
        while not stop.is_set():
            produced.extend(kafka.produce("g-handover", [(f"k{n + i}".encode(), b"x")
                                                         for i in range(4)]))
            n += 4
            time.sleep(0.1)
    a, b = Collected(), Collected()
    qa = qb = None
    producer = threading.Thread(target=produce, daemon=True)
    try:
        qa = start(spark, kafka.bootstrap, a, tmp_path / "a", **options)
        producer.start()
        wait_until(lambda: len(a.rows) >= 20, 60, "A reading", queries=(qa,))
        qb = start(spark, kafka.bootstrap, b, tmp_path / "b", **options)
        wait_until(lambda: split_evenly(kafka, "handover", 2, 4), 60, "the 2+2 split",
                   queries=(qa, qb))
        wait_until(lambda: len(b.rows) >= 20, 60, "B reading", queries=(qa, qb))
        stop.set()
        producer.join(10)
        total = len(produced)
        wait_until(lambda: len(a.rows) + len(b.rows) >= total, 60, "everything produced",
                   queries=(qa, qb))
        time.sleep(1.0)  # a duplicate would arrive in the next micro-batches
        assert sorted(a.places() + b.places()) == sorted(produced)     # no gap, no duplicate
        assert b.partitions()
    finally:
        stop.set()
        stop_all(qa, qb)


def test_a_second_query_with_the_same_instance_id_fences_the_first(spark, kafka, tmp_path):
    from pyspark.errors import StreamingQueryException

    kafka.create("g-fence", 2)
    options = dict(subscribe="g-fence", startingOffsets="group",
                   **{"group.id": "fence", "group.instance.id": "same",
                      "session.timeout.ms": 10_000, "heartbeat.interval.ms": 300})
    first, second = Collected(), Collected()
    q1 = q2 = None
    try:
        q1 = start(spark, kafka.bootstrap, first, tmp_path / "1", **options)
        wait_until(lambda: assignments(kafka, "fence"), 60, "the first member")
        q2 = start(spark, kafka.bootstrap, second, tmp_path / "2", **options)
        with pytest.raises(StreamingQueryException, match="(?i)fenced"):
            q1.awaitTermination(60)
        kafka.produce("g-fence", [(None, b"after")] * 4)
        wait_until(lambda: len(second.rows) >= 4, 60, "the second query reading on")
    finally:
        stop_all(q1, q2)
