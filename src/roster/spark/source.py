"""The `roster` data source: batch and streaming reads of Kafka-protocol topics.

What runs where (Spark's Python Data Source API, pyspark >= 4.2):

- `RosterBatchReader.partitions()` runs once, on the driver side: it resolves the topics and turns
  startingOffsets/endingOffsets into one offset range per partition.
- `RosterStreamReader`'s driver-side methods (initialOffset, latestOffset, partitions, commit,
  prepareForTriggerAvailableNow) run in one long-lived runner process per query run. There the
  reader is a member of the consumer group (see `roster.spark.group`), joined lazily: __init__
  also runs in a planner process whose instance is pickled to the executors, so it opens nothing.
- `read(partition)` runs on executors, on a pickled copy of the planner's reader: everything it
  needs travels in the `RangePartition`. It opens its own connection and fetches exactly
  [start, end) of one partition, as Arrow record batches (`roster.spark.reading`); executors
  never join the group.
"""
from __future__ import annotations

import logging
import time

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from roster.spark import offsets as O
from roster.spark.options import (
    EARLIEST,
    LATEST,
    Settings,
    read_settings,
    write_settings,
)
from roster.spark.reading import DataLossError, RangePartition, lost_message, read_range
from roster.spark.stopping import StopsOnSigterm
from roster.spark.wire import Broker, run_sync

log = logging.getLogger("roster.spark")

SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
          "timestamp timestamp, timestampType int, "
          "headers array<struct<key:string,value:binary>>")


APPEND_ONLY = ('the roster sink appends records to topics and cannot overwrite them: write with '
               'df.write.format("roster").mode("append"). (Spark refuses its default mode, '
               'ErrorIfExists, for Python data sources, so the mode must be given.)')


