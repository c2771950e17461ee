"""Topic configs that change what a produce does, with confluent-kafka against one shared roster
broker: LogAppendTime stamping seen by a consumer and in the produce answer, broker-side
recompression (the codec on disk, the values a consumer reads), keys required on compacted
topics, the timestamp bounds, max.message.bytes, and min.insync.replicas as Kafka 4 applies it
(capped at the replication factor, so acks=all succeeds on one broker)."""
from __future__ import annotations

import itertools
import time

import pytest

from roster.log.batch import iter_batches
from tests.support.process import BrokerProcess

pytestmark = pytest.mark.interop
_names = (f"p{i}" for i in itertools.count())


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    from confluent_kafka.admin import AdminClient
    broker = BrokerProcess(tmp_path_factory.mktemp("produce-configs"))
    broker.start()
    try:
        yield broker, AdminClient({"bootstrap.servers": broker.bootstrap})
    finally:
        broker.stop()


def _topic(admin, configs) -> str:
    from confluent_kafka.admin import NewTopic
    name = next(_names)
    admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(30)
    return name


def _produce(broker, topic, records, compression="none", acks="all"):
    """Produce (key, value, timestamp) records in one batch; the delivery reports. (A linger
    longer than any stall of this thread keeps them in one batch on a loaded machine, where
    50 ms once split them; flush() sends at once whatever the linger.)"""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": compression,
                         "acks": acks, "linger.ms": 5000, "enable.idempotence": False,
                         "retries": 0})
    reports = []
    for key, value, timestamp in records:
        producer.produce(topic, key=key, value=value, partition=0, timestamp=timestamp,
                         on_delivery=lambda err, msg: reports.append((err, msg)))
    assert producer.flush(30) == 0
    return reports


def _consume(broker, topic, count):
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message)
    consumer.close()
    return got


def _stored_batches(broker, topic):
    data = b"".join(path.read_bytes()
                    for path in sorted((broker.data_dir / f"{topic}-0").glob("*.log")))
    return [header for _, header in iter_batches(data)]


