"""roster.spark on a three-node Kafka cluster (tests/support/kafka_cluster.py): a batch read; a
static streaming member while the node that coordinates its group, then a node leading a
partition it reads, is killed -9 (the member finds the new coordinator and the new leaders,
every record is read once, and the static member keeps its member id and its partitions); and
the exactly-once sink while a destination leader or its transaction coordinator is killed -9
(every record committed once)."""
from __future__ import annotations

import asyncio

import pytest

from roster.admin.client import AdminClient
from roster.admin.groups import describe
from roster.client.producer import Producer
from tests.spark.helpers import Collected, start, stream, wait_until
from tests.support.kafka_peer import unique_name

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("kafka_cluster")]


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> list[tuple[int, int]]:
    async def go():
        producer = Producer(bootstrap)
        try:
            return [await producer.send(topic, v) for v in values]
        finally:
            await producer.close()
    return asyncio.run(go())


def _activate(spark) -> None:
    """Make `spark` the active session of the JVM thread that serves this Python thread.
    Spark looks a Python data source's stream writer up in that thread-local active session
    only (not the default session), and the JVM thread behind pytest's main thread is not
    the one the session was created on by the time these tests run (py4j gave it a new
    connection: Thread-12, later Thread-68, with no active session), so
    writeStream.format("roster").start() failed with DATA_SOURCE_NOT_FOUND. Batch reads and
    the source resolve the session otherwise and never needed this."""
    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


def _member(bootstrap: str, group: str):
    """(member id, assignment bytes) of the group's one member, or None."""
    with AdminClient(bootstrap) as admin:
        found = describe(admin, group)
    return [(m.member_id, m.group_instance_id, m.member_assignment) for m in found.members]


def test_batch_read_on_the_cluster(spark, kafka_cluster):
    """A batch read, then another with the leader of partition 0 killed -9 just before it:
    the reader finds the partition's new leader (once the controller has fenced the dead
    node) and reads exactly the produced records again."""
    cluster = kafka_cluster
    cluster.heal()
    topic = unique_name("spark-batch")
    cluster.create_topic(topic, partitions=3)
    placed = _produce(cluster.bootstrap, topic, [f"v{i}".encode() for i in range(30)])

    def read() -> list[tuple[int, int]]:
        rows = spark.read.format("roster").option("kafka.bootstrap.servers", cluster.bootstrap) \
            .option("subscribe", topic).load().collect()
        return sorted((r.partition, r.offset) for r in rows)

    assert read() == sorted(placed)
    victim = cluster.leader_of(topic, 0)
    cluster.kill9(victim)
    try:
        assert read() == sorted(placed)
        assert cluster.leader_of(topic, 0) != victim
    finally:
        cluster.restart(victim)


def test_static_streaming_member_rides_out_its_coordinator_and_a_leader_dying(
        spark, kafka_cluster, tmp_path):
    """kill -9 of the group's coordinator, then (after it is back) of a node leading a source
    partition, one not coordinating the group unless the coordinator leads all three: after
    each, the records written since are read."""
    cluster = kafka_cluster
    cluster.heal()
    source, group = unique_name("spark-in"), unique_name("sg")
    cluster.create_topic(source, partitions=3)
    written = _produce(cluster.bootstrap, source, [f"a{i}".encode() for i in range(30)])
    sink = Collected()
    query = start(spark, cluster.bootstrap, sink, tmp_path / "cp", subscribe=source,
                  startingOffsets="group",
                  **{"group.id": group, "group.instance.id": "spark-1",
                     "session.timeout.ms": 30_000, "heartbeat.interval.ms": 500})

    def ride_out(victim: int, round_name: str) -> None:
        cluster.kill9(victim)
        written.extend(_produce(cluster.bootstrap, source,
                                [f"{round_name}{i}".encode() for i in range(30)]))
        wait_until(lambda: len(sink.rows) >= len(written), 120,
                   f"the records written after the kill of node {victim}", queries=(query,))

    try:
        wait_until(lambda: len(sink.rows) >= len(written), 120, "the first records",
                   queries=(query,))
        before = _member(cluster.bootstrap, group)
        assert [instance for _, instance, _ in before] == ["spark-1"]
        coordinator = cluster.coordinator_of(group)
        ride_out(coordinator, "b")
        assert cluster.coordinator_of(group) != coordinator
        cluster.restart(coordinator)
        now_coordinating = cluster.coordinator_of(group)
        leaders = {cluster.leader_of(source, p) for p in range(3)}
        leader = sorted(leaders - {now_coordinating} or leaders)[0]
        ride_out(leader, "c")
        assert leader not in {cluster.leader_of(source, p) for p in range(3)}
        cluster.restart(leader)
        assert sink.places() == sorted(written)             # each once, nothing lost
        assert _member(cluster.bootstrap, group) == before  # no rebalance: same member
    finally:
        query.stop()


@pytest.mark.parametrize("victim", ["destination leader", "transaction coordinator"])
def test_exactly_once_sink_on_the_cluster_through_a_node_dying(spark, kafka_cluster, tmp_path,
                                                               victim):
    """writeStream.format("roster") from the cluster into the cluster: each task's records and
    its marker go in one transaction, so a read_committed reader sees every record once, with
    a node killed -9 between two rounds of input: the leader of a destination partition, or
    the transaction coordinator of task 0's transactional.id (`roster-sink-<sink.id>-0`, so
    the sink.id is fixed here). The task's producer finds the new coordinator; a transaction
    the kill spoiled would be aborted, and the task retried under the same transactional.id
    reads in its marker what is already written.

    The session is made active on this thread's JVM side first (_activate)."""
    from collections import Counter

    from roster.spark.sink import transactional_id
    from tests.support.read_to_end import values_to_end
    cluster = kafka_cluster
    _activate(spark)
    cluster.heal()
    source, dest = unique_name("spark-eos-in"), unique_name("spark-eos-out")
    sink_id = unique_name("eos-sink")
    cluster.create_topic(source, partitions=2)
    cluster.create_topic(dest, partitions=2)
    first = [f"a{i}".encode() for i in range(20)]
    second = [f"b{i}".encode() for i in range(20)]
    _produce(cluster.bootstrap, source, first)
    query = (stream(spark, cluster.bootstrap, subscribe=source, startingOffsets="earliest",
                    maxOffsetsPerTrigger=10)
             .select("key", "value").writeStream.format("roster")
             .option("kafka.bootstrap.servers", cluster.bootstrap).option("topic", dest)
             .option("sink.id", sink_id).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="300 milliseconds").start())
    try:
        def committed() -> Counter:
            return Counter(values_to_end(cluster.bootstrap, dest, "read_committed", 2,
                                         group_id=unique_name("eos-check")))

        wait_until(lambda: sum(committed().values()) >= len(first), 120,
                   "the first round in the destination", queries=(query,))
        if victim == "destination leader":
            node = cluster.leader_of(dest, 0)
        else:
            node = cluster.transaction_coordinator_of(transactional_id(sink_id, 0))
        cluster.kill9(node)
        _produce(cluster.bootstrap, source, second)
        wait_until(lambda: sum(committed().values()) >= len(first) + len(second), 180,
                   "the second round, after the kill", queries=(query,))
        if victim == "transaction coordinator":
            assert cluster.transaction_coordinator_of(transactional_id(sink_id, 0)) != node
        assert committed() == Counter(first + second)   # every record once, nothing lost
        cluster.restart(node)
    finally:
        query.stop()
