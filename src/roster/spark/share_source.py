"""Reading a share group (KIP-932): `.option("shareGroup", "g")` on a streaming read.

A share group hands records out, one member at a time, under a time-limited acquisition lock,
and delivers again whatever is not acknowledged. Spark plans micro-batches by offsets it writes
to its checkpoint. The two meet like this:

- The source's offset is a micro-batch sequence number, `{"batch": n}`. Partition offsets mean
  nothing here: which records a batch holds is the broker's choice, not a range of the log.
- `latestOffset(start)` first ACCEPTs every batch up to `start` (Spark calls it only once the
  previous batch is over and its commit is in the checkpoint, and `start` is that batch), then
  acquires new records with the query's `ShareConsumer` (explicit acknowledgement), which lives
  in this driver-side runner process on a thread of its own. Records acquired become batch
  `start + 1`, and that is the answer; none: `start`, no batch.
- `partitions(start, end)` hands Spark the records of `end` themselves, one input partition per
  topic-partition: executors read nothing from the broker.
- `commit(end)` ACCEPTs too (Spark sends it one batch late, and only when it plans another).
- While a batch runs, its records' locks are RENEWed every half lock duration, so a batch
  slower than the lock keeps them (and nobody else gets them meanwhile).
- On stop (Spark's SIGTERM to the runner) the records of the batch in flight are RELEASEd, and
  a crashed runner's connection closing releases them too: they come back from the broker, to
  this query's next run or to any other member, with their delivery count one higher.
- A batch Spark replays after a restart (in its checkpoint, not completed) is not held by the
  new run: it plans no records. Its records come back from the broker instead (released or
  their lock expired), in a later batch. So a replay never brings other records under an old
  batch id, which an idempotent sink (roster's sink skips a batch it has written) would drop.

The guarantee is at least once: a batch completed but not yet acknowledged when the query
stops or dies is delivered again, and the `deliveryCount` column says so (1 on the first
delivery). See docs/spark.md, "Share groups".
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from roster.spark.options import Settings
from roster.spark.stopping import StopsOnSigterm

log = logging.getLogger("roster.spark")

SHARE_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
                "timestamp timestamp, timestampType int, "
                "headers array<struct<key:string,value:binary>>, deliveryCount int")
# max.poll.records without maxOffsetsPerTrigger: a micro-batch is one poll of the group
DEFAULT_RECORDS_PER_BATCH = 5_000
RENEW_CHECK_S = 0.25
RENEW_TRIES = 3       # renewals failing this many times in a row stop being tried


def batch_of(offset: dict | None, what: str) -> int:
    """The micro-batch number in one of this source's offsets."""
    if not offset:
        return 0
    if "batch" not in offset:
        raise ValueError(f"{what} {offset} is not a share-group offset ({{\"batch\": n}}): this "
                         f"checkpoint was written by a consumer-group read of the roster "
                         f"source; a share-group query needs a checkpoint of its own")
    return int(offset["batch"])


# -- what executors get ------------------------------------------------------------------------

@dataclass(frozen=True)
class SharePartition(InputPartition):
    """The records of one topic-partition in one micro-batch, acquired by the driver."""

    topic: str
    partition: int
    offsets: tuple[int, ...]
    timestamps: tuple[int, ...]
    keys: tuple
    values: tuple
    headers: tuple
    delivery_counts: tuple[int, ...]


def share_partitions(records) -> list[SharePartition]:
    by_partition: dict[tuple[str, int], list] = {}
    for record in records:
        by_partition.setdefault((record.topic, record.partition), []).append(record)
    out = []
    for (topic, partition), held in sorted(by_partition.items()):
        held.sort(key=lambda r: r.offset)
        out.append(SharePartition(
            topic, partition, tuple(r.offset for r in held), tuple(r.timestamp for r in held),
            tuple(r.key for r in held), tuple(r.value for r in held),
            tuple(tuple(r.headers) for r in held), tuple(r.delivery_count for r in held)))
    return out


def arrow_schema():
    import pyarrow as pa

    from roster.spark.arrow_records import ARROW_SCHEMA
    return ARROW_SCHEMA.append(pa.field("deliveryCount", pa.int32()))


def read_share_partition(p: SharePartition):
    """One Arrow record batch in SHARE_SCHEMA. The share consumer does not report a record's
    timestamp type, so timestampType is null."""
    import pyarrow as pa

    from roster.spark.arrow_records import HEADERS, TIMESTAMP
    count = len(p.offsets)
    if count == 0:
        return
    stamps = pa.array([t * 1000 if t is not None and t >= 0 else -1000 for t in p.timestamps],
                      pa.int64()).cast(TIMESTAMP)
    yield pa.RecordBatch.from_arrays([
        pa.array(p.keys, pa.binary()), pa.array(p.values, pa.binary()),
        pa.repeat(pa.scalar(p.topic, pa.string()), count),
        pa.repeat(pa.scalar(p.partition, pa.int32()), count),
        pa.array(p.offsets, pa.int64()), stamps, pa.nulls(count, pa.int32()),
        pa.array([list(h) for h in p.headers], HEADERS),
        pa.array(p.delivery_counts, pa.int32()),
    ], schema=arrow_schema())


