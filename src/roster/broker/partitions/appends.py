"""The one append path every writer of a partition log takes: Produce (after its own validation,
record_validation.py), transaction markers, the group coordinator's records, the transaction
coordinator's records and the flight recorder's events (through internal_topic.py).

Each append does the same three things after the log has taken the batch (the log itself
refuses what it cannot hold: a batch over max.message.bytes, a damaged one, a full disk, as
LogError): the fetches parked on the partition wake up, and the batch's records count toward
the flush policy (log.flush.interval.messages). A writer that needs the batch durable before it
answers then awaits `make_durable`, which every waiter on one log shares (durability.py).
"""
from __future__ import annotations

from roster.log.api import AppendResult, LogStorageError, PartitionLog


def append(broker, topic: str, index: int, log: PartitionLog, batch: bytes,
           records: int) -> AppendResult:
    """Append `batch` (holding `records` records) to partition `index` of `topic`, whose log is
    `log`; wake its fetches and count it for the flush policy. Raises LogError."""
    # None unless a test-mode fault is armed (broker/faults); stand-in brokers lack it
    faults = getattr(broker, "append_faults", None)
    if faults is not None and faults.append_fails(topic):
        raise LogStorageError(f"cannot append to {topic}-{index}: [Errno 28] No space left "
                              "on device (injected: roster test mode)")
    appended = log.append(batch)
    broker.waiters.notify((topic, index))
    broker.durability.appended(log, records)
    return appended


async def make_durable(broker, log: PartitionLog, end_offset: int) -> None:
    """Return once every offset of `log` below `end_offset` is on disk. Raises LogStorageError."""
    await broker.durability.make_durable(log, end_offset)
