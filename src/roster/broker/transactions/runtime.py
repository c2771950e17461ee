"""The transaction coordinator (roster.transactions) on the broker's one coordinator runtime
(broker/coordinator_runtime.py: it carries out the coordinator's Results as it does the group
shard's, with __transaction_state, transaction_log.py, as the sink). What is the transactions'
own: writing the markers (the coordinator's Markers effect), waking requests that waited for a
transactional id to settle (TxnSettled), the periodic timers (timeouts, expiration, stalled
completions), and the implicit adds of Transaction Version 2.

Order of an EndTxn, as Kafka's: the PrepareCommit/PrepareAbort record is fsynced, the client
is answered, then a marker is appended to every partition of the transaction and fsynced, and
only then is CompleteCommit/CompleteAbort written. A crash anywhere in between leaves the
Prepare record, and load() (replay) writes the markers again and completes it.
"""
from __future__ import annotations

import asyncio
import logging
import time

from roster.broker.coordinator_runtime import CoordinatorRuntime
from roster.broker.partitions import appends
from roster.broker.transactions.transaction_log import TransactionLog
from roster.broker.transactions.transaction_markers import write_transaction_marker
from roster.log import batch as batches
from roster.log.api import CorruptBatch, LogError
from roster.protocol.errors import ErrorCode
from roster.transactions.coordinator import (
    Markers,
    Outcome,
    TransactionCoordinator,
    TxnConfig,
    TxnSettled,
)
from roster.transactions.state import TxnState

log = logging.getLogger("roster.transactions")
# an add meeting the previous transaction still completing waits this long for it
ADD_WAIT_S = 10.0
TV2 = 2
READY_POLL_S = 0.05