# -- the driver's share consumer ----------------------------------------------------------------

class ShareSession:
    """The query's ShareConsumer (explicit acknowledgement) on a thread with its own asyncio
    loop, so its heartbeats and lock renewals go on while Spark runs a batch. Every use of the
    consumer is on that loop, under one asyncio lock."""

    def __init__(self, settings: Settings) -> None:
        from roster.spark.group import configure_logging
        configure_logging()
        self.settings = settings
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="roster-spark-share",
                                        daemon=True)
        self._thread.start()
        self.consumer = None
        self.held: dict[int, list] = {}          # batch -> records acquired, not acknowledged
        self._renewed_at: dict[int, float] = {}  # batch -> when its locks were last taken
        self._busy: asyncio.Lock | None = None
        self._renewer: asyncio.Future | None = None
        self._renewing = True
        self.closed = False

    def run(self, coroutine, timeout_s: float | None = 120.0):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    def start(self) -> None:
        self.run(self._start(), self.settings.join_timeout_ms / 1000 + 30)

    async def _start(self) -> None:
        from roster.client.share_consumer import ShareConsumer
        s = self.settings
        config = {"bootstrap.servers": s.bootstrap, "group.id": s.share_group,
                  "client.id": s.client_id, "share.acknowledgement.mode": "explicit",
                  "max.poll.records": s.max_offsets_per_trigger or DEFAULT_RECORDS_PER_BATCH,
                  "fetch.max.wait.ms": s.fetch_max_wait_ms,
                  "request.timeout.ms": s.request_timeout_ms, **dict(s.security_config)}
        if s.share_acquire_mode is not None:
            config["share.acquire.mode"] = s.share_acquire_mode
        self._busy = asyncio.Lock()
        self.consumer = ShareConsumer(config)
        await self.consumer.subscribe(list(s.subscribe))
        # A member gets its partitions on a heartbeat after it joins: wait for them, or the
        # first poll (and an AvailableNow run with it) would find nothing.
        deadline = self.loop.time() + s.join_timeout_ms / 1000
        while not self.consumer.assignment and self.loop.time() < deadline:
            await asyncio.sleep(0.05)
        if not self.consumer.assignment:
            log.warning("share group %s: no partitions assigned after %.0fs; polling anyway",
                        s.share_group, s.join_timeout_ms / 1000)
        self._renewer = asyncio.ensure_future(self._renew_forever())

    # -- acknowledging ---------------------------------------------------------------------

    def acknowledge_through(self, batch: int, kind_name: str = "ACCEPT") -> None:
        """ACCEPT (or RELEASE) every held batch up to `batch`, durably (ShareAcknowledge)."""
        if any(b <= batch for b in self.held):
            self.run(self._acknowledge_through(batch, kind_name))

    async def _acknowledge_through(self, batch: int, kind_name: str) -> None:
        from roster.client.share_consumer import AcknowledgeType, CannotAcknowledge
        kind = AcknowledgeType[kind_name]
        async with self._busy:
            done = sorted(b for b in self.held if b <= batch)
            if not done:
                return
            lost = 0
            for b in done:
                for record in self.held.pop(b):
                    try:
                        self.consumer.acknowledge(record, kind)
                    except CannotAcknowledge:
                        lost += 1     # its lock went (a renewal refused): it comes back
                self._renewed_at.pop(b, None)
            outcome = await self.consumer.commit_sync(self.settings.request_timeout_ms / 1000)
        failed = {tp: error for tp, error in outcome.items() if error is not None}
        if failed or lost:
            log.warning("share group %s: %s of batch(es) %s not taken for %s (%s records no "
                        "longer held); the broker delivers those records again",
                        self.settings.share_group, kind.name, done, failed, lost)
        else:
            log.debug("share group %s: %s batches %s", self.settings.share_group, kind.name,
                      done)

    # -- acquiring -----------------------------------------------------------------------------

    def acquire(self, batch: int, timeout_s: float) -> list:
        """Records acquired now become `batch` (held until acknowledged)."""
        return self.run(self._acquire(batch, timeout_s), timeout_s + 60)

    async def _acquire(self, batch: int, timeout_s: float) -> list:
        async with self._busy:
            records = await self.consumer.poll(timeout_s)
            if records:
                self.held[batch] = list(records)
                self._renewed_at[batch] = time.monotonic()
            return records

    # -- keeping the locks of a running batch ---------------------------------------------

    async def _renew_forever(self) -> None:
        failures = 0
        while not self.closed and self._renewing:
            await asyncio.sleep(RENEW_CHECK_S)
            lock_ms = self.consumer.acquisition_lock_timeout_ms
            if not lock_ms or not self.held:
                continue
            now = time.monotonic()
            if any(now - at > lock_ms / 2000 for at in self._renewed_at.values()):
                # every held record at once: the renewal's poll() refuses to run while any
                # record of the last poll is left without an acknowledgement
                due = sorted(self.held)
                try:
                    await self._renew(due)
                    failures = 0
                except Exception as exc:  # noqa: BLE001 - renewing is best effort
                    failures += 1
                    for b in due:
                        self._renewed_at[b] = time.monotonic()   # next try in half a lock
                    if failures >= RENEW_TRIES:
                        self._renewing = False
                    log.warning("share group %s: renewing acquisition locks failed (%s)%s",
                                self.settings.share_group, exc,
                                "; giving up: a micro-batch longer than the lock (%d ms) has "
                                "its records delivered again" % lock_ms
                                if not self._renewing else "")

    async def _renew(self, due: list[int]) -> None:
        from roster.client.share_consumer import AcknowledgeType, CannotAcknowledge
        async with self._busy:
            due = [b for b in due if b in self.held]
            for b in due:
                for record in self.held[b]:
                    try:
                        self.consumer.acknowledge(record, AcknowledgeType.RENEW)
                    except CannotAcknowledge:
                        pass
            renewed = {(r.topic, r.partition, r.offset): r
                       for r in await self.consumer.poll(0)}
            now = time.monotonic()
            for b in due:
                kept = [renewed.get((r.topic, r.partition, r.offset), r) for r in self.held[b]]
                missing = sum((r.topic, r.partition, r.offset) not in renewed
                              for r in self.held[b])
                if missing:
                    log.warning("share group %s: %d records of batch %d lost their lock "
                                "before it was renewed", self.settings.share_group, missing, b)
                self.held[b] = kept
                self._renewed_at[b] = now
        log.debug("share group %s: renewed the locks of batches %s", self.settings.share_group,
                  due)

    # -- closing -------------------------------------------------------------------------------

    def close(self, timeout_s: float = 15.0) -> None:
        """RELEASE what is still held (the broker delivers it again at once, its delivery
        count kept), close the share sessions and leave the group."""
        if self.closed:
            return
        self.closed = True

        async def shutdown():
            if self.consumer is None:
                return
            if self._renewer is not None:
                self._renewer.cancel()
            if self.held:
                try:
                    await asyncio.wait_for(
                        self._acknowledge_through(max(self.held), "RELEASE"), timeout_s / 2)
                except (Exception, asyncio.TimeoutError) as exc:  # the close releases them too
                    log.info("releasing on close: %s", exc)
            await self.consumer.close(timeout=timeout_s / 2)
            log.info("share group %s: member closed", self.settings.share_group)
        try:
            self.run(shutdown(), timeout_s + 2)
        except Exception as exc:  # noqa: BLE001 - closing must not fail the caller
            log.warning("closing the share consumer failed: %s", exc)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(2)


