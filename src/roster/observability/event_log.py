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

from roster.broker.partitions.internal_topic import InternalTopic, records_batch
from roster.log.api import LogError

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
        # an existing topic keeps its count: events are read by group, never by partition
        self.topic = InternalTopic(broker, EVENTS_TOPIC, partitions, EVENTS_CONFIGS,
                                   adopt_existing=True)
        self._pending: defaultdict[int, list] = defaultdict(list)
        self._scheduled = False
        self.written = 0

    def partition_for(self, group_id: str) -> int:
        return self.topic.partition_for(group_id)

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
            try:
                for batch, count in _batches(events):
                    self.topic.append(partition, batch, count)
            except LogError as exc:
                log.warning("cannot record %d group events in %s-%d: %s", len(events),
                            EVENTS_TOPIC, partition, exc)
                continue
            self.written += len(events)


def _batches(events):
    """(batch, its record count): the events in batches of about BATCH_LIMIT bytes."""
    entries, size = [], 0
    for event in events:
        key, value = event.group_id.encode(), event.to_json()
        entries.append((key, value, event.at_ms))
        size += len(key) + len(value)
        if size >= BATCH_LIMIT:
            yield records_batch(entries, MAX_BATCH), len(entries)
            entries, size = [], 0
    if entries:
        yield records_batch(entries, MAX_BATCH), len(entries)
