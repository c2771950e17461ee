"""Every value of a topic, read to the end of each partition by a fresh librdkafka consumer at
the given isolation level (partition EOF events say where the end is)."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError


def values_to_end(bootstrap: str, topic: str, isolation: str, partitions: int,
                  group_id: str | None = None, timeout_s: float = 60) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap,
                         "group.id": group_id or f"read-to-end-{topic}-{isolation}",
                         "auto.offset.reset": "earliest", "isolation.level": isolation,
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.subscribe([topic])
    values, ended = [], set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(ended) < partitions and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    ended.add(message.partition())
                continue
            values.append(message.value())
        assert len(ended) == partitions, f"{topic}: reached the end of {sorted(ended)} only"
        return values
    finally:
        consumer.close()
