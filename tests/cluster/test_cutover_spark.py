"""The Spark streaming job's part of the cut-over (docs/moving-to-kafka.md): a roster.spark
query, a static member of its group committing what each micro-batch processed, reads from
roster while a producer writes; MirrorMaker 2 copies the records and the group's offsets into
the three-node cluster; the query is stopped, started again against the cluster with a fresh
checkpoint and `startingOffsets=group` (the same group.id and group.instance.id), then the
producer moves. Asserted:
- no acknowledged record is lost, and nothing is read twice on one side;
- every record read twice lies in the hand-over window (from where the cluster query resumed
  to where roster's stopped), and the cluster query resumed no earlier than where MirrorMaker
  had put the group and never past where roster's stopped;
- once MirrorMaker had translated the final commit (the test first waits until it translates
  the live group that closely, then gives the final commit 10 s), the window is at most
  offset.lag.max per partition (MirrorMaker's share) plus what the sink saw of the batches
  Spark had not yet committed to the group (roster.spark commits a batch when it plans the
  next, docs/spark.md: from the start of the last batch Spark completed, by its own progress
  report); when the final commit was not translated that closely, the window is printed;
- the query is the group's one static member on either side, with its group.instance.id.
The window and the time the move took are printed.

It shares the worker's SparkSession with tests/spark/test_on_kafka_cluster.py (both are in the
xdist group "kafka_cluster", which stays on one worker) and the three-node cluster with the
rest of tests/cluster; what is its own is MirrorMaker's JVM, started while the query starts."""
from __future__ import annotations

import concurrent.futures
import json
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from roster.admin.client import AdminClient as RosterAdmin
from roster.admin.groups import describe
from tests.support.kafka_peer import unique_name
from tests.support.live_pipeline import PacedProducer
from tests.support.mirror_maker import MirrorMaker, committed_offsets

pytestmark = pytest.mark.xdist_group("kafka_cluster")

PARTITIONS = 2
RATE = 4        # records per second: 2 a partition, so offset.lag.max is 5 s of a partition
LAG_MAX = 10    # offset.lag.max
WAIT_S = 180.0  # generous: every wait ends on an event, this is only the give-up point


@pytest.fixture(scope="session")
def spark():
    """The worker's one SparkSession: local_session() is getOrCreate with the same settings as
    tests/spark's fixture, so whichever of the two starts first, both get the same session
    (stopping it twice at the end is harmless)."""
    from tests.spark.session import local_session
    session = local_session("roster-spark-tests")
    yield session
    session.stop()


@pytest.fixture
def source(broker_factory):
    # the query's static member forms the group alone: no initial rebalance delay to sit out
    return broker_factory({"group.initial.rebalance.delay.ms": "0"})


def static_members(bootstrap: str, group: str) -> list[str | None]:
    with RosterAdmin(bootstrap) as admin:
        return [m.group_instance_id for m in describe(admin, group).members]


def batch_start(progress: dict, topic: str) -> dict[int, int]:
    """Where the batch of a progress report began, per partition (the source's offsets as
    roster.spark writes them: {topic: {partition: offset}})."""
    offsets = progress["sources"][0]["startOffset"]
    if isinstance(offsets, str):
        offsets = json.loads(offsets)
    return {int(p): int(o) for p, o in (offsets or {}).get(topic, {}).items()}


