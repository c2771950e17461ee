#!/usr/bin/env python3
"""What the produce path's topic-config checks cost per batch
(roster.broker.partitions.record_validation), in process: the rules lookup plus `validate` for one 64 KiB batch of 63 1 KiB records, under
Kafka's defaults, on a compacted topic (every key read), with LogAppendTime (the batch stamped),
and with compression.type=lz4 for an uncompressed batch (decoded and rebuilt).

    .venv/bin/python bench/record_validation.py            # microseconds per batch, best of 5
"""
from __future__ import annotations

import sys
import time
import timeit
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roster.broker.partitions.record_validation import rules_for, validate  # noqa: E402
from roster.broker.partitions.topics import Topic, TopicManager  # noqa: E402
from roster.config import BrokerConfig  # noqa: E402
from roster.log.batch import parse_header  # noqa: E402
from roster.record_codec import DefaultRecordBatchBuilder  # noqa: E402

CASES = {"Kafka's defaults": {}, "cleanup.policy=compact": {"cleanup.policy": "compact"},
         "message.timestamp.type=LogAppendTime": {"message.timestamp.type": "LogAppendTime"},
         "compression.type=lz4 (from none)": {"compression.type": "lz4"}}


def main() -> None:
    topics = TopicManager(Path("/nonexistent"), BrokerConfig.from_overrides({}), None)
    builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
    now = time.time_ns() // 1_000_000
    for i in range(63):
        builder.append(i, now, f"key-{i}".encode(), b"x" * 1000, [])
    batch = bytes(builder.build())
    header = parse_header(batch)
    print(f"| topic configs | us per {len(batch)}-byte batch |\n|---|---|")
    for label, configs in CASES.items():
        topic = Topic("t", uuid.uuid4(), configs)

        def once(topic=topic):
            validate(batch, header, rules_for(topics, topic), time.time_ns() // 1_000_000,
                     "t", 0)
        number = 20000 if not configs else 500
        best = min(timeit.repeat(once, number=number, repeat=5)) / number
        print(f"| {label} | {best * 1e6:.1f} |")


if __name__ == "__main__":
    main()
