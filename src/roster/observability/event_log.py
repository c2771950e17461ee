"""`__roster_group_events`: where the flight recorder's events go. An ordinary topic (key: the
group id, value: the event as JSON, partition: the group's Java hash, as __consumer_offsets), so
any Kafka client can read it; retention-bounded (delete policy), never compacted.

An event reaches record() only once the group records it describes are durable in
`__consumer_offsets` (the group runtime holds it until then and drops it if that write failed:
after_write.py), so the topic never tells of a generation or a saved rebalance that a crash
undid. Appends are batched: events from every operation in one pass of the event loop go into
one record batch per partition. Nothing waits for them: a reply is never held back by the
recorder, and the periodic flush makes them durable (an event lost in a crash costs history,
not correctness).
"""
from __future__ import annotations

import asyncio
import logging
from collections import defaultdict

from roster.protocol.partitioning import partition_for
from roster.log.api import LogError
from roster.record_codec import DefaultRecordBatchBuilder

log = logging.getLogger("roster.observability")

EVENTS_TOPIC = "__roster_group_events"
EVENTS_PARTITIONS = 4
RETENTION_MS = 30 * 24 * 3600 * 1000        # a month of rebalances
RETENTION_BYTES = 256 << 20                 # and at most this much per partition
# one event of a very large group (its member lists) still fits in a batch
MAX_BATCH = 64 << 20
EVENTS_CONFIGS = {"cleanup.policy": "delete", "retention.ms": str(RETENTION_MS),
                  "retention.bytes": str(RETENTION_BYTES), "segment.bytes": str(16 << 20),
                  "max.message.bytes": str(MAX_BATCH)}
BATCH_LIMIT = 512 << 10      # start a new batch past this many key and value bytes


class EventLog:
    def __init__(self, broker, partitions: int = EVENTS_PARTITIONS) -> None:
        self._broker = broker
        self._partitions = partitions
        self._pending: defaultdict[int, list] = defaultdict(list)
        self._scheduled = False
        self.written = 0

    def ensure_topic(self) -> None:
        topics = self._broker.topics
        topic = topics.get(EVENTS_TOPIC)
        if topic is None:
            topics.create(EVENTS_TOPIC, self._partitions, dict(EVENTS_CONFIGS), internal=True)
        else:
            self._partitions = len(topic.partitions)

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self._partitions)

    def record(self, events) -> None:
        """Called by the group runtime with a result's events: queued, written soon."""
        for event in events:
            self._pending[self.partition_for(event.group_id)].append(event)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        pending, self._pending = self._pending, defaultdict(list)
        for partition, events in pending.items():
            target = self._broker.topics.partition(EVENTS_TOPIC, partition)
            if target is None:
                continue
            try:
                for batch in _batches(events):
                    target.append(batch)
            except LogError as exc:
                log.warning("cannot record %d group events in %s-%d: %s", len(events),
                            EVENTS_TOPIC, partition, exc)
                continue
            self.written += len(events)
            self._broker.waiters.notify((EVENTS_TOPIC, partition))


def _batches(events):
    builder, size, count = None, 0, 0
    for event in events:
        key, value = event.group_id.encode(), event.to_json()
        if builder is None:
            builder, size, count = DefaultRecordBatchBuilder(
                magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                producer_epoch=-1, base_sequence=-1, batch_size=MAX_BATCH), 0, 0
        builder.append(count, timestamp=event.at_ms, key=key, value=value, headers=[])
        count += 1
        size += len(key) + len(value)
        if size >= BATCH_LIMIT:
            yield bytes(builder.build())
            builder = None
    if builder is not None:
        yield bytes(builder.build())
