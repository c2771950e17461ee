"""Each real client's transactional producer, and each one's consumer at an isolation level, so
a test can cross every producer with the readers that judge it.

- `PRODUCERS[name](bootstrap, transactional_id, topic, partitions, transactions)`: one
  transaction per (commit: bool, values) in order, the i-th value of each to partition
  i % partitions, each ended only once all its records are acknowledged (so every partition is
  in it). Names: confluent-kafka, kafka-python, aiokafka, java (Kafka's client 4.4, tests/java:
  Transaction Version 2 or classic, as the broker's finalized `transaction.version` says).
- `READERS[name](bootstrap, topic, isolations, ends)` -> {isolation: `Read`}: for each level a
  consumer with partitions 0..len(ends)-1 assigned from the beginning (no group), polled until
  each one's position reaches its entry of `ends` (or a deadline): the values per partition, in
  offset order, and the final positions. An end past the markers is what proves a
  read_committed consumer steps over them. (The Java reader runs every level in one JVM.)
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import time
from dataclasses import dataclass

from tests.support import java_judges

DEADLINE_S = 30.0
Transactions = list[tuple[bool, list[bytes]]]


@dataclass
class Read:
    values: dict[int, list[bytes]]
    positions: dict[int, int]


def _deadline_passed(deadline: float, isolation: str, read: Read, ends: list[int]) -> None:
    assert time.monotonic() < deadline, \
        f"{isolation} never reached {ends}: positions {read.positions}, values {read.values}"


def _empty(ends: list[int]) -> Read:
    return Read({p: [] for p in range(len(ends))}, {p: -1 for p in range(len(ends))})


# -- producers ---------------------------------------------------------------------------------

def produce_confluent(bootstrap: str, transactional_id: str, topic: str, partitions: int,
                      transactions: Transactions) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(DEADLINE_S)
    for commit, values in transactions:
        producer.begin_transaction()
        for i, value in enumerate(values):
            producer.produce(topic, value=value, partition=i % partitions)
        assert producer.flush(DEADLINE_S) == 0
        (producer.commit_transaction if commit else producer.abort_transaction)(DEADLINE_S)


def produce_kafka_python(bootstrap: str, transactional_id: str, topic: str, partitions: int,
                         transactions: Transactions) -> None:
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
    try:
        producer.init_transactions()
        for commit, values in transactions:
            producer.begin_transaction()
            sent = [producer.send(topic, value, partition=i % partitions)
                    for i, value in enumerate(values)]
            for future in sent:
                future.get(DEADLINE_S)
            (producer.commit_transaction if commit else producer.abort_transaction)()
    finally:
        producer.close(5)


def produce_aiokafka(bootstrap: str, transactional_id: str, topic: str, partitions: int,
                     transactions: Transactions) -> None:
    from aiokafka import AIOKafkaProducer

    async def run():
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id,
                                    enable_idempotence=True)
        await producer.start()
        try:
            for commit, values in transactions:
                await producer.begin_transaction()
                sent = [await producer.send(topic, value, partition=i % partitions)
                        for i, value in enumerate(values)]
                await asyncio.gather(*sent)
                await (producer.commit_transaction() if commit else producer.abort_transaction())
        finally:
            await producer.stop()

    asyncio.run(run())


def _java(*args: str) -> list[dict]:
    java_judges.build()
    done = subprocess.run([java_judges.JAVA, "-Xmx256m", "-XX:+UseSerialGC",
                           "-XX:TieredStopAtLevel=1", "-cp", java_judges.classpath(),
                           "roster.judge.TransactionalWrites", *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def produce_java(bootstrap: str, transactional_id: str, topic: str, partitions: int,
                 transactions: Transactions) -> None:
    specs = [("COMMIT=" if commit else "ABORT=") + b",".join(values).decode()
             for commit, values in transactions]
    ended = _java("produce", bootstrap, transactional_id, topic, str(partitions), *specs)
    assert [e["outcome"] for e in ended if e["event"] == "ended"] == \
        [spec.split("=")[0] for spec in specs]


PRODUCERS = {"confluent-kafka": produce_confluent, "kafka-python": produce_kafka_python,
             "aiokafka": produce_aiokafka, "java": produce_java}


# -- readers -----------------------------------------------------------------------------------

def read_confluent(bootstrap: str, topic: str, isolation: str, ends: list[int]) -> Read:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"unused-{topic}",
                         "isolation.level": isolation, "enable.auto.commit": False})
    assigned = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(len(ends))]
    consumer.assign(assigned)
    read, deadline = _empty(ends), time.monotonic() + DEADLINE_S
    try:
        while True:
            read.positions = {tp.partition: tp.offset for tp in consumer.position(
                [TopicPartition(topic, p) for p in range(len(ends))])}
            if all(read.positions[p] >= end for p, end in enumerate(ends)):
                return read
            _deadline_passed(deadline, isolation, read, ends)
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                read.values[message.partition()].append(message.value())
    finally:
        consumer.close()


def read_kafka_python(bootstrap: str, topic: str, isolation: str, ends: list[int]) -> Read:
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                             enable_auto_commit=False)
    assigned = [TopicPartition(topic, p) for p in range(len(ends))]
    consumer.assign(assigned)
    consumer.seek_to_beginning(*assigned)
    read, deadline = _empty(ends), time.monotonic() + DEADLINE_S
    try:
        while True:
            read.positions = {tp.partition: consumer.position(tp) for tp in assigned}
            if all(read.positions[p] >= end for p, end in enumerate(ends)):
                return read
            _deadline_passed(deadline, isolation, read, ends)
            for tp, records in consumer.poll(timeout_ms=200).items():
                read.values[tp.partition] += [r.value for r in records]
    finally:
        consumer.close()


def read_aiokafka(bootstrap: str, topic: str, isolation: str, ends: list[int]) -> Read:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> Read:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                    enable_auto_commit=False)
        await consumer.start()
        assigned = [TopicPartition(topic, p) for p in range(len(ends))]
        consumer.assign(assigned)
        await consumer.seek_to_beginning(*assigned)
        read, deadline = _empty(ends), time.monotonic() + DEADLINE_S
        try:
            while True:
                read.positions = {tp.partition: await consumer.position(tp) for tp in assigned}
                if all(read.positions[p] >= end for p, end in enumerate(ends)):
                    return read
                _deadline_passed(deadline, isolation, read, ends)
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    read.values[tp.partition] += [r.value for r in records]
        finally:
            await consumer.stop()

    return asyncio.run(run())


def read_java(bootstrap: str, topic: str, isolations: list[str],
              ends: list[int]) -> dict[str, Read]:
    reads = {isolation: _empty(ends) for isolation in isolations}
    for event in _java("read", bootstrap, topic, ",".join(map(str, ends)), *isolations):
        read = reads.get(event.get("isolation"))
        if event["event"] == "record":
            read.values[event["partition"]].append(event["value"].encode())
        elif event["event"] == "position":
            read.positions[event["partition"]] = event["offset"]
    return reads


def _each_level(read_one):
    def read(bootstrap: str, topic: str, isolations: list[str],
             ends: list[int]) -> dict[str, Read]:
        return {isolation: read_one(bootstrap, topic, isolation, ends) for isolation in isolations}
    return read


READERS = {"confluent-kafka": _each_level(read_confluent),
           "kafka-python": _each_level(read_kafka_python),
           "aiokafka": _each_level(read_aiokafka), "java": read_java}
