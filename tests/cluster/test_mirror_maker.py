"""MirrorMaker 2 from roster into the three-node Kafka cluster (docs/moving-to-kafka.md): the
records arrive under the same names and offsets, and group offsets are translated as
MirrorMaker's OffsetSyncStore allows -- never past what the group committed on roster, and
re-reading some records. The re-read is measured by a real consumer of the group on the
cluster and printed. Both places for the offset-syncs topic: on the cluster, and on roster
(MirrorMaker's default), where roster serves MirrorMaker's compacted one-partition topic."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests.support.kafka_peer import unique_name
from tests.support.mirror_maker import MirrorMaker, committed_offsets

pytestmark = pytest.mark.xdist_group("kafka_cluster")

PARTITIONS = 3
PER_PARTITION = 300
LAG_MAX = 100   # MirrorMaker's default offset.lag.max


def fill_roster(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for n in range(PER_PARTITION):
        for p in range(PARTITIONS):
            producer.produce(topic, f"{p}:{n}".encode(), partition=p)
    assert producer.flush(30) == 0


def commit_on_roster(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """A real member of `group` reads up to `offsets` on roster and commits them, then leaves
    (MirrorMaker writes offsets only into groups that are empty on the target)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in offsets])
        done: set[int] = set()
        deadline = time.monotonic() + 60
        while len(done) < len(offsets) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            if message.offset() + 1 >= offsets[message.partition()]:
                done.add(message.partition())
        assert len(done) == len(offsets)
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                        asynchronous=False)
    finally:
        consumer.close()


def first_offsets_read(bootstrap: str, group: str, topic: str) -> dict[int, tuple[int, bytes]]:
    """The first record a member of `group` reads on the cluster from each partition: where
    the group resumes, as a consumer moving there sees it."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "latest"})
    first: dict[int, tuple[int, bytes]] = {}
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(first) < PARTITIONS and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            first.setdefault(message.partition(), (message.offset(), message.value()))
    finally:
        consumer.close()
    return first


def run_move(cluster, roster, offset_syncs_on: str, capsys):
    topic = unique_name("mm2-clicks")
    caught_up, behind = unique_name("mm2-caught-up"), unique_name("mm2-behind")
    fill_roster(roster.bootstrap, topic)
    end = {p: PER_PARTITION for p in range(PARTITIONS)}
    commit_on_roster(roster.bootstrap, caught_up, topic, end)
    behind_at = {0: 50, 1: 150, 2: 250}
    commit_on_roster(roster.bootstrap, behind, topic, behind_at)

    # a source alias of its own: MirrorMaker's Connect state on the shared cluster
    # (mm2-configs.<alias>.internal, ...) starts fresh for this move
    mirror = MirrorMaker(roster.bootstrap, cluster.bootstrap, [topic],
                         groups=f"{caught_up}|{behind}", offset_syncs_on=offset_syncs_on,
                         offset_lag_max=LAG_MAX, source_alias=unique_name("roster"))
    try:
        mirror.start()
        assert mirror.wait_mirrored(topic, PARTITIONS) == end
        # a group that stopped at the end of a log that is no longer written resumes exactly
        # there once MirrorMaker's task commit has promoted each partition's last offset sync
        # (offset.flush.interval.ms, 1 s here): nothing is read again
        started = time.monotonic()
        mirror.wait_group_synced(caught_up, topic, PARTITIONS, at_least=end)
        exact_after_s = time.monotonic() - started
        mirror.wait_group_synced(behind, topic, PARTITIONS)
    finally:
        mirror.stop()
    # MirrorMaker is stopped: what the cluster holds now is where the moved groups resume
    settled = {group: committed_offsets(cluster.bootstrap, group, topic, PARTITIONS)
               for group in (caught_up, behind)}
    upstream = {caught_up: end, behind: behind_at}
    # producing on the cluster now: the moved consumers read these, after any re-read
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for p in range(PARTITIONS):
        producer.produce(topic, f"{p}:new".encode(), partition=p)
    assert producer.flush(30) == 0

    report = []
    for group, translated in settled.items():
        first = first_offsets_read(cluster.bootstrap, group, topic)
        for p in range(PARTITIONS):
            committed = upstream[group][p]
            # never past the roster commit (that would skip records), and the group resumes
            # exactly at the translated offset, on the same record roster holds there
            assert 0 <= translated[p] <= committed, (group, p, translated[p], committed)
            offset, value = first[p]
            assert offset == translated[p], (group, p, first[p], translated[p])
            expected = f"{p}:{offset}" if offset < PER_PARTITION else f"{p}:new"
            assert value.decode() == expected
            report.append((group, p, committed, translated[p], committed - translated[p]))
        if group == caught_up:
            assert translated == end
    with capsys.disabled():
        print(f"\nMirrorMaker 2 (offset-syncs on {offset_syncs_on}, offset.lag.max={LAG_MAX}): "
              f"re-read after the move, per partition (the caught-up group exact "
              f"{exact_after_s:.1f}s after the mirror caught up)")
        for group, p, committed, translated, reread in report:
            kind = "caught up" if group == caught_up else "behind"
            print(f"  {kind:9} p{p}: roster committed {committed}, cluster resumes at "
                  f"{translated}: {reread} records read again")
    return topic, report


def test_mirror_maker_with_offset_syncs_on_the_cluster(cluster, broker, capsys):
    run_move(cluster, broker, "target", capsys)


def test_mirror_maker_with_offset_syncs_on_roster(cluster, broker, capsys):
    """MirrorMaker's default: it creates mm2-offset-syncs.<target>.internal on the source with
    cleanup.policy=compact and one partition, writes its syncs there and reads them back."""
    run_move(cluster, broker, "source", capsys)
    syncs_topic = "mm2-offset-syncs.kafka.internal"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    metadata = admin.list_topics(syncs_topic, timeout=10).topics[syncs_topic]
    assert metadata.error is None and len(metadata.partitions) == 1
    resource = ConfigResource(ConfigResource.Type.TOPIC, syncs_topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=10)
    assert configs["cleanup.policy"].value == "compact"
    # every sync MirrorMaker wrote reads back from roster (the cluster holds none)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_name("read"),
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(syncs_topic, 0, 0)])
        syncs = []
        deadline = time.monotonic() + 30
        low, high = consumer.get_watermark_offsets(TopicPartition(syncs_topic, 0), timeout=10)
        assert high > 0
        while len(syncs) < high - low and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and not message.error():
                syncs.append(message)
        assert len(syncs) == high - low
    finally:
        consumer.close()
    cluster_topics = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(
        timeout=10).topics
    assert syncs_topic not in cluster_topics
