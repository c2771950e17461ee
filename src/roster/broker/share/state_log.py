"""`__share_group_state`: where share partitions' states become durable, and where a restarted
broker reads them back. The share coordinator's sink on the coordinator runtime
(broker/coordinator_runtime.py); the topic, the append and the fsync are internal_topic.py's.

A share partition's records go to the state partition of its coordinator key,
"<group>:<topic id>:<partition>" (Kafka's SharePartitionKey, the topic id in Kafka's base64
form), by Java's hash as every internal topic maps keys. An operation's records for one state
partition are one batch, answered once fsynced.

The topic is not compacted (Kafka's is cleanup.policy=delete): replay needs a partition's
latest snapshot and every update after it, so `prune` moves each state partition's log start
to the oldest latest-snapshot of the share partitions it holds (Kafka's
ShareCoordinatorOffsetsManager does the same), after the coordinator wrote fresh snapshots.
"""
from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from collections.abc import Callable

from roster.broker.partitions.internal_topic import InternalTopic, records_batch
from roster.log.api import LogError
from roster.protocol.errors import ErrorCode
from roster.share.records import SNAPSHOT, ShareRecord, ShareRecordError, decode

log = logging.getLogger("roster.share")

STATE_TOPIC = "__share_group_state"
MAX_RECORD_BATCH = 8 << 20
# an operation writes one record per share partition it changed; only the periodic snapshot
# pass writes many, which need not be one batch
RECORDS_PER_BATCH = 64


def kafka_uuid(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: base64 (URL-safe) without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


def coordinator_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    return f"{group_id}:{kafka_uuid(topic_id)}:{partition}"


class ShareStateLog:
    def __init__(self, broker, partitions: int, segment_bytes: int) -> None:
        self._broker = broker
        self.topic = InternalTopic(
            broker, STATE_TOPIC, partitions,
            {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1",
             "segment.bytes": str(segment_bytes)},
            setting="share.coordinator.state.topic.num.partitions")
        self.partitions = partitions
        self._writing: set[asyncio.Task] = set()
        # state partition -> {share partition key: offset of its latest snapshot}
        self._snapshots: dict[int, dict[tuple, int]] = {}

    def exists(self) -> bool:
        return self.topic.exists()

    def index_of(self, record: ShareRecord) -> int:
        return self.topic.partition_for(
            coordinator_key(record.group_id, record.topic_id, record.partition))

    def write(self, records: list[ShareRecord], done: Callable[[ErrorCode | None], None],
              revert: Callable[[], None] | None = None) -> None:
        """Append the records (one batch per state partition); done(None) once durable, an
        error if any cannot be written (the runtime then puts the change back)."""
        by_index: dict[int, list[ShareRecord]] = {}
        for record in records:
            by_index.setdefault(self.index_of(record), []).append(record)
        ends = []
        try:
            self.topic.ensure()
            now = self._broker.now_ms()
            for index, chosen in by_index.items():
                # one batch per state partition, but for a periodic pass over many partitions
                for at in range(0, len(chosen), RECORDS_PER_BATCH):
                    part = chosen[at:at + RECORDS_PER_BATCH]
                    batch = records_batch([(*r.encode(), now) for r in part], MAX_RECORD_BATCH)
                    target, appended = self.topic.append(index, batch, len(part))
                    ends.append((target, appended.last_offset + 1))
                    self._note(index, part, appended.last_offset - len(part) + 1)
        except LogError as exc:
            log.error("cannot write %s: %s", STATE_TOPIC, exc)
            done(ErrorCode.coordinator_not_available)
            return
        task = asyncio.ensure_future(self._durable(ends, done))
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    def _note(self, index: int, records: list[ShareRecord], first_offset: int) -> None:
        snapshots = self._snapshots.setdefault(index, {})
        for offset, record in enumerate(records, first_offset):
            key = (record.group_id, record.topic_id, record.partition)
            if record.tombstone:
                snapshots.pop(key, None)
            elif record.kind == SNAPSHOT:
                snapshots[key] = offset

    async def _durable(self, ends, done: Callable[[ErrorCode | None], None]) -> None:
        try:
            for target, end in ends:
                await self.topic.make_durable(target, end)
        except LogError as exc:
            log.error("cannot write %s: %s", STATE_TOPIC, exc)
            done(ErrorCode.coordinator_not_available)
            return
        done(None)

    async def stop(self) -> None:
        for task in list(self._writing):
            task.cancel()
        await asyncio.gather(*self._writing, return_exceptions=True)

    def prune(self) -> int:
        """Drop what precedes every share partition's latest snapshot, state partition by
        state partition; returns the records dropped."""
        dropped = 0
        if not self.exists():
            return 0
        for index in range(self.partitions):
            target = self.topic.log(index)
            if target is None:
                continue
            snapshots = self._snapshots.get(index)
            keep_from = min(snapshots.values()) if snapshots else target.log_end_offset
            if keep_from > target.log_start_offset:
                before = target.log_start_offset
                try:
                    target.advance_log_start(keep_from)
                except (LogError, OSError) as exc:
                    log.warning("cannot prune %s-%d: %s", STATE_TOPIC, index, exc)
                    continue
                dropped += target.log_start_offset - before
        return dropped

    def load(self):
        """Every record of the topic, state partition by state partition, oldest first, topic
        ids as uuid.UUID. Unreadable records are logged and skipped."""
        if not self.exists():
            return
        self.topic.ensure()     # a changed partition count stops the start, in one line
        for index in range(self.partitions):
            for batch in self.topic.batches(index):
                for entry in batch:
                    if entry.key is None:
                        continue
                    try:
                        record = decode(entry.key, entry.value)
                    except ShareRecordError as exc:
                        log.warning("skipping %s-%d offset %d: %s", STATE_TOPIC, index,
                                    entry.offset, exc)
                        continue
                    record = _with_uuid(record)
                    self._note(index, [record], entry.offset)
                    yield record


def _with_uuid(record: ShareRecord) -> ShareRecord:
    from dataclasses import replace
    return replace(record, topic_id=uuid.UUID(bytes=bytes(record.topic_id)))
