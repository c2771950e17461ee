"""The one place a transaction marker enters a partition's log.

`write_transaction_marker` appends the control batch (roster.log.control) through the
partition's normal append path: consumers long-polling the partition are woken and the flush
policy counts it, as for any produced batch. It deliberately bypasses the idempotent-producer
sequence table: a marker carries base sequence -1 and must not move the producer's sequence.

Seams (docs/transactions.md):
- the READ side (last stable offset, aborted-transaction index) hooks in here, right after the
  append, where `MarkerAppended` describes what was written and at which offset;
- the GROUP side: a marker written to a __consumer_offsets partition also completes (commit)
  or drops (abort) the producer's pending transactional offsets in the group coordinator; the
  caller (broker/transactions/runtime.py) tells the group runtime after the marker is durable.
"""
from __future__ import annotations


from roster.broker.partitions import appends
from roster.broker.partitions.crash_points import KILL_AFTER_TXN_MARKERS, CrashPoint
from roster.frozen import frozen
from roster.log.control import marker_batch

_crash_point = CrashPoint(KILL_AFTER_TXN_MARKERS)   # tests only


@frozen
class MarkerAppended:
    topic: str
    partition: int
    offset: int
    producer_id: int
    producer_epoch: int
    commit: bool


def write_transaction_marker(broker, topic: str, partition: int, producer_id: int,
                             producer_epoch: int, commit: bool, coordinator_epoch: int):
    """Append one marker; returns (the partition's log, MarkerAppended), or None when the
    partition no longer exists (a deleted topic: Kafka skips it too). Raises LogError when the
    log refuses the append."""
    log = broker.topics.partition(topic, partition)
    if log is None:
        return None
    appended = appends.append(broker, topic, partition, log, marker_batch(
        producer_id, producer_epoch, commit, coordinator_epoch, broker.now_ms()), 1)
    _crash_point.passed()
    return log, MarkerAppended(topic, partition, appended.base_offset, producer_id,
                               producer_epoch, commit)
