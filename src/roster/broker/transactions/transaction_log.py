"""`__transaction_state`: where the transaction coordinator's records become durable, and where a
restarted broker reads them back (Kafka's TransactionStateManager log side).

The topic is created on the first transactional request (as Kafka creates it on the first
FindCoordinator for a transaction), compacted, with transaction.state.log.num.partitions
partitions; a transactional id's records go to partition abs(hash) % partitions, Kafka's
mapping. Each write is one batch holding one record, answered once fsynced; the topic, the
append and the fsync are internal_topic.py's.
"""
from __future__ import annotations

import logging

from roster.broker.partitions.crash_points import KILL_AFTER_TXN_WRITES, CrashPoint
from roster.broker.partitions.internal_topic import InternalTopic, records_batch
from roster.log.api import LogError
from roster.transactions.log_records import TxnRecord, TxnRecordError, decode

log = logging.getLogger("roster.transactions")

TRANSACTION_TOPIC = "__transaction_state"
MAX_RECORD_BATCH = 1 << 20


class TransactionLog:
    def __init__(self, broker, partitions: int, segment_bytes: int) -> None:
        self._broker = broker
        self.topic = InternalTopic(
            broker, TRANSACTION_TOPIC, partitions,
            {"cleanup.policy": "compact", "segment.bytes": str(segment_bytes)},
            setting="transaction.state.log.num.partitions")
        self.partitions = partitions
        self._crash_point = CrashPoint(KILL_AFTER_TXN_WRITES)   # tests only

    def exists(self) -> bool:
        return self.topic.exists()

    def ensure_topic(self) -> None:
        self.topic.ensure()

    async def write(self, record: TxnRecord) -> bool:
        """Append the record and wait until it is durable: True once it is."""
        try:
            target, end = self._append(record)
            await self.topic.make_durable(target, end)
        except LogError as exc:
            log.error("cannot write %s: %s", TRANSACTION_TOPIC, exc)
            return False
        return True

    def append(self, record: TxnRecord) -> bool:
        """Append the record only (the flush policy makes it durable later): for a record whose
        loss an OS crash may cause without harm (CompleteCommit/Abort: replay completes it
        again). True once appended."""
        try:
            self._append(record)
        except LogError as exc:
            log.error("cannot write %s: %s", TRANSACTION_TOPIC, exc)
            return False
        return True

    def _append(self, record: TxnRecord):
        """(the partition's log, the end offset of the record just appended to it)."""
        key, value = record.encode()
        batch = records_batch([(key, value, self._broker.now_ms())], MAX_RECORD_BATCH)
        target, appended = self.topic.append(
            self.topic.partition_for(record.transactional_id), batch, 1)
        self._crash_point.passed()
        return target, appended.last_offset + 1

    def load(self):
        """Every record of the topic, partition by partition, oldest first (the newest record
        of a transactional id wins). Unreadable records are logged and skipped."""
        if not self.exists():
            return
        for index in range(self.partitions):
            for batch in self.topic.batches(index):
                for entry in batch:
                    if entry.key is None:
                        continue
                    try:
                        yield decode(entry.key, entry.value)
                    except TxnRecordError as exc:
                        log.warning("skipping %s-%d offset %d: %s", TRANSACTION_TOPIC, index,
                                    entry.offset, exc)