class RosterDataSource(DataSource):
    """Format `roster`: spark.read / readStream / write / writeStream."""

    @classmethod
    def name(cls) -> str:
        return "roster"

    def schema(self) -> str:
        if self._share_group():
            from roster.spark.share_source import SHARE_SCHEMA
            return SHARE_SCHEMA
        return SCHEMA

    def _share_group(self) -> bool:
        """A read of a share group (option shareGroup) instead of a consumer group."""
        return any(key.lower() in ("sharegroup", "kafka.sharegroup") for key in self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        return RosterBatchReader(read_settings(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        settings = read_settings(self.options, streaming=True)
        if settings.share_group is not None:
            from roster.spark.share_source import RosterShareStreamReader
            return RosterShareStreamReader(settings)
        return RosterStreamReader(settings)

    def writer(self, schema: StructType, overwrite: bool):
        # Only mode("append") gets here meaningfully: Spark itself refuses ErrorIfExists (the
        # default) and Ignore for every Python data source, before any of this code runs.
        # Overwrite does reach us; a topic's records cannot be replaced, so refuse it (as Spark's
        # Kafka sink does) rather than append in silence.
        if overwrite:
            from roster.spark.options import OptionError
            raise OptionError(APPEND_ONLY)
        from roster.spark.sink import RosterBatchWriter
        return RosterBatchWriter(write_settings(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool):
        from roster.spark.sink import RosterStreamWriter
        return RosterStreamWriter(write_settings(self.options), schema)


def _partition(s: Settings, tp, start: int, end: int) -> RangePartition:
    return RangePartition(s.bootstrap, s.client_id, tp[0], tp[1], start, end,
                          s.max_partition_fetch_bytes, s.fetch_max_wait_ms, s.fail_on_data_loss,
                          s.security, s.isolation_level, s.request_timeout_ms)


# -- batch ----------------------------------------------------------------------------------------

class RosterBatchReader(DataSourceReader):
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def partitions(self) -> list[RangePartition]:
        s = self.settings
        planned = run_sync(_plan_batch, s, bootstrap=s.bootstrap, client_id=s.client_id,
                           security=s.security, isolation_level=s.isolation_level)
        return [_partition(s, tp, start, end) for tp, start, end in planned]

    def read(self, partition: RangePartition):
        if not isinstance(partition, RangePartition):
            # nothing to read: pyspark turns an empty partitions() into one InputPartition(None)
            return iter(())
        return read_range(partition)


async def _plan_batch(broker: Broker, s: Settings):
    counts = await broker.resolve(s.subscribe, s.subscribe_pattern, s.matches)
    tps = [(t, p) for t, n in sorted(counts.items()) for p in range(n)]
    if not tps:
        return []
    earliest = await broker.list_offsets(tps, EARLIEST)
    latest = await broker.list_offsets(tps, LATEST)
    committed = {}
    if s.starting.kind == "group":
        committed = {tp: o for tp, (o, _) in (await broker.committed(s.group_id, tps)).items()}
    planned = []
    for tp in tps:
        start = committed.get(tp, -1)
        if start < 0:
            start = s.starting.fallback(tp)
        start = earliest[tp] if start == EARLIEST else start
        end = latest[tp] if s.ending is None else s.ending.get(tp, LATEST)
        end = latest[tp] if end == LATEST else end
        if start < earliest[tp]:
            if s.fail_on_data_loss:
                raise DataLossError(lost_message(tp, start, earliest[tp]))
            start = earliest[tp]
        if end > latest[tp]:
            raise DataLossError(f"endingOffsets for {tp[0]}-{tp[1]} is {end}, beyond the log end "
                                f"{latest[tp]}")
        if end > start:
            planned.append((tp, start, end))
    return planned


# -- streaming ----------------------------------------------------------------------------------

class RosterStreamReader(StopsOnSigterm, DataSourceStreamReader,
                         SupportsTriggerAvailableNow):
    """Offsets are {"topic": {"partition": next offset}} over the partitions this reader owns
    in the group. Between micro-batches the assignment may change: lost partitions drop out of
    the next end offset; gained ones enter at the group's committed offset (else the
    startingOffsets policy) and are read from the batch after."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._session = None
        self._initial: dict | None = None
        self._target: dict | None = None
        self._plan_generation: int | None = None
        self._topics: dict[str, int] = {}
        self._topics_checked = 0.0
        self._previous_sigterm = None
        self._stopping = False
        self._log_ends: dict = {}

    # Executors get a pickled copy of the planner's instance: no threads or sockets in it.
    def __getstate__(self):
        state = dict(self.__dict__)
        state.update(_session=None, _previous_sigterm=None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    # -- the group session, lazily --------------------------------------------------------------

    def _io(self):
        if self._session is None:
            from roster.spark.group import GroupSession
            if self.settings.group_id_generated:
                log.warning("no group.id given: joining a group of this run's own (%s); its "
                            "committed offsets will not be found by a restarted query",
                            self.settings.group_id)
            self._session = GroupSession(self.settings)
            self._install_sigterm_handler()
        return self._session

    def _member(self):
        """The joined session, or None while there is nothing to subscribe to (a pattern
        that matches no topic yet)."""
        session = self._io()
        if session.member is None:
            if self.settings.subscribe_pattern is None:
                topics = sorted(self.settings.subscribe)   # existing or not: the group copes
            else:
                self._topics = self._resolve_topics()
                topics = sorted(self._topics)
            if not topics:
                return None
            session.join(topics)
            if session.stable_snapshot(self.settings.join_timeout_ms / 1000) is None:
                log.warning("group %s: not stable after %.0fs; planning without partitions "
                            "for now", self.settings.group_id,
                            self.settings.join_timeout_ms / 1000)
        elif self.settings.subscribe_pattern is not None and \
                time.monotonic() - self._topics_checked > self.settings.metadata_max_age_ms / 1000:
            topics = self._resolve_topics()
            if sorted(topics) != sorted(self._topics):
                log.info("subscribePattern now matches %s", sorted(topics))
                self._topics = topics
                session.resubscribe(sorted(topics))
        if session.fatal:
            raise RuntimeError(f"group {self.settings.group_id}: {session.fatal}")
        return session

    def _resolve_topics(self) -> dict[str, int]:
        s = self.settings
        self._topics_checked = time.monotonic()
        return self._io().run(self._io().broker.resolve(s.subscribe, s.subscribe_pattern,
                                                        s.matches))

    # -- Spark's calls --------------------------------------------------------------------------

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.settings.max_offsets_per_trigger:
            return ReadMaxRows(self.settings.max_offsets_per_trigger)
        return ReadAllAvailable()

    def initialOffset(self) -> dict:
        """Start positions of the partitions owned after joining (Spark calls this only when
        there is no checkpoint, and twice: the first answer is kept)."""
        if self._initial is None:
            session = self._member()
            if session is None:     # no topic matches yet: partitions enter as gained
                self._initial = {}
                return self._initial
            generation, owned = session.stable_snapshot(self.settings.join_timeout_ms / 1000) \
                or (None, ())
            positions = self._start_positions(list(owned), consult_group=(
                self.settings.starting.kind == "group"))
            session.started_at(positions)
            session.completed(positions)
            self._plan_generation = generation
            self._initial = O.to_json(positions)
        return self._initial

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = O.from_json(start)
        # `start` is the end of the last completed batch: what this reader has processed.
        # Record that first: a revocation in progress may be waiting for exactly that.
        if self._session is not None:
            self._session.completed(begin)
        session = self._member()
        if session is None:
            return start
        session.completed(begin)
        session.commit(begin)
        snapshot = session.stable_snapshot(self.settings.join_timeout_ms / 1000)
        if snapshot is None:
            return start                      # mid-rebalance: no new batch this trigger
        generation, owned = snapshot
        owned = set(owned)
        kept = [tp for tp in begin if tp in owned]
        if generation != self._plan_generation and kept:
            # Someone else may have owned these since the last plan and gone further: such a
            # partition leaves the offsets for a batch and re-enters at the committed offset.
            committed = session.committed(kept)
            moved = [tp for tp in kept if committed.get(tp, -1) > begin[tp]]
            if moved:
                log.info("group %s: %s progressed elsewhere; rejoining them at the group's "
                         "offsets", self.settings.group_id, moved)
            kept = [tp for tp in kept if tp not in moved]
        gained_tps = sorted(tp for tp in owned if tp not in begin)
        gained = self._start_positions(gained_tps, consult_group=True) if gained_tps else {}
        latest = self._latest(kept)
        self._log_ends = dict(latest)
        for tp in kept:
            if latest[tp] < begin[tp] and self.settings.fail_on_data_loss:
                raise DataLossError(f"{tp[0]}-{tp[1]}: the log ends at {latest[tp]}, before "
                                    f"offset {begin[tp]} already read (was the topic "
                                    f"recreated?). Set failOnDataLoss=false to carry on.")
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = O.plan_end(begin, kept, gained, latest, max_rows, self._target)
        session.started_at(gained)
        session.planning(begin, end)
        self._plan_generation = generation
        return O.to_json(end)

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: read up to the log ends as of now, for every partition of the
        subscribed topics (including partitions gained later in the run)."""
        session = self._io()
        topics = self._resolve_topics()
        tps = [(t, p) for t, n in topics.items() for p in range(n)]
        self._target = session.run(session.broker.list_offsets(tps, LATEST)) if tps else {}

    def reportLatestOffset(self) -> dict | None:
        """The log ends seen when planning the last batch (Spark shows them in progress)."""
        return O.to_json(self._log_ends) if self._log_ends else None

    def partitions(self, start: dict, end: dict) -> list[RangePartition]:
        begin, until = O.from_json(start), O.from_json(end)
        if self._session is not None:
            self._session.planning(begin, until)
        return [_partition(self.settings, tp, a, b) for tp, a, b in O.ranges(begin, until)]

    def read(self, partition: RangePartition):
        return read_range(partition)

    def commit(self, end: dict) -> None:
        if self._session is None:
            return  # nothing joined in this run yet: the next latestOffset commits
        offsets = O.from_json(end)
        self._session.completed(offsets, batch_over=False)
        self._session.commit(offsets)

    def stop(self) -> None:
        if self._session is not None:
            self._session.close()

    # -- helpers --------------------------------------------------------------------------------

    def _latest(self, tps) -> dict:
        if not tps:
            return {}
        session = self._io()
        return session.run(session.broker.list_offsets(tps, LATEST))

    def _start_positions(self, tps, consult_group: bool) -> dict:
        """Committed offsets (when asked) else the startingOffsets policy."""
        if not tps:
            return {}
        session = self._io()
        positions = {}
        if consult_group:
            positions = {tp: o for tp, o in session.committed(tps).items() if o >= 0}
        wanted = {tp: self.settings.starting.fallback(tp) for tp in tps if tp not in positions}
        for which in (EARLIEST, LATEST):
            ask = [tp for tp, o in wanted.items() if o == which]
            if ask:
                positions.update(session.run(session.broker.list_offsets(ask, which)))
        positions.update({tp: o for tp, o in wanted.items() if o >= 0})
        return positions
