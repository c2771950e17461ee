"""confluent-kafka 2.16's ShareConsumer (librdkafka's KIP-932 share consumer) reading from roster
through the share fetch path: two consumers of one share group get every record, each exactly
once (explicit ACCEPT committed after each poll), never the same record at the same time; and a
consumer killed with kill -9 while it holds records gives them back to the other as soon as
its connection drops (Kafka 4.4 does so in about 5 s), long before their 30 s lock. The
delivery scenario runs against the Kafka 4.4 peer too, with the same assertions."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from confluent_kafka import Producer, ShareConsumer

from tests.interop.share_fetch_wire import set_group_configs
from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name
from tests.support.transactions import create_topics

BOTH = pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
SETTINGS = {"group.share.heartbeat.interval.ms": "500",
            "group.share.min.heartbeat.interval.ms": "500"}
DEADLINE_S = 60


def produce_spread(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=b"%d" % i, partition=i % partitions)
    producer.flush(30)


def share_consumer(bootstrap: str, group: str, name: str) -> ShareConsumer:
    return ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                          "share.acknowledgement.mode": "explicit"})


@BOTH
def test_two_share_consumers_get_every_record_exactly_once(target):
    topic, group = unique_name("share-e2e"), unique_name("g")
    count, partitions = 3000, 3
    create_topics(target.bootstrap, topic, partitions=partitions)
    set_group_configs(target.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    produce_spread(target.bootstrap, topic, count, partitions)
    delivered: list[tuple] = []
    errors: list = []
    lock = threading.Lock()
    done = threading.Event()

    def consume(name: str) -> None:
        consumer = share_consumer(target.bootstrap, group, name)
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + DEADLINE_S
            while not done.is_set() and time.monotonic() < deadline:
                messages = consumer.poll(0.5) or []
                for message in messages:
                    if message.error():
                        errors.append((name, message.error()))
                        continue
                    with lock:
                        delivered.append((name, message.partition(), message.offset(),
                                          message.value(), message.delivery_count()))
                    consumer.acknowledge(message)
                if messages:
                    consumer.commit_sync()
                    with lock:
                        if len({(p, o) for _, p, o, _, _ in delivered}) >= count:
                            done.set()
        finally:
            consumer.close()

    threads = [threading.Thread(target=consume, args=(n,)) for n in ("c1", "c2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S + 30)
    assert not errors, errors[:5]
    records = Counter((p, o) for _, p, o, _, _ in delivered)
    assert len(records) == count, f"{len(records)} of {count} delivered"
    assert max(records.values()) == 1, [k for k, n in records.items() if n > 1][:10]
    assert {d for *_, d in delivered} == {1}
    assert sorted(int(v) for _, _, _, v, _ in delivered) == list(range(count))


KILLABLE = r"""
import json, sys, time
from confluent_kafka import ShareConsumer
bootstrap, group, topic = sys.argv[1:4]
consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "client.id": "doomed", "share.acknowledgement.mode": "explicit"})
consumer.subscribe([topic])
while True:
    messages = [m for m in consumer.poll(0.5) or [] if not m.error()]
    if messages:
        print(json.dumps([[m.partition(), m.offset()] for m in messages]), flush=True)
        time.sleep(3600)   # holds them, unacknowledged, until killed
"""


def test_a_killed_share_consumers_records_go_to_the_other_before_their_lock_expires(
        broker_factory):
    broker = broker_factory(SETTINGS)
    topic, group = unique_name("share-kill"), unique_name("g")
    create_topics(broker.bootstrap, topic, partitions=1)
    set_group_configs(broker.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    produce_spread(broker.bootstrap, topic, 20, 1)
    doomed = subprocess.Popen([sys.executable, "-c", KILLABLE, broker.bootstrap, group, topic],
                              stdout=subprocess.PIPE, text=True)
    try:
        held = {tuple(x) for x in json.loads(doomed.stdout.readline())}
        assert held, "the doomed consumer got nothing"
        survivor = share_consumer(broker.bootstrap, group, "survivor")
        try:
            survivor.subscribe([topic])
            # while the doomed one holds them, the survivor cannot have them
            seen = {}
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                for m in survivor.poll(0.5) or []:
                    if not m.error():
                        seen[(m.partition(), m.offset())] = m.delivery_count()
                        survivor.acknowledge(m)
                survivor.commit_sync()
            assert not held & set(seen)
            doomed.kill()
            doomed.wait(10)
            killed_at = time.monotonic()
            while not held <= set(seen):
                assert time.monotonic() - killed_at < 15, f"still missing {held - set(seen)}"
                for m in survivor.poll(0.5) or []:
                    if not m.error():
                        seen[(m.partition(), m.offset())] = m.delivery_count()
                        survivor.acknowledge(m)
                survivor.commit_sync()
            assert {seen[k] for k in held} == {2}
            assert len(seen) == 20
        finally:
            survivor.close()
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait(10)



@BOTH
def test_a_read_committed_share_consumer_gets_committed_records_only(target):
    """Transactions committed and aborted: a read_committed share group's consumer gets every
    committed record once and no aborted one. (librdkafka 2.16 does not acknowledge the
    transaction markers it is handed, on Kafka 4.4 as on roster: they wait for their lock.)"""
    topic, group = unique_name("share-txn-e2e"), unique_name("g")
    create_topics(target.bootstrap, topic)
    set_group_configs(target.bootstrap, group, {"share.auto.offset.reset": "earliest",
                                                "share.isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": target.bootstrap,
                         "transactional.id": unique_name("tx")})
    producer.init_transactions(30)
    expected = []
    for n in range(10):
        producer.begin_transaction()
        batch = [b"t%d-%d" % (n, i) for i in range(5)]
        for value in batch:
            producer.produce(topic, value=value, partition=0)
        producer.flush(10)
        if n % 3 == 1:
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
            expected += batch
    got: list[bytes] = []
    consumer = share_consumer(target.bootstrap, group, "txn-reader")
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            messages = consumer.poll(0.5) or []
            for message in messages:
                assert message.error() is None, message.error()
                got.append(message.value())
                consumer.acknowledge(message)
            if messages:
                consumer.commit_sync()
            if len(got) >= len(expected):
                break
    finally:
        consumer.close()
    assert sorted(got) == sorted(expected)
