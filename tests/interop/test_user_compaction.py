"""Compacted user topics in a real broker, written and read by confluent-kafka (librdkafka).

  * A topic created with cleanup.policy=compact and 1 MiB segments is written by an idempotent
    lz4 producer (so the cleaner rebuilds compressed batches of a producer id) with many
    versions of each key and some deletions; readers from the start, while the cleaner runs and
    after, see every key's newest record at its original offset, tombstones for deleted keys,
    and fewer records than were written.
  * The broker SIGKILLs itself at a chosen step of a cleaning pass (ROSTER_TEST_KILL_AT, see
    roster.log.fault_hook); after the restart every newest value is there, nothing is
    duplicated or lost, and the next pass finishes the job.

Waits are on conditions (the cleaner's first-dirty offset file advancing, the process ending),
never on time.
"""
from __future__ import annotations

import random

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from roster.log.cleaning import FIRST_DIRTY_OFFSET
from roster.log.fault_hook import ENVIRONMENT_VARIABLE
from roster.log.files import read_offset_file
from tests.interop.test_group_durability import wait_until

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("user-compaction")]

SEGMENT_BYTES = 1 << 20
BROKER = {"log.cleaner.backoff.ms": "100", "log.flush.interval.ms": "100"}
KEYS = 150


def create_topic(bootstrap: str, name: str, policy: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(name, 1, 1, config={
        "cleanup.policy": policy, "segment.bytes": str(SEGMENT_BYTES)})])[name]
    future.result(30)


