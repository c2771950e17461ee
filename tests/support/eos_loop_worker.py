"""A consume-transform-produce loop with confluent-kafka, as an exactly-once application writes
it: a static member (group.instance.id) reads `in` read_committed, and each poll's records are
uppercased into `out` with their offsets committed in the same transaction
(send_offsets_to_transaction with the member's group metadata). It prints each step (begin,
produced, offsets, committed) so a test can SIGKILL it at a chosen point, and exits 0 once the
group's committed offsets reach `expected` records in total.

    python -m tests.support.eos_loop_worker BOOTSTRAP IN OUT GROUP EXPECTED
"""
from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


STUCK_S = 40     # no record for this long: give up, so the test fails instead of hanging


def step(name: str) -> None:
    print(name, flush=True)


def main(bootstrap: str, source: str, target: str, group: str, expected: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "group.instance.id": f"{group}-1", "session.timeout.ms": 30_000,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{group}-tx",
                         "transaction.timeout.ms": 10_000, "linger.ms": 0})
    producer.init_transactions(30)
    consumer.subscribe([source])
    step("ready")
    stuck_at = time.monotonic() + STUCK_S
    while True:
        if time.monotonic() > stuck_at:
            step(f"stuck: assignment {consumer.assignment()}")
            return 2
        messages = [m for m in consumer.consume(num_messages=7, timeout=0.2)
                    if m.error() is None]
        if messages:
            stuck_at = time.monotonic() + STUCK_S
            producer.begin_transaction()
            step("begin")
            for message in messages:
                producer.produce(target, key=message.key(), value=message.value().upper())
            producer.flush(30)
            step("produced")
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            step("offsets")
            producer.commit_transaction(30)
            step("committed")
        assignment = consumer.assignment()
        if assignment:
            # the group's offsets, not this process's positions: a worker started after the
            # last commit consumes nothing, and librdkafka's position() stays unset then
            committed = consumer.committed(
                [TopicPartition(tp.topic, tp.partition) for tp in assignment], 10)
            if sum(max(tp.offset, 0) for tp in committed) >= expected:
                step("done")
                consumer.close()
                return 0


if __name__ == "__main__":
    bootstrap, source, target, group, expected = sys.argv[1:6]
    sys.exit(main(bootstrap, source, target, group, int(expected)))
