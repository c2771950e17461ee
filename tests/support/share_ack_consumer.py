"""A share consumer in a child process for kill -9 tests (tests/interop/test_share_kill9.py):

  python -m tests.support.share_ack_consumer BOOTSTRAP GROUP TOPIC

roster.client.ShareConsumer in explicit mode: each record of a poll is accepted (every 7th
offset released on its first delivery, so redelivery is on the way too), then commit_sync.
Before it commits it prints {"sending": [[partition, offset, type], ...]}; once the broker
answered, {"confirmed": [...], "errors": {partition: error}} (flushed), so the parent knows
which acknowledgements the broker answered when it kills everything.
"""
from __future__ import annotations

import asyncio
import json
import sys

from roster.client.share_consumer import ShareConsumer
from roster.client.share_consumer_fetch import AcknowledgeType

ACCEPT, RELEASE = 1, 2


def _emit(line: dict) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def consume(bootstrap: str, group: str, topic: str) -> None:
    consumer = ShareConsumer(bootstrap, group, **{"share.acknowledgement.mode": "explicit"})
    await consumer.subscribe([topic])
    _emit({"subscribed": True})
    assigned = False
    while True:
        records = await consumer.poll(1.0)
        if not consumer.assignment:
            continue
        if not assigned:
            assigned = True
            _emit({"assigned": True})
        if not records:
            continue
        acks = []
        for record in records:
            kind = RELEASE if record.offset % 7 == 0 and record.delivery_count == 1 else ACCEPT
            consumer.acknowledge(record, AcknowledgeType(kind))
            acks.append([record.partition, record.offset, kind])
        _emit({"sending": acks})
        answers = await consumer.commit_sync(30)
        _emit({"confirmed": acks, "errors": {str(p): None if e is None else str(e)
                                             for (_, p), e in answers.items()}})


if __name__ == "__main__":
    asyncio.run(consume(*sys.argv[1:4]))