def make_compacted(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("topic", name, incremental_configs=[ConfigEntry(
        "cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)


def produce(bootstrap: str, topic: str, rounds: int, seed: int) -> dict[int, tuple]:
    """Write `rounds` versions of every key (about 1 KB each; a few keys deleted on the way);
    returns offset -> (key, value) of every acknowledged record."""
    rng = random.Random(seed)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "compression.type": "lz4", "linger.ms": 5, "acks": "all"})
    acknowledged: dict[int, tuple] = {}

    def delivered(error, message):
        assert error is None, error
        acknowledged[message.offset()] = (message.key(), message.value())

    for round_ in range(rounds):
        for k in range(KEYS):
            key = b"key-%03d" % k
            deleted = k % 10 == 3 and round_ == rounds - 1
            value = None if deleted else b"%d:%d:" % (round_, k) + rng.randbytes(700)
            producer.produce(topic, key=key, value=value, on_delivery=delivered)
            producer.poll(0)
    assert producer.flush(60) == 0
    return acknowledged


def read_all(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every record from the log start to its end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "max.partition.fetch.bytes": 256 * 1024})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out = []
    try:
        while True:
            message = consumer.poll(10)
            assert message is not None, "no end of partition within 10 s"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return out
            out.append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()


def newest(records: dict[int, tuple]) -> dict[bytes, tuple[int, bytes | None]]:
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for offset in sorted(records):
        key, value = records[offset]
        latest[key] = (offset, value)
    return latest


def check_view(seen: list[tuple], written: dict[int, tuple]) -> None:
    """What a reader from the start must see of a compacted topic at any moment."""
    offsets = [offset for offset, _, _ in seen]
    assert offsets == sorted(set(offsets)), "offsets increase, nothing is repeated"
    for offset, key, value in seen:
        assert written[offset] == (key, value), f"offset {offset} is not what was written there"
    present = set(offsets)
    for key, (offset, value) in newest(written).items():
        assert offset in present, f"the newest record of {key!r} ({offset}) is missing"


def first_dirty(broker, topic: str) -> int:
    return read_offset_file(broker.data_dir / f"{topic}-0" / FIRST_DIRTY_OFFSET) or 0


def test_a_compacted_topic_read_from_the_start_shows_every_newest_record(broker_factory):
    broker = broker_factory(BROKER)
    create_topic(broker.bootstrap, "table", "compact")
    written = produce(broker.bootstrap, "table", rounds=12, seed=1)
    assert len(written) == 12 * KEYS
    # readers racing the cleaner's passes each see a whole, consistent view
    while first_dirty(broker, "table") == 0:
        check_view(read_all(broker.bootstrap, "table"), written)
    cleaned_to = first_dirty(broker, "table")
    seen = read_all(broker.bootstrap, "table")
    check_view(seen, written)
    below = [key for offset, key, _ in seen if offset < cleaned_to]
    assert len(below) == len(set(below)), "one record per key in the cleaned part"
    assert len(seen) < len(written) / 2, "compaction removed the older versions"
    broker.wait_for_line("compacted table-0 offsets 0..")
    tombstones = {key for _, key, value in seen if value is None}
    assert tombstones == {b"key-%03d" % k for k in range(KEYS) if k % 10 == 3}, \
        "a deleted key is read as its tombstone (delete.retention.ms has not passed)"


def test_the_brokers_log_cleanup_policy_compacts_a_topic_without_its_own(broker_factory):
    broker = broker_factory({**BROKER, "log.cleanup.policy": "compact"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("plain", 1, 1, config={
        "segment.bytes": str(SEGMENT_BYTES)})])["plain"].result(30)
    written = produce(broker.bootstrap, "plain", rounds=12, seed=2)   # past one segment
    wait_until(lambda: first_dirty(broker, "plain") > 0, 60, "the cleaner to compact the topic")
    seen = read_all(broker.bootstrap, "plain")
    check_view(seen, written)
    assert len(seen) < len(written), "compaction removed older versions"


@pytest.mark.parametrize("step", ["cleaner:staged", "cleaner:checkpointed", "cleaner:swap-3",
                                  "cleaner:swap-9"])
def test_kill_9_at_a_cleaning_step_loses_and_duplicates_nothing(broker_factory, monkeypatch,
                                                                step):
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, step)
    broker = broker_factory(BROKER)
    # written as a delete topic, then made compact: the first pass (and the kill) comes after
    # every record is acknowledged
    create_topic(broker.bootstrap, "kv", "delete")
    written = produce(broker.bootstrap, "kv", rounds=20, seed=2)  # > 2 segments
    make_compacted(broker.bootstrap, "kv")
    assert broker.proc.wait(60) == -9, \
        f"the broker was to kill itself at {step}:\n" + "\n".join(broker.output[-20:])
    monkeypatch.delenv(ENVIRONMENT_VARIABLE)
    broker.start()
    check_view(read_all(broker.bootstrap, "kv"), written)
    assert not list((broker.data_dir / "kv-0").glob("*.cleaned"))
    wait_until(lambda: first_dirty(broker, "kv") > 0, 60, "a pass after the restart")
    seen = read_all(broker.bootstrap, "kv")
    check_view(seen, written)
    assert len(seen) < len(written) / 2


def test_an_idempotent_producers_emptied_last_batch_stays_and_readers_step_over_it(
        broker_factory):
    """Kafka keeps a producer's last batch, emptied, when compaction removes all its records (its
    sequence numbers must survive); librdkafka must read past such a batch."""
    broker = broker_factory(BROKER)
    create_topic(broker.bootstrap, "seq", "compact")
    idempotent = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    idempotent.produce("seq", key=b"x", value=b"from the idempotent producer")
    assert idempotent.flush(30) == 0
    plain = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    plain.produce("seq", key=b"x", value=b"newer")
    filler = random.Random(3).randbytes(900)
    for i in range(1_400):  # past one segment, so both batches are in a closed one
        plain.produce("seq", key=b"f%d" % (i % 50), value=filler)
    assert plain.flush(30) == 0
    wait_until(lambda: first_dirty(broker, "seq") > 0, 60, "a pass")
    seen = read_all(broker.bootstrap, "seq")
    assert (0, b"x", b"from the idempotent producer") not in seen
    assert (1, b"x", b"newer") in seen
    with open(sorted((broker.data_dir / "seq-0").glob("*.log"))[0], "rb") as segment:
        head = segment.read(61)
    assert int.from_bytes(head[:8], "big") == 0 and int.from_bytes(head[57:61], "big") == 0, \
        "the first batch is kept, with no records"
    assert int.from_bytes(head[43:51], "big", signed=True) >= 0, "it has the producer id"