def test_log_append_time_is_stamped_by_the_broker(shared):
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME
    broker, admin = shared
    topic = _topic(admin, {"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    reports = _produce(broker, topic, [(b"k1", b"v1", 1000), (b"k2", b"v2", 2000)])
    after = int(time.time() * 1000)
    assert [err for err, _ in reports] == [None, None]
    # the produce answer carries the broker's time (librdkafka hands it to the delivery report)
    kinds = {msg.timestamp() for _, msg in reports}
    assert len(kinds) == 1
    kind, stamped = kinds.pop()
    assert kind == TIMESTAMP_LOG_APPEND_TIME and before <= stamped <= after
    consumed = _consume(broker, topic, 2)
    assert [m.value() for m in consumed] == [b"v1", b"v2"]
    assert {m.timestamp() for m in consumed} == {(TIMESTAMP_LOG_APPEND_TIME, stamped)}


@pytest.mark.parametrize(("produced", "configured", "codec"), [
    ("gzip", "lz4", 3), ("none", "zstd", 4), ("snappy", "uncompressed", 0), ("lz4", "gzip", 1),
    ("none", "snappy", 2)])
def test_the_broker_recompresses_into_the_topics_codec(shared, produced, configured, codec):
    broker, admin = shared
    topic = _topic(admin, {"compression.type": configured})
    records = [(f"k{i}".encode(), f"value-{i}-".encode() * 20, 1_700_000_000_000 + i)
               for i in range(50)]
    assert all(err is None for err, _ in _produce(broker, topic, records, produced))
    stored = _stored_batches(broker, topic)
    assert stored and {header.compression for header in stored} == {codec}
    consumed = _consume(broker, topic, len(records))
    assert [(m.key(), m.value(), m.timestamp()[1]) for m in consumed] == records
    assert [m.offset() for m in consumed] == list(range(len(records)))


def test_producer_compression_keeps_the_producers_codec(shared):
    broker, admin = shared
    topic = _topic(admin, {})
    _produce(broker, topic, [(b"k", b"v" * 100, 1_700_000_000_000)], "gzip")
    assert {header.compression for header in _stored_batches(broker, topic)} == {1}


def test_a_compacted_topic_refuses_records_without_a_key(shared):
    broker, admin = shared
    topic = _topic(admin, {"cleanup.policy": "compact"})
    reports = _produce(broker, topic, [(b"k", b"kept", 1_700_000_000_000),
                                       (None, b"keyless", 1_700_000_000_001)])
    assert {err.name() for err, _ in reports} == {"INVALID_RECORD"}  # the whole batch
    reports = _produce(broker, topic, [(b"k", b"kept", 1_700_000_000_000)])
    assert [err for err, _ in reports] == [None]
    assert [m.value() for m in _consume(broker, topic, 1)] == [b"kept"]


def test_timestamps_out_of_bounds_are_refused(shared):
    broker, admin = shared
    topic = _topic(admin, {"message.timestamp.before.max.ms": "3600000"})
    now = int(time.time() * 1000)
    old = _produce(broker, topic, [(b"k", b"old", now - 2 * 3600_000)])
    assert [err.name() for err, _ in old] == ["INVALID_TIMESTAMP"]
    # Kafka 4's default message.timestamp.after.max.ms is one hour
    future = _produce(broker, topic, [(b"k", b"future", now + 2 * 3600_000)])
    assert [err.name() for err, _ in future] == ["INVALID_TIMESTAMP"]
    fine = _produce(broker, topic, [(b"k", b"now", now)])
    assert [err for err, _ in fine] == [None]


def test_max_message_bytes_bounds_a_batch(shared):
    broker, admin = shared
    topic = _topic(admin, {"max.message.bytes": "1000"})
    reports = _produce(broker, topic, [(b"k", b"x" * 5000, 1_700_000_000_000)])
    assert [err.name() for err, _ in reports] == ["MSG_SIZE_TOO_LARGE"]


def test_min_insync_replicas_above_the_replication_factor_lets_acks_all_through(shared):
    """Kafka 4 takes min(min.insync.replicas, replication factor) as the minimum (Partition's
    effectiveMinIsr), so a one-replica topic with min.insync.replicas=2 takes acks=all."""
    broker, admin = shared
    topic = _topic(admin, {"min.insync.replicas": "2"})
    assert [err for err, _ in _produce(broker, topic, [(b"k", b"v", 1_700_000_000_000)])] \
        == [None]


def test_a_changed_config_applies_to_the_next_produce(shared):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    broker, admin = shared
    topic = _topic(admin, {})
    assert [err for err, _ in _produce(broker, topic, [(None, b"a", 1_700_000_000_000)])] \
        == [None]
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)
    reports = _produce(broker, topic, [(None, b"b", 1_700_000_000_000)])
    assert [err.name() for err, _ in reports] == ["INVALID_RECORD"]


def test_segment_ms_rolls_by_the_records_timestamps(shared):
    broker, admin = shared
    topic = _topic(admin, {"segment.ms": "60000"})
    for timestamp in (1_700_000_000_000, 1_700_000_030_000, 1_700_000_070_000):
        assert [err for err, _ in _produce(broker, topic, [(b"k", b"v", timestamp)])] == [None]
    # the third batch is 70 s past the segment's first: a second segment
    assert len(list((broker.data_dir / f"{topic}-0").glob("*.log"))) == 2


def test_broker_defaults_govern_topics_without_their_own(broker_factory):
    """`roster serve --set compression.type=lz4 --set log.message.timestamp.type=LogAppendTime`:
    a topic that sets neither recompresses into lz4 and stamps LogAppendTime, and reports both
    as STATIC_BROKER_CONFIG; a topic's own value still wins."""
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType
    broker = broker_factory({"compression.type": "lz4",
                             "log.message.timestamp.type": "LogAppendTime"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    plain, own = _topic(admin, {}), _topic(admin, {"compression.type": "producer"})
    resource = ConfigResource(ResourceType.TOPIC, plain)
    described = admin.describe_configs([resource])[resource].result(30)
    assert (described["compression.type"].value, described["compression.type"].source) == \
        ("lz4", ConfigSource.STATIC_BROKER_CONFIG.value)
    for topic in (plain, own):
        reports = _produce(broker, topic, [(b"k", b"v" * 200, 1_700_000_000_000)], "gzip")
        assert [(err, msg.timestamp()[0]) for err, msg in reports] == \
            [(None, TIMESTAMP_LOG_APPEND_TIME)]
    assert {header.compression for header in _stored_batches(broker, plain)} == {3}
    assert {header.compression for header in _stored_batches(broker, own)} == {1}


def test_a_broker_default_compact_policy_refuses_delete_records(broker_factory):
    """log.cleanup.policy=compact on the broker makes topics without their own policy compacted:
    DeleteRecords gets POLICY_VIOLATION there, as on a topic set compact itself."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient
    broker = broker_factory({"log.cleanup.policy": "compact"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    compacted, deleting = _topic(admin, {}), _topic(admin, {"cleanup.policy": "delete"})
    for topic in (compacted, deleting):
        _produce(broker, topic, [(b"k", b"v", 1_700_000_000_000)] * 3)
    with pytest.raises(KafkaException, match="POLICY_VIOLATION"):
        admin.delete_records([TopicPartition(compacted, 0, 1)])[
            TopicPartition(compacted, 0, 1)].result(30)
    done = admin.delete_records([TopicPartition(deleting, 0, 1)])
    assert list(done.values())[0].result(30).low_watermark == 1
