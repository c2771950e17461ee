"""What read_committed and read_uncommitted consumers see of transactions on a real broker:
confluent-kafka's transactional producer commits and aborts; confluent-kafka, kafka-python and
Java (kafka-clients 4.4, tests/java) consumers read; ListOffsets answers by isolation level; an
open transaction holds read_committed readers at its first offset; a restart (clean and
kill -9) rebuilds the last stable offset and the aborted-transaction index; the cleaner removes
aborted records from a compacted topic. The scenarios that need no restart run against the
Apache Kafka 4.4 peer too, with the same assertions."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CfPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KpPartition

from tests.support.judges import (  # noqa: F401 (fixtures)
    KAFKA,
    ROSTER,
    jvm,
    member_settings,
    roster_broker,
    target,
)
from tests.support.kafka_peer import unique_name
from tests.support.process import BrokerProcess
from tests.support.transactions import create_topics, log_entries, wait_for

pytestmark = pytest.mark.interop
BOTH = pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)

SETTINGS = {"transaction.state.log.num.partitions": "1", "num.partitions": "1"}
DEADLINE_S = 30.0


def txn_producer(broker, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": broker.bootstrap,
                         "transactional.id": transactional_id})
    producer.init_transactions(30)
    return producer


def transaction(producer: Producer, topic: str, values: list[bytes], commit: bool) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value)
    producer.flush(30)
    (producer.commit_transaction if commit else producer.abort_transaction)(30)


def confluent_read(broker, topic: str, isolation: str, until: int) -> list[bytes]:
    """Every value a confluent-kafka consumer gets from the start until its position is `until`."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_name("g"),
                         "isolation.level": isolation, "enable.auto.commit": False})
    consumer.assign([CfPartition(topic, 0, 0)])
    values, deadline = [], time.monotonic() + DEADLINE_S
    try:
        while consumer.position([CfPartition(topic, 0)])[0].offset < until:
            assert time.monotonic() < deadline, f"{isolation} stuck; got {values}"
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values


class KpReader:
    """A kafka-python consumer of partition 0 from the start."""

    def __init__(self, broker, topic: str, isolation: str) -> None:
        self.consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, isolation_level=isolation,
                                      enable_auto_commit=False, consumer_timeout_ms=500)
        self.tp = KpPartition(topic, 0)
        self.consumer.assign([self.tp])
        self.consumer.seek(self.tp, 0)
        self.values: list[bytes] = []

    def end_offset(self) -> int:
        return self.consumer.end_offsets([self.tp])[self.tp]

    def read_to(self, offset: int) -> list[bytes]:
        deadline = time.monotonic() + DEADLINE_S
        while self.consumer.position(self.tp) < offset:
            assert time.monotonic() < deadline, f"stuck at {self.consumer.position(self.tp)}"
            for records in self.consumer.poll(timeout_ms=200).values():
                self.values += [r.value for r in records]
        return self.values

    def close(self) -> None:
        self.consumer.close()


def end_of_log(broker, topic: str) -> int:
    """The high watermark (ListOffsets LATEST, read_uncommitted)."""
    reader = KpReader(broker, topic, "read_uncommitted")
    try:
        return reader.end_offset()
    finally:
        reader.close()


def markers(broker, topic: str) -> list[str]:
    return [kind for kind, *_ in log_entries(broker.bootstrap, topic) if kind != "data"]


@BOTH
def test_commits_are_visible_and_aborts_invisible_to_read_committed(target):
    broker, topic = target, unique_name("rc-basic")
    create_topics(broker.bootstrap, topic)
    producer = txn_producer(broker, topic)
    transaction(producer, topic, [b"a0", b"a1", b"a2"], commit=True)
    transaction(producer, topic, [b"b0", b"b1"], commit=False)
    transaction(producer, topic, [b"c0"], commit=True)
    wait_for(lambda: markers(broker, topic) == ["commit", "abort", "commit"], "markers")
    end = end_of_log(broker, topic)
    assert end == 9
    committed = [b"a0", b"a1", b"a2", b"c0"]
    everything = [b"a0", b"a1", b"a2", b"b0", b"b1", b"c0"]
    assert confluent_read(broker, topic, "read_committed", end) == committed
    assert confluent_read(broker, topic, "read_uncommitted", end) == everything
    for isolation, expected in (("read_committed", committed), ("read_uncommitted", everything)):
        reader = KpReader(broker, topic, isolation)
        try:
            assert reader.end_offset() == end
            assert reader.read_to(end) == expected
        finally:
            reader.close()


