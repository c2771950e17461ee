"""`broker.share_state`: the share partitions of the broker, as the membership side (B's
share_group.py effects), the fetch path (ShareFetch/ShareAcknowledge) and the offsets APIs
(Describe/Alter/DeleteShareGroupOffsets) use them.

The share coordinator (roster.share.coordinator, pure) runs on the broker's one coordinator
runtime with __share_group_state (state_log.py) as its sink: its acquisition-lock timers are
the runtime's, an acknowledgement is answered once its record is fsynced, and a restart replays
the topic (acquired records come back AVAILABLE, delivery counts as last written).

Partitions are keyed (group id, topic id: uuid.UUID, partition). A group's values (lock
duration, delivery limit, record locks, renew, auto offset reset, dead-letter queue) are its
group configs (share.* / errors.deadletterqueue.*), else the broker's settings.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable

from roster.broker.coordinator_runtime import CoordinatorRuntime
from roster.broker.share.dlq import DeadLetterQueue

try:    # the share group type's configs (the membership side's module)
    from roster.broker.groups.share_configs import group_value as share_group_value
except ImportError:     # not there yet: the group config store is read directly
    share_group_value = None
from roster.broker.share.state_log import ShareStateLog
from roster.observability.share_records_recorder import ShareRecordsRecorder
from roster.protocol.errors import ErrorCode
from roster.share import offset_reset
from roster.share.coordinator import (
    AckOutcome,
    Answer,
    Available,
    DeadLetters,
    Key,
    ShareCoordinator,
)
from roster.share.partition import Acquired, Limits

log = logging.getLogger("roster.share")


class ShareState:
    def __init__(self, broker, config) -> None:
        self._broker = broker
        self._config = config
        self.log = ShareStateLog(broker, config["share.coordinator.state.topic.num.partitions"],
                                 config["share.coordinator.state.topic.segment.bytes"])
        self.coordinator = ShareCoordinator(
            self.limits, config["share.coordinator.snapshot.update.records.per.snapshot"] or 1)
        # what became of records (locks expired, archived at the limit, dead letters) as
        # flight recorder events of the group, once the records they describe are durable
        self.recorder = ShareRecordsRecorder(self._topic_name)
        self.runtime = CoordinatorRuntime(self.coordinator, self.log, time.time,
                                          derive_events=self.recorder.derive)
        self.runtime.on_events = self._publish_events
        self.runtime.effects[Available] = lambda effect: self.wakeup(effect.key)
        self.runtime.effects[DeadLetters] = self._dead_letters
        self._prune_interval_s = config["share.coordinator.state.topic.prune.interval.ms"] / 1000
        # called with (key) when records of a partition become AVAILABLE again (released, or
        # their lock expired): the fetch path wakes its parked requests
        self.on_available: list[Callable[[Key], None]] = []
        # the dead-letter queue writer (dlq.py): (key, entries) -> None
        self.dead_letter_queue = DeadLetterQueue(broker, self)
        self.loaded = False

    def _topic_name(self, topic_id) -> str | None:
        topic = self._broker.topics.by_id(topic_id)
        return None if topic is None else topic.name

    def _publish_events(self, events: list) -> None:
        """To wherever the group runtime's events go (the events topic, the console)."""
        groups = getattr(self._broker, "groups", None)
        on_events = getattr(groups, "on_events", None)
        if on_events is not None:
            on_events(events)

    def dead_lettered(self, key: Key, entries, topic: str, partition: int) -> None:
        """dlq.py wrote `entries` of `key` to `topic`-`partition`: counted, and an event."""
        self.coordinator.dead_lettered(key, len(entries))
        events = self.recorder.dead_lettered(key, entries, topic, partition,
                                             self.runtime.now_ms())
        if events:
            self._publish_events(events)

    # -- life cycle -------------------------------------------------------------------------

    def load(self) -> list[asyncio.Task]:
        replayed = 0
        for record in self.log.load():
            self.coordinator.replay(record)
            replayed += 1
        self.coordinator.loaded()
        if replayed:
            log.info("replayed %d __share_group_state records: %d share partitions", replayed,
                     len(self.coordinator.partitions))
        self.loaded = True
        return [asyncio.ensure_future(self._prune_forever())]

    async def stop(self) -> None:
        await self.log.stop()
        self.runtime.close()

    async def _prune_forever(self) -> None:
        while True:
            await asyncio.sleep(self._prune_interval_s)
            try:
                await self.snapshot_and_prune()
            except Exception:       # a bug must not stop the pass for good
                log.exception("pruning __share_group_state failed")

    async def snapshot_and_prune(self) -> int:
        """Write a snapshot of every share partition, then drop what precedes them."""
        if not self.coordinator.partitions:
            return self.log.prune()
        token = self.runtime.new_token()
        result = self.coordinator.snapshot_all(self.runtime.now_ms())
        result.after_write.append(Answer(token, AckOutcome(None)))
        outcome = await self.runtime.run(lambda now: result, token)
        return self.log.prune() if outcome.error is None else 0

    # -- group values -----------------------------------------------------------------------

    def group_value(self, group_id: str, name: str, broker_setting: str | None, default=None):
        """A group's config `name`, else the broker's `broker_setting`, else `default`."""
        if share_group_value is not None:
            try:
                return share_group_value(self._broker, group_id, name)
            except KeyError:
                pass
        own = self._broker.group_configs.own(group_id)
        if name in own and own[name] is not None:
            return own[name]
        if broker_setting is not None:
            return self._config[broker_setting]
        return default

    def limits(self, group_id: str) -> Limits:
        renew = self.group_value(group_id, "share.renew.acknowledge.enable", None, True)
        if isinstance(renew, str):
            renew = renew.strip().lower() == "true"
        return Limits(
            delivery_count_limit=int(self.group_value(
                group_id, "share.delivery.count.limit", "group.share.delivery.count.limit")),
            lock_duration_ms=self.lock_duration_ms(group_id),
            max_record_locks=int(self.group_value(
                group_id, "share.partition.max.record.locks",
                "group.share.partition.max.record.locks")),
            renew_enabled=bool(renew))

    def lock_duration_ms(self, group_id: str) -> int:
        """The acquisition lock's duration (ShareFetch's AcquisitionLockTimeoutMs)."""
        return int(self.group_value(group_id, "share.record.lock.duration.ms",
                                    "group.share.record.lock.duration.ms"))

    # -- the membership side (B) -----------------------------------------------------------

    def initialize(self, group_id: str, partitions: Iterable[tuple[uuid.UUID, int]]):
        """Initialise the group's share partitions not yet initialised, each at the offset its
        share.auto.offset.reset gives now (idempotent). They serve at once; the awaitable
        returned (None when there was nothing to do) is done once they are durable, for a
        caller that assigns partitions only then, as Kafka does."""
        reset = None
        writes = []
        for topic_id, index in partitions:
            key = (group_id, topic_id, index)
            if self.coordinator.get(key) is not None:
                continue
            if reset is None:
                reset = self._reset_of(group_id)
            start = self._reset_offset(topic_id, index, reset)
            if start is None:
                continue
            token = self.runtime.new_token()
            written = self.runtime.start(
                lambda now, key=key, start=start, token=token:
                    self.coordinator.initialize(key, start, now, token), token)
            if isinstance(written, asyncio.Future):
                writes.append(written)
        return asyncio.gather(*writes) if writes else None

    def _reset_of(self, group_id: str) -> offset_reset.OffsetReset:
        try:
            return offset_reset.parse(self.group_value(group_id, "share.auto.offset.reset",
                                                       None, "latest"))
        except ValueError:
            return offset_reset.LATEST

    def _partition_log(self, topic_id: uuid.UUID, index: int):
        topic = self._broker.topics.by_id(topic_id)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def _reset_offset(self, topic_id, index, reset: offset_reset.OffsetReset) -> int | None:
        target = self._partition_log(topic_id, index)
        if target is None:
            return None
        if reset.strategy == "earliest":
            return target.log_start_offset
        if reset.strategy == "by_duration":
            found = target.offset_for_timestamp(self._broker.now_ms() - reset.duration_ms)
            if found is not None:
                return found.offset
        return target.log_end_offset

    def group_deleted(self, group_id: str) -> None:
        """DeleteGroups took the group: its share state is dropped, durably."""
        keys = self.coordinator.keys_of(group_id)
        self.recorder.forget(group_id)
        if keys:
            self.runtime.apply(self.coordinator.delete(keys, self.runtime.now_ms()))

    def topic_deleted(self, topic_id: uuid.UUID):
        """A topic was deleted: every group's share state for it goes (tombstones), as Kafka's
        group coordinator cleans up a deleted topic's share state. Returns what to await for
        the tombstones to be durable (None: there was nothing)."""
        keys = [k for k in self.coordinator.partitions if k[1] == topic_id]
        if not keys:
            return None
        token = self.runtime.new_token()
        written = self.runtime.start(lambda now: self.coordinator.delete(keys, now, token),
                                     token)
        return written if isinstance(written, asyncio.Future) else None

    # -- the fetch path (C2) ---------------------------------------------------------------

    def start_offset(self, key: Key) -> int | None:
        partition = self.coordinator.get(key)
        return None if partition is None else partition.start

    def next_fetch_offset(self, key: Key) -> int:
        """Where the next read of the log starts (after following the log's start, should
        retention have passed the SPSO)."""
        partition = self.coordinator.get(key)
        if partition is None:
            return 0
        target = self._partition_log(key[1], key[2])
        if partition.start < 0:     # altered to a negative offset: start as a new partition
            start = self._reset_offset(key[1], key[2], self._reset_of(key[0]))
            if start is not None:
                self.runtime.apply(self.coordinator.alter(key, start, self.runtime.now_ms()))
            return partition.next_fetch_offset()
        if target is not None and target.log_start_offset > partition.start:
            self.runtime.apply(self.coordinator.move_start_to(key, target.log_start_offset,
                                                              self.runtime.now_ms()))
        return partition.next_fetch_offset()

    def acquire(self, key: Key, member_id: str, batches, max_records: int, strict: bool,
                now_ms: int | None = None) -> list[Acquired]:
        """Acquire records of `batches` ((base offset, last offset) of the batches read from
        next_fetch_offset(key), in order) for the member; in memory only, each under an
        acquisition lock. The read and this call must happen in one step (no await between):
        offsets of the window between next_fetch_offset(key) and the first batch, and between
        two batches, are taken as absent from the log (compacted, control or aborted
        records) and count as delivered."""
        now = self.runtime.now_ms() if now_ms is None else now_ms
        acquired, result = self.coordinator.acquire(key, member_id, batches, max_records,
                                                    strict, now)
        if result.timers:
            self.runtime.apply(result)
        return acquired

    async def acknowledge(self, key: Key, member_id: str, batches, now_ms: int | None = None
                          ) -> ErrorCode | None:
        """Apply acknowledgements ((first, last, [types]) each); answered once durable."""
        outcome = await self.acknowledge_outcome(key, member_id, batches, now_ms)
        return outcome.error

    async def acknowledge_outcome(self, key: Key, member_id: str, batches,
                                  now_ms: int | None = None) -> AckOutcome:
        """As acknowledge, with Kafka's message beside the error."""
        token = self.runtime.new_token()
        return await self.runtime.run(
            lambda now: self.coordinator.acknowledge(
                key, member_id, [(f, l, list(t)) for f, l, t in batches],
                now if now_ms is None else now_ms, token), token)

    def release_member_records(self, group_id: str, member_id: str,
                               keys: Iterable[Key] | None = None) -> None:
        """Release what the member holds (in `keys` only, when given): its session closed."""
        self.runtime.apply(self.coordinator.release_member(
            group_id, member_id, None if keys is None else list(keys), self.runtime.now_ms()))

    def wakeup(self, key: Key) -> None:
        for hook in list(self.on_available):
            hook(key)

    # -- the offsets APIs (Describe/Alter/DeleteShareGroupOffsets) -------------------------

    def describe(self, group_id: str, topic_id: uuid.UUID, index: int
                 ) -> tuple[int, int] | None:
        """(start offset, lag) of an initialised share partition, else None, as Kafka 4.4
        answers them from what its share coordinator wrote: -1 and -1 until the partition's
        first write after initialisation, then the start it had at its latest write. The lag
        is the records from the SPSO to the partition's end not yet delivered (KIP-1226)."""
        key = (group_id, topic_id, index)
        partition = self.coordinator.get(key)
        if partition is None:
            return None
        described = self.coordinator.described_start(key)
        if described == -1:     # not written since initialised (or altered to -1)
            return -1, -1
        target = self._partition_log(topic_id, index)
        end = target.log_end_offset if target is not None else partition.end
        # not clamped: a start altered past the end shows a negative lag, as Kafka's does. The
        # lag is the same whether counted from the start as written or as it is now: the
        # offsets between them are all delivered
        return described, end - partition.start - partition.delivery_complete_count()

    def keys_of(self, group_id: str) -> list[Key]:
        return self.coordinator.keys_of(group_id)

    async def alter(self, group_id: str, topic_id: uuid.UUID, index: int,
                    start_offset: int) -> ErrorCode | None:
        key = (group_id, topic_id, index)
        token = self.runtime.new_token()
        outcome = await self.runtime.run(
            lambda now: self.coordinator.alter(key, start_offset, now, token), token)
        self.wakeup(key)
        return outcome.error

    async def delete(self, group_id: str, keys: Iterable[Key]) -> ErrorCode | None:
        token = self.runtime.new_token()
        chosen = [k for k in keys if k[0] == group_id]
        outcome = await self.runtime.run(
            lambda now: self.coordinator.delete(chosen, now, token), token)
        return outcome.error

    # -- dead letters ----------------------------------------------------------------------

    def _dead_letters(self, effect: DeadLetters) -> None:
        if self.dead_letter_queue is not None:
            try:
                self.dead_letter_queue(effect.key, effect.entries)
            except Exception:       # the record is archived regardless, as in Kafka
                log.exception("cannot write dead letters of %s", effect.key)
