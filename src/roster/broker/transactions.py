"""The transaction coordinator's edge: runs the pure coordinator (roster.transactions) on the
event loop, makes its records durable in __transaction_state, writes the markers, and runs its
timers (timeouts, expiration, stalled completions).

Order of an EndTxn, as Kafka's: the PrepareCommit/PrepareAbort record is fsynced, the client
is answered, then a marker is appended to every partition of the transaction and fsynced, and
only then is CompleteCommit/CompleteAbort written. A crash anywhere in between leaves the
Prepare record, and start() (replay) writes the markers again and completes it.
"""
from __future__ import annotations

import asyncio
import logging

from roster.broker.transaction_log import TransactionLog
from roster.broker.transaction_markers import write_transaction_marker
from roster.log.api import LogError
from roster.protocol.errors import ErrorCode
from roster.transactions.coordinator import Markers, Outcome, TransactionCoordinator, TxnConfig

log = logging.getLogger("roster.transactions")
RETRY_MARKERS_S = 1.0


class TransactionRuntime:
    def __init__(self, broker, config) -> None:
        self._broker = broker
        self.log = TransactionLog(broker, config["transaction.state.log.num.partitions"],
                                  config["transaction.state.log.segment.bytes"])
        self.coordinator = TransactionCoordinator(
            TxnConfig(max_timeout_ms=config["transaction.max.timeout.ms"],
                      id_expiration_ms=config["transactional.id.expiration.ms"]),
            broker.producer_ids.allocate)
        self._abort_interval_s = \
            config["transaction.abort.timed.out.transaction.cleanup.interval.ms"] / 1000
        self._expire_interval_s = \
            config["transaction.remove.expired.transaction.cleanup.interval.ms"] / 1000
        self._tasks: set[asyncio.Task] = set()
        # called with (producer_id, commit, group partitions) once a marker is durable in
        # __consumer_offsets: the group side completes or drops pending offsets (the hook)
        self.on_offsets_marker = None

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> list[asyncio.Task]:
        """Replay __transaction_state (when it exists), resume interrupted completions, and
        start the timers; returns the background tasks for the broker to cancel."""
        replayed = 0
        for record in self.log.load():
            self.coordinator.replay(record)
            replayed += 1
        if replayed:
            log.info("replayed %d %s records", replayed, "__transaction_state")
        self._complete_all(self.coordinator.stalled())
        return [asyncio.ensure_future(self._forever(self._abort_interval_s, self._abort_timed_out)),
                asyncio.ensure_future(self._forever(self._expire_interval_s, self._expire))]

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _forever(self, interval_s: float, tick) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                tick()
            except Exception:       # a bug must not stop the timers
                log.exception("transaction timer failed")

    def _abort_timed_out(self) -> None:
        for outcome in self.coordinator.timed_out(self._broker.now_ms()):
            self._spawn(self.carry_out(outcome))
        self._complete_all(self.coordinator.stalled())

    def _expire(self) -> None:
        for outcome in self.coordinator.expired(self._broker.now_ms()):
            self._spawn(self.carry_out(outcome))

    def _spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- carrying out what the coordinator decided ------------------------------------------

    async def carry_out(self, outcome: Outcome) -> Outcome:
        """Make the outcome's write durable (if any) and start what follows it; the outcome to
        answer with (NOT_COORDINATOR when the write failed, as Kafka answers it)."""
        if outcome.write is None:
            return outcome
        self.log.ensure_topic()
        durable = await self.log.write(outcome.write)
        self._complete_all(self.coordinator.written(outcome.write.transactional_id, durable))
        if not durable:
            return Outcome(ErrorCode.not_coordinator)
        return outcome

    def _complete_all(self, jobs: list[Markers]) -> None:
        for job in jobs:
            self._spawn(self._complete(job))

    async def _complete(self, job: Markers) -> None:
        try:
            await self._write_markers(job)
        except (LogError, OSError) as exc:
            log.error("cannot write the markers of %r (retried): %s", job.transactional_id, exc)
            self.coordinator.markers_failed(job)
            return
        await self.carry_out(self.coordinator.markers_written(job, self._broker.now_ms()))

    async def _write_markers(self, job: Markers) -> None:
        """A marker in every partition of the transaction, then one fsync wait per log."""
        ends = {}
        offsets_partitions = []
        for topic, partition in sorted(job.partitions):
            written = write_transaction_marker(self._broker, topic, partition, job.producer_id,
                                               job.producer_epoch, job.commit,
                                               job.coordinator_epoch)
            if written is None:
                continue
            target, appended = written
            ends[id(target)] = (target, appended.offset + 1)
            if topic == "__consumer_offsets":
                offsets_partitions.append(partition)
        await asyncio.gather(*(self._broker.durability.make_durable(target, end)
                               for target, end in ends.values()))
        if offsets_partitions and self.on_offsets_marker is not None:
            self.on_offsets_marker(job.producer_id, job.commit, offsets_partitions)

    # -- the requests' entry points (handlers call these) -----------------------------------

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> Outcome:
        return await self.carry_out(self.coordinator.init_producer_id(
            transactional_id, timeout_ms, expected, self._broker.now_ms()))

    async def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                             partitions) -> Outcome:
        return await self.carry_out(self.coordinator.add_partitions(
            transactional_id, producer_id, epoch, partitions, self._broker.now_ms()))

    async def end_txn(self, transactional_id: str, producer_id: int, epoch: int,
                      commit: bool) -> Outcome:
        return await self.carry_out(self.coordinator.end_txn(
            transactional_id, producer_id, epoch, commit, self._broker.now_ms()))

    def check_produce(self, transactional_id, producer_id: int, epoch: int, topic: str,
                      partition: int) -> ErrorCode:
        return self.coordinator.check_produce(transactional_id, producer_id, epoch,
                                              (topic, partition))