@BOTH
def test_an_open_transaction_holds_read_committed_at_its_first_offset(target):
    broker, topic = target, unique_name("rc-open")
    create_topics(broker.bootstrap, topic)
    producer = txn_producer(broker, topic)
    transaction(producer, topic, [b"before"], commit=True)
    stable = wait_for(lambda: end_of_log(broker, topic) == 2 and 2, "the first commit")
    producer.begin_transaction()
    producer.produce(topic, value=b"open")
    producer.flush(30)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, value=b"plain")   # after the open transaction's data
    plain.flush(30)
    committed = KpReader(broker, topic, "read_committed")
    uncommitted = KpReader(broker, topic, "read_uncommitted")
    try:
        assert committed.end_offset() == stable        # ListOffsets: the LSO
        assert uncommitted.end_offset() == stable + 2   # the high watermark
        assert committed.read_to(stable) == [b"before"]
        assert uncommitted.read_to(stable + 2) == [b"before", b"open", b"plain"]
        producer.commit_transaction(30)
        end = wait_for(lambda: (n := end_of_log(broker, topic)) == stable + 3 and n,
                       "the commit marker")
        assert committed.end_offset() == end
        assert committed.read_to(end) == [b"before", b"open", b"plain"]
    finally:
        committed.close()
        uncommitted.close()


@BOTH
def test_the_java_consumer_reads_committed_records_only(target, jvm):
    """Kafka's own client (4.4) at both isolation levels: the last committed record arrives
    last, so once it has, everything the consumer will ever show has been shown."""
    broker, topic = target, unique_name("rc-java")
    create_topics(broker.bootstrap, topic)
    producer = txn_producer(broker, topic)
    transaction(producer, topic, [b"a0", b"a1"], commit=True)
    transaction(producer, topic, [b"b0"], commit=False)
    transaction(producer, topic, [b"end"], commit=True)
    for level, expected in (("read_committed", ["a0", "a1", "end"]),
                            ("read_uncommitted", ["a0", "a1", "b0", "end"])):
        name = unique_name("java")
        jvm.send(f"start {name} {topic} " + member_settings(
            broker, unique_name("g"), "classic", None, **{"isolation.level": level}))
        jvm.wait_for(lambda: jvm.select("record", member=name, value="end"),
                     f"the {level} consumer to reach the last record")
        assert [e["value"] for e in jvm.select("record", member=name)] == expected
        jvm.send(f"stop {name}")


@pytest.mark.parametrize("how", ["restart", "kill9"])
def test_a_restarted_broker_still_hides_aborted_transactions(tmp_path, how):
    broker = BrokerProcess(tmp_path / "data", SETTINGS).start()
    try:
        create_topics(broker.bootstrap, "rc-restart")
        producer = txn_producer(broker, "rc-restart")
        transaction(producer, "rc-restart", [b"x0", b"x1"], commit=False)
        transaction(producer, "rc-restart", [b"y0"], commit=True)
        wait_for(lambda: markers(broker, "rc-restart") == ["abort", "commit"], "the markers")
        end = end_of_log(broker, "rc-restart")
        if how == "kill9":
            broker.kill9()
            broker.start()
        else:
            broker.restart()
        assert confluent_read(broker, "rc-restart", "read_committed", end) == [b"y0"]
        reader = KpReader(broker, "rc-restart", "read_committed")
        try:
            assert reader.end_offset() == end
            assert reader.read_to(end) == [b"y0"]
        finally:
            reader.close()
    finally:
        broker.stop()


def test_the_cleaner_removes_aborted_data_from_a_compacted_topic(tmp_path):
    """A compacted topic written by transactions: the broker's cleaner drops the aborted
    records (an aborted value never supersedes a committed one), and readers at both levels
    see the committed values after it."""
    from roster.admin.client import AdminClient
    from roster.admin.topics import create

    broker = BrokerProcess(tmp_path / "data", {**SETTINGS, "log.cleaner.backoff.ms": "200"})
    broker.start()
    try:
        topic = "rc-compact"
        with AdminClient(broker.bootstrap) as admin:
            create(admin, topic, 1, {"cleanup.policy": "compact", "internal.segment.bytes": "2048",
                                     "min.cleanable.dirty.ratio": "0.01"})
        producer = txn_producer(broker, topic)

        def keyed(pairs, commit):
            producer.begin_transaction()
            for key, value in pairs:
                producer.produce(topic, key=key, value=value)
            producer.flush(30)
            (producer.commit_transaction if commit else producer.abort_transaction)(30)

        keyed([(b"k1", b"committed-1"), (b"k2", b"committed-2")], commit=True)
        keyed([(b"k1", b"aborted-1"), (b"k3", b"aborted-3")], commit=False)
        for i in range(40):   # enough to roll 2 KiB segments behind the aborted transaction
            keyed([(b"f%d" % i, b"x" * 100)], commit=True)
        wait_for(lambda: any(f"compacted {topic}-0" in line for line in broker.output),
                 "a compaction pass")
        end = end_of_log(broker, topic)
        for isolation in ("read_uncommitted", "read_committed"):
            values = confluent_read(broker, topic, isolation, end)
            assert b"committed-1" in values and b"committed-2" in values, values
            assert b"aborted-1" not in values and b"aborted-3" not in values
    finally:
        broker.stop()