# -- the reader --------------------------------------------------------------------------------

class RosterShareStreamReader(StopsOnSigterm, DataSourceStreamReader,
                              SupportsTriggerAvailableNow):
    """Offsets are {"batch": n}; see the module docstring."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._session: ShareSession | None = None
        self._previous_sigterm = None
        self._stopping = False
        self._acquired = 0

    def __getstate__(self):
        state = dict(self.__dict__)
        state.update(_session=None, _previous_sigterm=None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _io(self) -> ShareSession:
        if self._session is None:
            self._session = ShareSession(self.settings)
            self._install_sigterm_handler()
            self._session.start()
        return self._session

    def _stop_name(self) -> str:
        return f"the share consumer of {self.settings.share_group}"

    # -- Spark's calls --------------------------------------------------------------------

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.settings.max_offsets_per_trigger:
            return ReadMaxRows(self.settings.max_offsets_per_trigger)
        return ReadAllAvailable()

    def initialOffset(self) -> dict:
        return {"batch": 0}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        done = batch_of(start, "start offset")
        session = self._io()
        # Spark asks only once the batch ending at `start` is over and checkpointed
        session.acknowledge_through(done)
        if done + 1 in session.held:
            return {"batch": done + 1}    # asked again before running it: the same batch
        wait_s = self.settings.fetch_max_wait_ms / 1000
        records = session.acquire(done + 1, wait_s)
        if not records:
            return start
        self._acquired += len(records)
        return {"batch": done + 1}

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: batches go on while a poll brings records; the run ends at
        the first poll (fetch.max.wait.ms) that brings none, with every batch acknowledged."""
        self._io()

    def reportLatestOffset(self) -> dict | None:
        return {"acquired": self._acquired}

    def partitions(self, start: dict, end: dict) -> list[SharePartition]:
        first, last = batch_of(start, "start offset"), batch_of(end, "end offset")
        session = self._io()
        records = []
        for batch in range(first + 1, last + 1):
            if batch in session.held:
                records += session.held[batch]
            else:
                log.warning("share group %s: batch %d is a replay of a batch this run did not "
                            "acquire (the query restarted before completing it); it plans no "
                            "records: the broker delivers them again", self.settings.share_group,
                            batch)
        return share_partitions(records)

    def read(self, partition):
        if not isinstance(partition, SharePartition):
            return iter(())     # pyspark turns an empty partitions() into InputPartition(None)
        return read_share_partition(partition)

    def commit(self, end: dict) -> None:
        if self._session is not None:
            self._session.acknowledge_through(batch_of(end, "end offset"))

    def stop(self) -> None:
        if self._session is not None:
            self._session.close()
