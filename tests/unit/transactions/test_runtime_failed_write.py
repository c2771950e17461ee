"""The transaction coordinator on the coordinator runtime when __transaction_state cannot be
written: a real broker on a temporary directory (FileLog segments, the real TransactionLog as
the runtime's sink). A failed append or fsync is answered NOT_COORDINATOR, as Kafka answers
it, and leaves the transaction as it was, so the client's retry goes through; a requester that
goes away while its write waits for the fsync still settles the id (no CONCURRENT_TRANSACTIONS
forever)."""
from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from roster.broker.broker import Broker
from roster.broker.transactions.transaction_log import TRANSACTION_TOPIC
from roster.config import BrokerConfig
from roster.log.api import LogStorageError
from roster.protocol.errors import ErrorCode as E
from roster.transactions.state import TxnState

TP = ("orders", 0)


class Faults:
    """The transaction log's appends fail while `failing_appends`; make_durable waits while
    `holding`, then fails if `failing_fsync`."""

    def __init__(self, broker: Broker, log) -> None:
        self.failing_appends = False
        self.failing_fsync = False
        self.holding = False
        self.waiting = asyncio.Event()
        self.released = asyncio.Event()
        self._append, log.append = log.append, self._faulty_append
        self._make_durable = broker.durability.make_durable
        broker.durability.make_durable = self._faulty_make_durable

    def _faulty_append(self, batch: bytes):
        if self.failing_appends:
            raise LogStorageError("injected: no space left on device")
        return self._append(batch)

    async def _faulty_make_durable(self, log, end):
        if self.holding:
            self.waiting.set()
            await self.released.wait()
        if self.failing_fsync:
            raise LogStorageError("injected: fsync failed")
        return await self._make_durable(log, end)


def run(scenario) -> None:
    async def main(data_dir: Path):
        config = BrokerConfig.load(assignments=["transaction.state.log.num.partitions=1",
                                                "log.flush.interval.ms=3600000"], environ={})
        broker = Broker(config, data_dir)
        broker.topics.load()
        transactions = broker.transactions
        transactions.log.ensure_topic()
        faults = Faults(broker, broker.topics.partition(TRANSACTION_TOPIC, 0))
        try:
            first = await transactions.init_producer_id("t", 60_000, None)
            assert first.error is E.none
            await scenario(transactions, faults, first.producer_id)
        finally:
            await transactions.stop()
            broker.topics.close()

    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(main(Path(directory)))


def test_a_failed_append_is_answered_not_coordinator_and_changes_nothing():
    async def scenario(transactions, faults, producer_id):
        faults.failing_appends = True
        failed = await transactions.add_partitions("t", producer_id, 0, [TP])
        assert failed.error is E.not_coordinator
        assert transactions.coordinator.get("t").state is TxnState.EMPTY
        faults.failing_appends = False
        assert (await transactions.add_partitions("t", producer_id, 0, [TP])).error is E.none
        assert transactions.coordinator.get("t").state is TxnState.ONGOING
    run(scenario)


def test_a_failed_fsync_is_answered_not_coordinator_and_the_retry_goes_through():
    async def scenario(transactions, faults, producer_id):
        assert (await transactions.add_partitions("t", producer_id, 0, [TP])).error is E.none
        faults.failing_fsync = True
        failed = await transactions.end_txn("t", producer_id, 0, commit=True)
        assert failed.error is E.not_coordinator
        assert transactions.coordinator.get("t").state is TxnState.ONGOING
        faults.failing_fsync = False
        assert (await transactions.end_txn("t", producer_id, 0, commit=True)).error is E.none
        assert transactions.coordinator.get("t").state in (TxnState.PREPARE_COMMIT,
                                                           TxnState.COMPLETE_COMMIT)
    run(scenario)


def test_a_requester_gone_during_the_fsync_still_settles_the_id():
    async def scenario(transactions, faults, producer_id):
        faults.holding = True
        asking = asyncio.ensure_future(transactions.add_partitions("t", producer_id, 0, [TP]))
        await asyncio.wait_for(faults.waiting.wait(), 10)
        asking.cancel()          # the connection closed: its request task is cancelled
        blocked = await transactions.add_partitions("t", producer_id, 0, [("other", 0)])
        assert blocked.error is E.concurrent_transactions   # the first write is still pending
        faults.holding = False
        faults.released.set()
        settled = await asyncio.wait_for(
            transactions.add_when_settled("t", producer_id, 0, [("other", 0)]), 10)
        assert settled.error is E.none
        assert transactions.coordinator.get("t").partitions == {TP, ("other", 0)}
    run(scenario)