class TransactionRuntime(CoordinatorRuntime):
    def __init__(self, broker, config) -> None:
        self._broker = broker
        self.log = TransactionLog(broker, config["transaction.state.log.num.partitions"],
                                  config["transaction.state.log.segment.bytes"])
        self.coordinator = TransactionCoordinator(
            TxnConfig(max_timeout_ms=config["transaction.max.timeout.ms"],
                      id_expiration_ms=config["transactional.id.expiration.ms"]),
            broker.producer_ids.allocate)
        super().__init__(self.coordinator, self.log, time.time)
        self.effects[Markers] = lambda job: self._spawn(self._complete(job))
        self.effects[TxnSettled] = lambda _: self._wake_settled()
        self._abort_interval_s = \
            config["transaction.abort.timed.out.transaction.cleanup.interval.ms"] / 1000
        self._expire_interval_s = \
            config["transaction.remove.expired.transaction.cleanup.interval.ms"] / 1000
        self._tasks: set[asyncio.Task] = set()
        self.transaction_version = config["transaction.version"]
        self._settled = asyncio.Event()     # set (and replaced) after every durable change
        # called with (producer_id, commit, group partitions) once a marker is durable in
        # __consumer_offsets: the group side completes or drops pending offsets (the hook)
        self.on_offsets_marker = None
        # whether the groups are loaded: completions resumed at start wait for it, so that a
        # marker re-written to __consumer_offsets meets the pending offsets it ends
        self.ready = None

    # -- life cycle -------------------------------------------------------------------------

    def load(self) -> list[asyncio.Task]:
        """Replay __transaction_state (when it exists), resume interrupted completions, and
        start the timers; returns the background tasks for the broker to cancel."""
        replayed = 0
        for record in self.log.load():
            self.coordinator.replay(record)
            replayed += 1
        if replayed:
            log.info("replayed %d %s records", replayed, "__transaction_state")
        stalled = self.coordinator.stalled()
        if stalled:
            self._spawn(self._resume(stalled))
        return [asyncio.ensure_future(self._forever(self._abort_interval_s, self._abort_timed_out)),
                asyncio.ensure_future(self._forever(self._expire_interval_s, self._expire))]

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.log.stop()
        self.close()

    async def _resume(self, jobs: list[Markers]) -> None:
        """Complete the transactions a restart found prepared, once the groups are loaded."""
        while self.ready is not None and not self.ready():
            await asyncio.sleep(READY_POLL_S)
        log.info("completing %d transaction(s) prepared before the restart", len(jobs))
        for job in jobs:
            await self._complete(job)

    async def _forever(self, interval_s: float, tick) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                tick()
            except Exception:       # a bug must not stop the timers
                log.exception("transaction timer failed")

    def clock_moved(self, seconds: float) -> None:
        """The broker clock jumped (test mode): the due timers fire, then the timeout and
        expiry passes run at once instead of at their next interval."""
        super().clock_moved(seconds)
        self._abort_timed_out()
        self._expire()

    def _abort_timed_out(self) -> None:
        for result in self.coordinator.timed_out(self.now_ms()):
            self.apply(result)
        self._complete_all(self.coordinator.stalled())

    def _expire(self) -> None:
        for result in self.coordinator.expired(self.now_ms()):
            self.apply(result)

    def _spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- carrying out what the coordinator decided ------------------------------------------

    def _wake_settled(self) -> None:
        self._settled.set()
        self._settled = asyncio.Event()

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
        # CompleteCommit/Abort: the log does not wait for its fsync (transaction_log.py)
        self.apply(self.coordinator.markers_written(job, self.now_ms()))

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
        if len(ends) == 1:      # the common case: no gather (a task per log) for one log
            await appends.make_durable(self._broker, *next(iter(ends.values())))
        else:
            await asyncio.gather(*(appends.make_durable(self._broker, target, end)
                                   for target, end in ends.values()))
        if offsets_partitions and self.on_offsets_marker is not None:
            self.on_offsets_marker(job.producer_id, job.commit, offsets_partitions)

    # -- the requests' entry points (handlers call these) -----------------------------------

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> Outcome:
        token = self.new_token()
        return await self.run(lambda now: self.coordinator.init_producer_id(
            transactional_id, timeout_ms, expected, now, token), token)

    async def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                             partitions) -> Outcome:
        token = self.new_token()
        return await self.run(lambda now: self.coordinator.add_partitions(
            transactional_id, producer_id, epoch, partitions, now, token), token)

    async def end_txn(self, transactional_id: str, producer_id: int, epoch: int,
                      commit: bool, tv2: bool = False) -> Outcome:
        token = self.new_token()
        return await self.run(lambda now: self.coordinator.end_txn(
            transactional_id, producer_id, epoch, commit, now, token, tv2), token)

    # -- Transaction Version 2: partitions added implicitly -------------------------------

    def features(self) -> tuple[list, list]:
        """ApiVersions' (supported, finalized) features: transaction.version, whose finalized
        level 2 tells Kafka 4.x clients to use TV2."""
        finalized = [("transaction.version", self.transaction_version)] \
            if self.transaction_version > 0 else []
        return [("transaction.version", 0, TV2)], finalized

    async def add_when_settled(self, transactional_id: str, producer_id: int, epoch: int,
                               partitions) -> Outcome:
        """Partitions into the transaction, waiting out the completion of the previous one
        (its markers and CompleteCommit/Abort) instead of answering CONCURRENT_TRANSACTIONS at
        once: what a client's retry would get, without its backoff (a classic client's
        AddPartitionsToTxn/AddOffsetsToTxn; TV2's implicit adds from Produce v12+ and
        TxnOffsetCommit v5, as Kafka's partition leader retries them)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ADD_WAIT_S
        while True:
            settled = self._settled
            outcome = await self.add_partitions(transactional_id, producer_id, epoch, partitions)
            left = deadline - loop.time()
            if outcome.error is not ErrorCode.concurrent_transactions or left <= 0:
                return outcome
            try:
                await asyncio.wait_for(settled.wait(), left)
            except TimeoutError:
                return outcome

    def produce_adds(self, transactional_id: str | None, topic_data):
        """A Produce v12+ with transactional batches for partitions its transaction does not
        hold yet: a coroutine adding them (produce.py answers once it is done), else None."""
        if transactional_id is None:
            return None
        m = self.coordinator.get(transactional_id)
        wanted, producer = [], None
        for topic_data_entry in topic_data:
            name = getattr(topic_data_entry, "name", None)
            if name is None:
                topic = self._broker.topics.by_id(getattr(topic_data_entry, "topic_id", None))
                name = topic.name if topic is not None else None
            if name is None:
                continue
            for partition_data in topic_data_entry.partition_data:
                try:
                    header = batches.parse_header(partition_data.records or b"")
                except CorruptBatch:
                    continue
                if header.is_transactional:
                    producer = (header.producer_id, header.producer_epoch)
                    wanted.append((name, partition_data.index))
        if producer is None or (m is not None and m.state is TxnState.ONGOING and
                                (m.producer_id, m.producer_epoch) == producer and
                                set(wanted) <= m.partitions):
            return None
        return self.add_when_settled(transactional_id, *producer, wanted)

    def check_produce(self, transactional_id, producer_id: int, epoch: int, topic: str,
                      partition: int) -> ErrorCode:
        return self.coordinator.check_produce(transactional_id, producer_id, epoch,
                                              (topic, partition))
