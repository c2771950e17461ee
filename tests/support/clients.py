"""Drive the real Kafka clients (confluent-kafka, kafka-python, aiokafka, kcat) the way users do.

Every consumer here reads by explicit assignment from the beginning (no consumer group), and
returns what it saw as `Rec`s so tests can compare across clients.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import time
from dataclasses import dataclass

DEADLINE_S = 30.0


@dataclass(frozen=True)
class Rec:
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int
    offset: int = -1

    def content(self):
        """Everything but the offset, which the broker assigns."""
        return (self.partition, self.key, self.value, self.headers, self.timestamp)


def sample_records(count: int, partitions: int, tag: str) -> list[Rec]:
    base_ts = 1_700_000_000_000
    return [Rec(partition=i % partitions, key=f"{tag}-key-{i}".encode(),
                value=(f"{tag}-value-{i}-" + "x" * (i % 7) * 50).encode(),
                headers=(("trace", f"t{i}".encode()), ("src", tag.encode())),
                timestamp=base_ts + i * 1000)
            for i in range(count)]


# -- producers ---------------------------------------------------------------------------------

def produce_confluent(bootstrap: str, topic: str, records: list[Rec], compression: str,
                      acks: str = "all") -> list[int]:
    from confluent_kafka import Producer
    # One batch per partition, however loaded the machine: produce() queues every record before
    # flush() sends them (flush ignores linger.ms). With 5 ms a loaded run split them, and
    # librdkafka sends a batch uncompressed when compressing does not shrink it, which a batch
    # of one small record rarely does.
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": compression,
                         "acks": acks, "linger.ms": 1000, "enable.idempotence": False})
    offsets: list[int] = []
    errors: list = []

    def delivered(err, msg):
        if err is not None:
            errors.append(err)
        else:
            offsets.append(msg.offset())

    for r in records:
        producer.produce(topic, value=r.value, key=r.key, partition=r.partition,
                         headers=list(r.headers), timestamp=r.timestamp, on_delivery=delivered)
    remaining = producer.flush(DEADLINE_S)
    assert remaining == 0 and not errors, (remaining, errors)
    return offsets


def produce_kafka_python(bootstrap: str, topic: str, records: list[Rec], compression: str) -> None:
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=compression, acks="all",
                             linger_ms=5)
    futures = [producer.send(topic, value=r.value, key=r.key, partition=r.partition,
                             headers=list(r.headers), timestamp_ms=r.timestamp) for r in records]
    producer.flush(DEADLINE_S)
    for future in futures:
        future.get(timeout=DEADLINE_S)
    producer.close()


def produce_aiokafka(bootstrap: str, topic: str, records: list[Rec], compression: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def run():
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=compression,
                                    acks="all", linger_ms=5)
        await producer.start()
        try:
            futures = [await producer.send(topic, value=r.value, key=r.key, partition=r.partition,
                                           headers=list(r.headers), timestamp_ms=r.timestamp)
                       for r in records]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    asyncio.run(run())


# -- consumers ---------------------------------------------------------------------------------

def consume_confluent(bootstrap: str, topic: str, partitions: int, count: int) -> list[Rec]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assign-only",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen: list[Rec] = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(seen) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            seen.append(Rec(msg.partition(), msg.key(), msg.value(),
                            tuple((k, v) for k, v in (msg.headers() or [])),
                            msg.timestamp()[1], msg.offset()))
    finally:
        consumer.close()
    return seen


def consume_kafka_python(bootstrap: str, topic: str, partitions: int, count: int) -> list[Rec]:
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    assignment = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(assignment)
    consumer.seek_to_beginning(*assignment)
    seen: list[Rec] = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(seen) < count and time.monotonic() < deadline:
            for tp, messages in consumer.poll(timeout_ms=500).items():
                seen.extend(Rec(m.partition, m.key, m.value, tuple(m.headers), m.timestamp,
                                m.offset) for m in messages)
    finally:
        consumer.close()
    return seen


def consume_aiokafka(bootstrap: str, topic: str, partitions: int, count: int) -> list[Rec]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run():
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                    enable_auto_commit=False)
        await consumer.start()
        seen: list[Rec] = []
        try:
            assignment = [TopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(assignment)
            await consumer.seek_to_beginning(*assignment)
            deadline = time.monotonic() + DEADLINE_S
            while len(seen) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for messages in batches.values():
                    seen.extend(Rec(m.partition, m.key, m.value, tuple(m.headers), m.timestamp,
                                    m.offset) for m in messages)
        finally:
            await consumer.stop()
        return seen

    return asyncio.run(run())


def consume_kcat(bootstrap: str, topic: str, partitions: int, count: int) -> list[Rec]:
    """kcat -C in JSON mode, reading every partition from the beginning to the end."""
    result = subprocess.run(
        ["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-J", "-q",
         "-c", str(count)],
        capture_output=True, text=True, timeout=DEADLINE_S)
    assert result.returncode == 0, result.stderr
    seen = []
    for line in result.stdout.splitlines():
        doc = json.loads(line)
        headers = doc.get("headers") or []
        pairs = tuple((headers[i], headers[i + 1].encode()) for i in range(0, len(headers), 2))
        seen.append(Rec(doc["partition"], _kcat_bytes(doc.get("key")),
                        _kcat_bytes(doc.get("payload")), pairs, doc["ts"], doc["offset"]))
    return seen


def _kcat_bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


CONSUMERS = {
    "confluent-kafka": consume_confluent,
    "kafka-python": consume_kafka_python,
    "aiokafka": consume_aiokafka,
    "kcat": consume_kcat,
}