def test_spark_streaming_job_moves_to_the_cluster(cluster, source, spark, tmp_path, capsys):
    from tests.spark.helpers import Collected, start, wait_until

    topic, group = unique_name("cut-spark"), unique_name("cut-spark-g")
    instance = f"{group}-spark"
    admin = AdminClient({"bootstrap.servers": source.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result(timeout=30)
    options = {"subscribe": topic, "group.id": group, "group.instance.id": instance,
               "session.timeout.ms": "60000"}
    begun = time.monotonic()
    phases: list[str] = []     # where the time went, printed with the result

    def phase(what: str) -> None:
        phases.append(f"{what} {time.monotonic() - begun:.1f}s")
    producer = PacedProducer(source.bootstrap, topic, PARTITIONS, RATE).start()
    on_roster, on_cluster = Collected(), Collected()
    mirror = MirrorMaker(source.bootstrap, cluster.bootstrap, [topic], groups=group,
                         offset_lag_max=LAG_MAX, source_alias=unique_name("roster"))
    # MirrorMaker's JVM starts while Spark starts the query: it copies the topic at once and
    # takes up the group when its next group refresh (every second) finds it
    pool = concurrent.futures.ThreadPoolExecutor(1)
    starting = pool.submit(mirror.start)
    query = second = None
    try:
        query = start(spark, source.bootstrap, on_roster, tmp_path / "cp-roster",
                      name="on-roster", startingOffsets="earliest", **options)
        wait_until(lambda: all(o >= 0 for o in committed_offsets(
            source.bootstrap, group, topic, PARTITIONS).values()), WAIT_S,
            "the query commits on roster", poll_s=0.5, queries=[query])
        phase("committing on roster")
        assert static_members(source.bootstrap, group) == [instance]
        starting.result(timeout=WAIT_S)
        phase("MirrorMaker started")
        # MirrorMaker translating the live group closely before the query stops: stopped 2 s
        # after MirrorMaker's first sync of the group, one loaded run's final commit was
        # still translated 71 records short when the test's 10 s for it ran out; once its
        # translation keeps up with the live group, the final commit's is a checkpoint round
        # or two away
        live = committed_offsets(source.bootstrap, group, topic, PARTITIONS)
        mirror.wait_group_synced(group, topic, PARTITIONS, timeout_s=WAIT_S,
                                 at_least={p: o - LAG_MAX for p, o in live.items()})
        phase("group synced")
        stopping = time.monotonic()
        query.stop()
        completed = batch_start(query.lastProgress, topic)
        translated, close_enough = mirror.await_final_translation(
            group, topic, PARTITIONS, set(range(PARTITIONS)), LAG_MAX)
        phase("stopped, final commit translated")
        query = start(spark, cluster.bootstrap, on_cluster, tmp_path / "cp-cluster",
                      name="on-cluster", startingOffsets="group", **options)
        wait_until(lambda: on_cluster.rows, WAIT_S, "the query reads on the cluster",
                   queries=[query])
        phase("reading on the cluster")
        assert static_members(cluster.bootstrap, group) == [instance]
        next_id = producer.stop()
        mirror.wait_mirrored(topic, PARTITIONS, timeout_s=WAIT_S)
        second = PacedProducer(cluster.bootstrap, topic, PARTITIONS, RATE, next_id).start()
        wait_until(lambda: any(int(v) >= next_id for *_, v in on_cluster.rows), WAIT_S,
                   "the query reads what the producer writes on the cluster", queries=[query])
        took = time.monotonic() - stopping
        phase("producer moved")
        last_id = second.stop()
        acked = producer.acked | second.acked
        assert len(acked) == last_id and not producer.failed and not second.failed
        wait_until(lambda: acked <= {int(v) for *_, v in on_roster.rows + on_cluster.rows},
                   WAIT_S, "every acknowledged record read", queries=[query])
        assert static_members(cluster.bootstrap, group) == [instance]
    finally:
        if query is not None and query.isActive:
            query.stop()
        producer.stop()
        if second is not None:
            second.stop()
        pool.shutdown(wait=False)
        mirror.stop()
    whole = time.monotonic() - begun

    roster_reads = {(p, o): int(v) for _, p, o, v in on_roster.rows}
    cluster_reads = {(p, o): int(v) for _, p, o, v in on_cluster.rows}
    # nothing read twice on one side (the sinks are keyed by batch, replays replace)
    assert len(roster_reads) == len(on_roster.rows)
    assert len(cluster_reads) == len(on_cluster.rows)
    stopped = {p: max(o for q, o in roster_reads if q == p) + 1 for p in range(PARTITIONS)}
    resumed = {p: min(o for q, o in cluster_reads if q == p) for p in range(PARTITIONS)}
    twice = set(roster_reads.values()) & set(cluster_reads.values())
    window = {p: stopped[p] - resumed[p] for p in range(PARTITIONS)}
    assert all(translated[p] <= resumed[p] <= stopped[p] for p in range(PARTITIONS)), \
        (translated, resumed, stopped)
    assert len(twice) == sum(window.values())
    # what the sink may have seen that Spark had not committed to the group when it stopped:
    # the rows from the start of the last batch it completed (that batch's commit rides on
    # the next plan) to where it stopped
    replayable = {p: stopped[p] - completed.get(p, stopped[p]) for p in range(PARTITIONS)}
    if close_enough:
        assert all(window[p] <= LAG_MAX + replayable[p] for p in range(PARTITIONS)), \
            (window, replayable)
    with capsys.disabled():
        print(f"\nSpark streaming job moved ({RATE} records/s, offset.lag.max={LAG_MAX}): "
              f"{took:.1f}s from stopping it on roster to reading the cluster producer's "
              f"records, {whole:.1f}s in all; {len(acked)} acked, none lost; re-read per "
              f"partition {[window[p] for p in range(PARTITIONS)]} (allowed offset.lag.max plus "
              f"the rows from the start of Spark's last completed batch: "
              f"{[replayable[p] for p in range(PARTITIONS)]}); final commit translated to "
              f"within offset.lag.max: {close_enough}; at "
              f"{', '.join(phases)}")
