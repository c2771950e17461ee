"""`__transaction_state`: where the transaction coordinator's records become durable, and where a
restarted broker reads them back (Kafka's TransactionStateManager log side).

The topic is created on the first transactional request (as Kafka creates it on the first
FindCoordinator for a transaction), compacted, with transaction.state.log.num.partitions
partitions; a transactional id's records go to partition abs(hash) % partitions, Kafka's
mapping. It is the transaction coordinator's sink on the coordinator runtime
(broker/coordinator_runtime.py): each record is one batch, answered once fsynced, but for
CompleteCommit/CompleteAbort, answered once appended: the markers before it are durable, and
were it lost with the page cache, replay would find the Prepare record and complete the
transaction again. The topic, the append and the fsync are internal_topic.py's.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from roster.broker.partitions.crash_points import KILL_AFTER_TXN_WRITES, CrashPoint
from roster.broker.partitions.internal_topic import InternalTopic, records_batch
from roster.log.api import LogError
from roster.protocol.errors import ErrorCode
from roster.transactions.log_records import TxnRecord, TxnRecordError, decode
from roster.transactions.state import TxnState

log = logging.getLogger("roster.transactions")

TRANSACTION_TOPIC = "__transaction_state"
MAX_RECORD_BATCH = 1 << 20
# answered once appended, not once fsynced (see above)
_NOT_WAITED_FOR = frozenset({TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})


class TransactionLog:
    def __init__(self, broker, partitions: int, segment_bytes: int) -> None:
        self._broker = broker
        self.topic = InternalTopic(
            broker, TRANSACTION_TOPIC, partitions,
            {"cleanup.policy": "compact", "segment.bytes": str(segment_bytes)},
            setting="transaction.state.log.num.partitions")
        self.partitions = partitions
        self._crash_point = CrashPoint(KILL_AFTER_TXN_WRITES)   # tests only
        self._writing: set[asyncio.Task] = set()    # writes waiting for their fsync

    def exists(self) -> bool:
        return self.topic.exists()

    def ensure_topic(self) -> None:
        self.topic.ensure()

    def write(self, records: list[TxnRecord], done: Callable[[ErrorCode | None], None],
              revert: Callable[[], None] | None = None) -> None:
        """Append the records; done(None) once they are durable (or appended, see above),
        done(NOT_COORDINATOR) if any cannot be written. Nothing to revert: a transaction's
        change stays pending until it is answered."""
        try:
            self.ensure_topic()
            ends = [self._append(record) for record in records]
        except LogError as exc:
            log.error("cannot write %s: %s", TRANSACTION_TOPIC, exc)
            done(ErrorCode.not_coordinator)
            return
        if all(r.metadata is not None and r.metadata.state in _NOT_WAITED_FOR for r in records):
            done(None)
            return
        task = asyncio.ensure_future(self._durable(ends, done))
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    async def _durable(self, ends, done: Callable[[ErrorCode | None], None]) -> None:
        try:
            for target, end in ends:
                await self.topic.make_durable(target, end)
        except LogError as exc:
            log.error("cannot write %s: %s", TRANSACTION_TOPIC, exc)
            done(ErrorCode.not_coordinator)
            return
        done(None)

    async def stop(self) -> None:
        """Cancel the writes still waiting for their fsync (the broker is stopping)."""
        for task in list(self._writing):
            task.cancel()
        await asyncio.gather(*self._writing, return_exceptions=True)

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
