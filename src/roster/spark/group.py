"""The streaming reader's group membership, in the driver-side runner process.

Spark keeps one Python process and one reader object per query run for the driver-side calls
(initialOffset, latestOffset, partitions, commit); its main thread is blocked on a socket between
calls. `GroupSession` runs a roster.client group member on a background thread with its own
asyncio event loop, so heartbeats go on between micro-batches and during long ones; the reader's
methods call into that loop and wait for the answer. The member is a `GroupMember` (the classic
protocol) or, with group.protocol=consumer, a `ConsumerGroupMember` (KIP-848: the broker assigns;
`machine.generation` is then the member epoch).

Handing partitions over. The on_revoked callback waits for the micro-batch in flight to complete
(for at most 90% of the rebalance timeout, max.poll.interval.ms), then commits the offsets of the
last completed batch for the revoked partitions, so the next owner starts where this reader
stopped. Spark calls latestOffset() only once the previous batch is over (and checkpointed), so
that call ends the batch in flight, and its `start` is what has been processed. The wait is on
an event the reader's thread sets (through the loop) when it records a completed batch, or
when the session closes; its deadline is on the loop's clock. Heartbeats are not this module's
business: the member's own loop keeps sending them while the callback runs.
- classic: with an eager assignor, a rebalance revokes everything, and roster.client sends
  JoinGroup once the callback has returned, heartbeating until then (as Kafka's Java client
  does through onPartitionsRevoked);
- consumer: only the partitions taken away are revoked; the member still reports them as owned
  until the callback returns, so the broker keeps the member at its epoch (the handover commit
  is accepted) and gives them to their next owner only afterwards.
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading

from roster.client import consumer_membership
from roster.client.connection import ConnectionClosed
from roster.client.consumer_member import ConsumerGroupMember
from roster.client.errors import fatal_exception
from roster.client.member import CommitFailed, GroupMember
from roster.client.membership import FencedError, MemberConfig, State
from roster.spark.options import Settings
from roster.spark.wire import Broker, retrying

log = logging.getLogger("roster.spark")
TopicPartition = tuple[str, int]


def configure_logging() -> None:
    """The runner process has no logging set up; ROSTER_SPARK_LOG=INFO (or DEBUG) makes the
    reader's group events visible on the driver's stderr, or in the file named by
    ROSTER_SPARK_LOG_FILE (Spark stops relaying a runner's stderr once it stops the runner)."""
    level = os.environ.get("ROSTER_SPARK_LOG")
    if level and not log.handlers:
        path = os.environ.get("ROSTER_SPARK_LOG_FILE")
        handler = logging.FileHandler(path) if path else logging.StreamHandler()
        handler.setFormatter(logging.Formatter(
            "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(level.upper())
        logging.getLogger("roster.client").addHandler(handler)
        logging.getLogger("roster.client").setLevel(level.upper())


class GroupSession:
    def __init__(self, settings: Settings) -> None:
        configure_logging()
        self.settings = settings
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="roster-spark-group",
                                        daemon=True)
        self._thread.start()
        self.broker = Broker(settings.bootstrap, settings.client_id,  # used on the loop only
                             settings.security, settings.isolation_level,
                             settings.request_timeout_ms)
        self.member: GroupMember | ConsumerGroupMember | None = None
        self.consumer_protocol = settings.group_protocol == "consumer"
        self._stable = consumer_membership.State.STABLE if self.consumer_protocol \
            else State.STABLE
        self._lock = threading.RLock()   # a SIGTERM handler may run inside a holder
        self.done: dict[TopicPartition, int] = {}      # end of the last completed batch
        self.in_flight: set[TopicPartition] = set()    # read by the batch Spark is running
        self.starts: dict[TopicPartition, int] = {}    # start positions (not yet processed)
        self.last_committed: dict[TopicPartition, int] = {}
        # set (on the loop) whenever a batch completes or the session closes: what a
        # revocation waiting for the batch in flight wakes on
        self._batch_over = asyncio.Event()
        self.closing = False
        self.closed = False

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine, timeout_s: float | None = 120.0):
        """Run a coroutine on the session's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    # -- membership ----------------------------------------------------------------------------

    def join(self, topics: list[str]) -> None:
        self.run(self._join(topics))

    async def _join(self, topics: list[str]) -> None:
        s = self.settings
        config = MemberConfig(s.group_id, s.group_instance_id,
                              session_timeout_ms=s.session_timeout_ms,
                              rebalance_timeout_ms=s.rebalance_timeout_ms,
                              heartbeat_interval_ms=s.heartbeat_interval_ms,
                              assignors=s.assignors)
        callbacks = {"on_assigned": self._on_assigned, "on_revoked": self._on_revoked,
                     "on_lost": self._on_lost}
        if self.consumer_protocol:
            self.member = ConsumerGroupMember(s.bootstrap, config, client_id=s.client_id,
                                              security=s.security,
                                              request_timeout_ms=s.request_timeout_ms,
                                              server_assignor=s.group_remote_assignor,
                                              **callbacks)
        else:
            self.member = GroupMember(s.bootstrap, config, client_id=s.client_id,
                                      security=s.security,
                                      request_timeout_ms=s.request_timeout_ms,
                                      metadata_max_age_ms=s.metadata_max_age_ms, **callbacks)
        await self.member.start(topics)

    def resubscribe(self, topics: list[str]) -> None:
        """Change the subscription (subscribePattern matched new topics): the member rejoins.
        Not waited for: the revocation it starts may wait for a batch to complete."""
        asyncio.run_coroutine_threadsafe(self.member.subscribe(topics), self.loop)

    def stable_snapshot(self, timeout_s: float) -> tuple[int, tuple[TopicPartition, ...]] | None:
        """(generation, owned partitions) once stable, read atomically; None if the member is
        not stable within the timeout; raises FencedError when fenced."""
        async def read():
            await self.member.wait_stable(timeout_s)
            machine = self.member.machine
            owned = tuple(machine.owned)
            # from this look until planning() names the batch, every owned partition counts as
            # read by a batch in flight: a revocation starting in between (on this loop) must
            # wait for the batch being planned from this snapshot, not hand its partitions over
            # while the batch is about to read them (a duplicate for their next owner)
            with self._lock:
                self.in_flight = set(owned)
            return machine.generation, owned
        try:
            return self.run(read(), timeout_s + 5)
        except TimeoutError:
            return None

    @property
    def fatal(self) -> str | None:
        fatal = self.member.fatal if self.member is not None else None
        return fatal.message if fatal is not None else None

    def committed(self, partitions) -> dict[TopicPartition, int]:
        """The group's committed offsets (-1: none)."""
        if not partitions:
            return {}
        return self.run(retrying(lambda: self.member.committed(sorted(partitions)),
                                 "OffsetFetch for the group"))

    # -- what Spark has done ---------------------------------------------------------------

    def completed(self, offsets: dict[TopicPartition, int], batch_over: bool = True) -> None:
        """Spark completed the batch that ended at `offsets`. latestOffset() is only called
        once the previous batch is over (batch_over); commit() comes later, lagging a batch."""
        with self._lock:
            self.done.update(offsets)
            if batch_over and self.in_flight:
                self.in_flight = set()
                self._tell_batch_over()

    def planning(self, start: dict[TopicPartition, int], end: dict[TopicPartition, int]) -> None:
        """Spark is about to run the batch start..end."""
        with self._lock:
            self.in_flight = {tp for tp, offset in end.items()
                              if offset != start.get(tp, offset)}
        self._tell_batch_over()     # a revocation waiting on the snapshot looks again

    def started_at(self, offsets: dict[TopicPartition, int]) -> None:
        """Positions a partition starts from, which are not progress worth committing. What
        this reader did with a partition before it lost it is history: another member may have
        gone further since, and committing the old end would move the group back."""
        with self._lock:
            self.starts.update(offsets)
            for tp in offsets:
                self.done.pop(tp, None)
                self.last_committed.pop(tp, None)

    def _in_flight(self, partitions) -> list[TopicPartition]:
        with self._lock:
            return [tp for tp in partitions if tp in self.in_flight]

    def _tell_batch_over(self) -> None:
        """From any thread: wake a revocation waiting for the batch in flight."""
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._batch_over.set)

    async def _wait_for_batch(self, partitions, wait_s: float) -> list[TopicPartition]:
        """Wait until no batch in flight reads `partitions`, the session closes, or `wait_s`
        (on the loop's clock) is over; the partitions still being read."""
        deadline = self.loop.time() + wait_s
        while True:
            # cleared before looking: a batch completing after the look sets it again
            self._batch_over.clear()
            late = self._in_flight(partitions)
            remaining = deadline - self.loop.time()
            if not late or self.closing or remaining <= 0:
                return late
            try:
                await asyncio.wait_for(self._batch_over.wait(), remaining)
            except asyncio.TimeoutError:
                pass      # the next look reports what is still in flight

    def _progress(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        with self._lock:
            return {tp: o for tp, o in offsets.items() if self.starts.get(tp) != o}

    # -- committing ----------------------------------------------------------------------------

    def commit(self, offsets: dict[TopicPartition, int]) -> None:
        """Commit offsets of completed batches for the partitions still owned. A commit that
        fails because of a rebalance is logged and forgotten (Spark's checkpoint is the source
        of truth; the group catches up with the next commit); FencedError propagates."""
        if not self.settings.commit_offsets or self.member is None:
            return
        self.run(self._commit_owned(self._progress(offsets)))

    async def _commit_owned(self, offsets: dict[TopicPartition, int]) -> None:
        machine = self.member.machine
        if machine.fatal is not None:
            raise fatal_exception(machine.fatal, self.settings.group_id)
        if machine.state is not self._stable:
            return  # mid-rebalance: the revocation hands over what must be committed
        owned = set(machine.owned)
        wanted = {tp: o for tp, o in offsets.items()
                  if tp in owned and self.last_committed.get(tp) != o}
        if wanted:
            await self._send_commit(wanted, "batch completed")

    async def _send_commit(self, offsets: dict[TopicPartition, int], why: str) -> None:
        try:
            await self.member.commit(offsets)
        except CommitFailed as exc:
            log.warning("group %s: commit (%s) not accepted, carrying on: %s",
                        self.settings.group_id, why, exc)
            return
        except ConnectionClosed as exc:
            log.warning("group %s: commit (%s) lost with the connection, carrying on: %s",
                        self.settings.group_id, why, exc)
            return
        self.last_committed.update(offsets)
        log.debug("group %s: committed %s (%s)", self.settings.group_id, offsets, why)

    # -- callbacks (on the loop) -----------------------------------------------------------------

    async def _on_assigned(self, partitions) -> None:
        generation = self.member.machine.generation
        owned = tuple(self.member.machine.owned)
        log.info("group %s generation %d: this reader owns %s", self.settings.group_id,
                 generation, ", ".join(f"{t}-{p}" for t, p in owned) or "nothing")

    async def _on_revoked(self, partitions) -> None:
        if not partitions or self.closing:
            return
        # the member goes on heartbeating while this waits (its loop, not this callback)
        started = self.loop.time()
        late = await self._wait_for_batch(
            partitions, self.settings.rebalance_timeout_ms * 0.9 / 1000)
        waited = self.loop.time() - started
        if late:
            log.warning("group %s: handing over %s before the micro-batch reading them "
                        "completed (waited %.1fs); the next owner re-reads that batch",
                        self.settings.group_id, late, waited)
        elif waited > 0.05:
            log.info("group %s: waited %.2fs for the micro-batch in flight before handing "
                     "over %s", self.settings.group_id, waited, list(partitions))
        if not self.settings.commit_offsets:
            return
        with self._lock:
            offsets = {tp: self.done[tp] for tp in partitions
                       if tp in self.done and self.starts.get(tp) != self.done[tp]
                       and self.last_committed.get(tp) != self.done[tp]}
        if offsets:
            try:
                await self._send_commit(offsets, "partitions revoked")
            except FencedError as exc:
                log.error("group %s: fenced while handing over partitions: %s",
                          self.settings.group_id, exc)

    async def _on_lost(self, partitions) -> None:
        log.warning("group %s: lost %s without a clean revocation (the membership expired or "
                    "was fenced); their offsets are not committed", self.settings.group_id,
                    list(partitions))

    # -- closing -------------------------------------------------------------------------------

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop: commit completed offsets of owned partitions, then close the member — a
        static member stays in the group (no rebalance if it is back within the session
        timeout), a dynamic one leaves."""
        if self.closed:
            return
        self.closed = True
        self.closing = True       # a revocation waiting for a batch gives up now
        self._tell_batch_over()

        with self._lock:     # taken here, in the caller's thread, not on the loop
            final = self._progress(dict(self.done))

        async def shutdown():
            if self.member is not None:
                if self.settings.commit_offsets and self.member.fatal is None:
                    try:
                        await asyncio.wait_for(self._commit_owned(final), 3)
                    except (Exception, asyncio.TimeoutError) as exc:  # best effort on the way out
                        log.info("final commit skipped: %s", exc)
                await self.member.close()
                log.info("group %s: member closed (%s)", self.settings.group_id,
                         "static: stays in the group" if self.settings.group_instance_id
                         else "left the group")
            self.broker.close()
        try:
            self.run(shutdown(), timeout_s)
        except Exception as exc:  # noqa: BLE001 - closing must not fail the caller
            log.warning("closing the group member failed: %s", exc)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(2)
