"""`__transaction_state`: where the transaction coordinator's records become durable, and where a
restarted broker reads them back (Kafka's TransactionStateManager log side).

The topic is created on the first transactional request (as Kafka creates it on the first
FindCoordinator for a transaction), compacted, with transaction.state.log.num.partitions
partitions; a transactional id's records go to partition abs(hash) % partitions, Kafka's
mapping. Each write is one batch holding one record, answered once fsynced.
"""
from __future__ import annotations

import logging

from roster.broker.crash_points import KILL_AFTER_TXN_WRITES, CrashPoint
from roster.protocol.partitioning import partition_for
from roster.log.api import LogError
from roster.log.reading import batches_from_start
from roster.record_codec import DefaultRecordBatchBuilder
from roster.transactions.log_records import TxnRecord, TxnRecordError, decode

log = logging.getLogger("roster.transactions")

TRANSACTION_TOPIC = "__transaction_state"
MAX_RECORD_BATCH = 1 << 20


class TransactionLog:
    def __init__(self, broker, partitions: int, segment_bytes: int) -> None:
        self._broker = broker
        self.partitions = partitions
        self._segment_bytes = segment_bytes
        self._crash_point = CrashPoint(KILL_AFTER_TXN_WRITES)   # tests only

    def exists(self) -> bool:
        return self._broker.topics.get(TRANSACTION_TOPIC) is not None

    def ensure_topic(self) -> None:
        topic = self._broker.topics.get(TRANSACTION_TOPIC)
        if topic is None:
            self._broker.topics.create(TRANSACTION_TOPIC, self.partitions, {
                "cleanup.policy": "compact", "segment.bytes": str(self._segment_bytes)},
                internal=True)
        elif len(topic.partitions) != self.partitions:
            raise SystemExit(
                f"{TRANSACTION_TOPIC} has {len(topic.partitions)} partitions but "
                f"transaction.state.log.num.partitions is {self.partitions}; they must agree")

    async def write(self, record: TxnRecord) -> bool:
        """Append the record and wait until it is durable: True once it is."""
        try:
            target, end = self._append(record)
            await self._broker.durability.make_durable(target, end)
        except LogError as exc:
            log.error("cannot write %s: %s", TRANSACTION_TOPIC, exc)
            return False
        return True

    def append(self, record: TxnRecord) -> bool:
        """Append the record only (the flush policy makes it durable later): for a record whose
        loss an OS crash may cause without harm (CompleteCommit/Abort: replay completes it
        again). True once appended."""
        try:
            target, _ = self._append(record)
        except LogError as exc:
            log.error("cannot write %s: %s", TRANSACTION_TOPIC, exc)
            return False
        self._broker.durability.appended(target, 1)
        return True

    def _append(self, record: TxnRecord):
        """(the partition's log, the end offset of the record just appended to it)."""
        target = self._broker.topics.partition(
            TRANSACTION_TOPIC, partition_for(record.transactional_id, self.partitions))
        key, value = record.encode()
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=0, is_transactional=False, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=MAX_RECORD_BATCH)
        builder.append(0, timestamp=self._broker.now_ms(), key=key, value=value, headers=[])
        end = target.append(bytes(builder.build())).last_offset + 1
        self._crash_point.passed()
        return target, end

    def load(self):
        """Every record of the topic, partition by partition, oldest first (the newest record
        of a transactional id wins). Unreadable records are logged and skipped."""
        if not self.exists():
            return
        for index in range(self.partitions):
            target = self._broker.topics.partition(TRANSACTION_TOPIC, index)
            for batch in batches_from_start(target):
                for entry in batch:
                    if entry.key is None:
                        continue
                    try:
                        yield decode(entry.key, entry.value)
                    except TxnRecordError as exc:
                        log.warning("skipping %s-%d offset %d: %s", TRANSACTION_TOPIC, index,
                                    entry.offset, exc)
