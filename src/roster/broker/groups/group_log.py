"""`__consumer_offsets`: where the coordinator's records become durable, and where a restarted
broker reads them back.

Writes are group-committed: records from every operation that arrives while the event loop is
busy (or within `group.coordinator.append.linger.ms`, when set) go into record batches per
partition, written back to back and made durable by one shared fsync, and only then are the
operations' replies released. The records are ordinary magic-v2 batches in Kafka's key/value
layouts, so kcat, Burrow or any consumer can read the topic.

One operation's records are all or nothing across a crash, as Kafka's CoordinatorRuntime
writes them: they always go into one batch (a batch is one write, and recovery keeps a batch
whole or cuts it, by its CRC), never split over two. Operations share a batch while it stays
under BATCH_TARGET_BYTES; one that would take it past that starts a new batch, and one larger
than that on its own gets a batch to itself, up to the topic's max.message.bytes: as on
Kafka, that follows the broker's message.max.bytes (1048588 by default) unless set on the
topic, and an operation past it fails alone, answered UNKNOWN_SERVER_ERROR as Kafka's
coordinator answers its RecordTooLargeException (a classic group's record passes 1 MiB at
some 6,500 members: Kafka's SyncGroup fails there, and so does roster's).
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import struct
from collections import defaultdict
from collections.abc import Callable

from roster.broker.partitions.crash_points import KILL_AFTER_GROUP_WRITES, CrashPoint
from roster.broker.partitions.internal_topic import InternalTopic, records_batch
from roster.log.api import LogError, LogStorageError, RecordTooLarge
from roster.log.control import marker_commit
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import (
    OffsetCommit,
    OffsetCommitReader,
    Record,
    RecordFormatError,
    decode,
)

log = logging.getLogger("roster.groups")

OFFSETS_TOPIC = "__consumer_offsets"
BATCH_TARGET_BYTES = 1 << 20      # start a new batch past this, like a producer's batch.size
INTERNAL_MAX_BATCH = 64 << 20     # what encode_operation allows when no limit is given
RECORD_OVERHEAD = 32              # a record's framing at most, beside its key and value
BATCH_OVERHEAD = 61               # a v2 batch header
# segment.bytes comes from offsets.topic.segment.bytes when the topic is created (ensure_topic)
# (max.message.bytes is not set: the broker's message.max.bytes applies, as on Kafka; a topic
# made by roster before 1db7245 keeps the 64 MiB it was made with)
INTERNAL_CONFIGS = {"cleanup.policy": "compact"}
LOAD_CHUNK_BYTES = 1 << 20
LOAD_YIELD_RECORDS = 20_000   # let requests in (they get LOAD_IN_PROGRESS) this often
Done = Callable[[ErrorCode | None], None]
Revert = Callable[[], None]
Encoded = list[tuple[bytes, bytes | None]]


class _Operation:
    """One operation's write: done once every partition it wrote to has finished (first error
    wins); reverted at most once, and always before `done` hears of a failure."""

    __slots__ = ("seq", "_done", "_revert", "_left", "_error", "_reverted")

    def __init__(self, seq: int, done: Done, revert: Revert | None, parts: int) -> None:
        self.seq = seq
        self._done = done
        self._revert = revert
        self._left = parts
        self._error: ErrorCode | None = None
        self._reverted = False

    def revert(self) -> None:
        if not self._reverted:
            self._reverted = True
            if self._revert is not None:
                self._revert()

    def finish(self, error: ErrorCode | None) -> None:
        self._error = self._error or error
        self._left -= 1
        if self._left == 0:
            self._done(self._error)


def fail_together(failed: list[tuple[_Operation, ErrorCode]]) -> None:
    """Fail operations that built on each other: every one is reverted, newest first, before any
    of them is answered or continued, so each undo finds the state its operation left (Kafka
    reverts its timeline to the failed batch's offset at once, which is the same)."""
    for operation in sorted({op for op, _ in failed}, key=lambda op: op.seq, reverse=True):
        operation.revert()
    for operation, error in sorted(failed, key=lambda entry: entry[0].seq):
        operation.finish(error)


# Every error a failed write reports to the coordinator: already the one its clients are told.
CLIENT_WRITE_ERRORS = frozenset({ErrorCode.not_coordinator, ErrorCode.unknown_server_error})


def _storage_error(exc: LogError) -> ErrorCode:
    """How Kafka's coordinator maps a failed append for the client (NOT_COORDINATOR makes it
    rediscover and retry; a too-large write cannot succeed by retrying)."""
    if isinstance(exc, RecordTooLarge):
        return ErrorCode.unknown_server_error
    return ErrorCode.not_coordinator


class GroupLog:
    def __init__(self, broker, partitions: int, linger_ms: int) -> None:
        self._broker = broker
        self.topic = InternalTopic(
            broker, OFFSETS_TOPIC, partitions,
            {**INTERNAL_CONFIGS, "segment.bytes": str(broker.config["offsets.topic.segment.bytes"])},
            setting="offsets.topic.num.partitions")
        self.partitions = partitions
        self._linger_s = max(linger_ms, 0) / 1000
        self._pending: defaultdict[int, list[tuple[Encoded, _Operation]]] = defaultdict(list)
        self._flushes: dict[int, asyncio.Future] = {}   # partition -> its flush, while it runs
        self._seq = itertools.count()   # the order operations were decided in
        self.batch_target_bytes = BATCH_TARGET_BYTES
        self._crash_point = CrashPoint(KILL_AFTER_GROUP_WRITES)   # tests only

    def partition_for(self, group_id: str) -> int:
        return self.topic.partition_for(group_id)

    def ensure_topic(self) -> None:
        self.topic.ensure()

    def max_batch_bytes(self) -> int:
        """The largest batch the topic takes: its max.message.bytes (the broker's
        message.max.bytes unless the topic sets its own)."""
        topics = self._broker.topics
        topic = topics.get(OFFSETS_TOPIC)
        if topic is None:
            return self._broker.config["message.max.bytes"]
        return topics.settings(topic)["max.message.bytes"]

    # -- writing -----------------------------------------------------------------------

    def write(self, records: list[Record], done: Done, revert: Revert | None = None) -> None:
        """Queue one operation's records; `done(error)` once they are durable (None) or failed.
        On a failure `revert` is called first, newest operation first with every other
        operation failing beside it (see _fail_from), before any of them hears `done`.

        The records are encoded here, as the operation is decided: one that cannot be written
        (its metadata past an int16 length, or larger than any batch) fails at once, before a
        later operation can build on it, as Kafka's runtime fails it while appending."""
        by_partition: defaultdict[int, list[Record]] = defaultdict(list)
        for record in records:
            by_partition[self.partition_for(record.key.group)].append(record)
        max_bytes = self.max_batch_bytes()
        try:
            encoded = {partition: encode_operation(part_records, max_bytes)
                       for partition, part_records in by_partition.items()}
        except RecordTooLarge:
            fail_together([(_Operation(next(self._seq), done, revert, 1),
                            ErrorCode.unknown_server_error)])
            return
        operation = _Operation(next(self._seq), done, revert, len(encoded))
        loop = asyncio.get_running_loop()
        for partition, part_records in encoded.items():
            first = not self._pending[partition]
            self._pending[partition].append((part_records, operation))
            if first and partition not in self._flushes:
                if self._linger_s:
                    loop.call_later(self._linger_s, self._start_flush, partition)
                else:
                    loop.call_soon(self._start_flush, partition)

    def _start_flush(self, partition: int) -> None:
        if partition in self._flushes or not self._pending[partition]:
            return
        self._flushes[partition] = asyncio.ensure_future(self._flush(partition))

    async def drained(self) -> None:
        """Return once every queued write has been written or has failed, its operations
        answered and continued (a continuation's own write included): when memory and the log
        agree again. A write still lingering is started now."""
        while any(self._pending.values()) or self._flushes:
            for partition in [p for p, queued in self._pending.items() if queued]:
                self._start_flush(partition)
            await asyncio.gather(*self._flushes.values())

    async def _flush(self, partition: int) -> None:
        try:
            while self._pending[partition]:
                waiting, self._pending[partition] = self._pending[partition], []
                try:
                    failed_from, error = await self._write_durably(
                        partition, [records for records, _ in waiting])
                except Exception:  # a bug must not leave the operations without an answer
                    log.exception("writing group records to %s-%d failed", OFFSETS_TOPIC,
                                  partition)
                    failed_from, error = 0, ErrorCode.unknown_server_error
                if failed_from is None:
                    for _, operation in waiting:
                        operation.finish(None)
                else:
                    self._fail_from(partition, waiting, failed_from, error)
        finally:
            self._flushes.pop(partition, None)

    def _fail_from(self, partition: int, waiting: list, failed_from: int,
                   error: ErrorCode) -> None:
        """Operations `failed_from` onwards of this flush were not written. Each later operation
        of the partition was decided on their state, so it fails too: those of this flush and
        those queued behind it (decided while the write was in flight). All of them are
        reverted together, newest first, and only then answered; the flush's earlier
        operations are durable and answered as such, after the reverts."""
        queued = self._pending.pop(partition, [])
        failed = [(op, error) for _, op in waiting[failed_from:]]
        failed += [(op, ErrorCode.not_coordinator) for _, op in queued]
        # an operation failing here that also waits on another partition is taken from that
        # queue too: its records there must not be written once it is reverted
        gone = {op for op, _ in failed}
        for other, entries in self._pending.items():
            kept = [entry for entry in entries if entry[1] not in gone]
            for _, op in entries:
                if op in gone:
                    failed.append((op, ErrorCode.not_coordinator))
            self._pending[other] = kept
        for op in sorted(gone, key=lambda op: op.seq, reverse=True):
            op.revert()
        for _, operation in waiting[:failed_from]:
            operation.finish(None)
        fail_together(failed)

    async def _write_durably(self, partition: int, operations: list[Encoded]
                             ) -> tuple[int | None, ErrorCode]:
        """Append the operations' records, each operation's in one batch, and wait for the fsync.
        Returns (None, _) once all are durable, or (i, error): operations i onwards failed. A
        failed append fails the operations of that batch and of every later one; those already
        appended still become durable, so no operation is answered as failed while its records
        stay in the log. A failed fsync fails them all (what reached the disk is unknown, as
        after any fsync failure; Kafka takes the log directory offline)."""
        target, end = None, None
        failed: tuple[int | None, ErrorCode] = (None, ErrorCode.none)
        max_bytes = self.max_batch_bytes()
        for batch, included, records in operation_batches(
                operations, self._broker.now_ms(),
                min(self.batch_target_bytes, max_bytes - BATCH_OVERHEAD), max_bytes):
            try:
                target, appended = self.topic.append(partition, batch, records)
                end = appended.last_offset + 1
            except (LogStorageError, RecordTooLarge) as exc:
                log.error("cannot write group records to %s-%d: %s", OFFSETS_TOPIC, partition,
                          exc)
                failed = (included[0], _storage_error(exc))
                break
            self._crash_point.passed()
        if end is not None:
            try:
                await self.topic.make_durable(target, end)
            except LogStorageError as exc:
                log.error("cannot write group records to %s-%d: %s", OFFSETS_TOPIC, partition,
                          exc)
                return 0, _storage_error(exc)
        return failed

    async def write_transactional(self, group_id: str, records: list[Record], producer_id: int,
                                  producer_epoch: int) -> ErrorCode | None:
        """TxnOffsetCommit's records, in a batch of their own carrying the producer's id and
        epoch with the transactional bit, as Kafka writes them: the marker EndTxn later writes
        to this partition commits or aborts them, live and on replay. None once durable."""
        index = self.partition_for(group_id)
        now = self._broker.now_ms()
        try:
            batch = records_batch(((key, value, now) for key, value in
                                   (record.encode() for record in records)),
                                  self.max_batch_bytes(), producer_id, producer_epoch,
                                  transactional=True)
            await self.topic.write(index, batch, len(records))
        except (struct.error, ValueError, OverflowError) as exc:
            log.error("cannot encode transactional offsets: %s", exc)
            return ErrorCode.unknown_server_error
        except (LogStorageError, RecordTooLarge) as exc:
            log.error("cannot write transactional offsets to %s-%d: %s", OFFSETS_TOPIC,
                      index, exc)
            return _storage_error(exc)
        return None

    # -- loading -----------------------------------------------------------------------

    async def load(self, partition: int, apply: Callable[[Record], None],
                   apply_transactional: Callable[[int, Record], None] | None = None,
                   apply_marker: Callable[[int, bool], None] | None = None,
                   apply_offset_commits: Callable[[list[OffsetCommit]], None] | None = None
                   ) -> int:
        """Replay one partition from its log start; returns how many records were applied.
        A transactional batch's records go to apply_transactional(producer id, record) and a
        transaction marker to apply_marker(producer id, commit), when given; plain offset
        commits to apply_offset_commits, a run at a time, when given (see _read_plain)."""
        applied = since_yield = 0
        reader = OffsetCommitReader()
        run = _CommitRun(apply_offset_commits)
        for batch in self.topic.batches(partition, LOAD_CHUNK_BYTES):
            if batch.is_control_batch:     # a transaction marker is no group record
                run.end()
                for entry in batch:
                    commit = marker_commit(entry.key)
                    if commit is not None and apply_marker is not None:
                        apply_marker(batch.producer_id, commit)
                continue
            if batch.is_transactional and apply_transactional is not None:
                run.end()
                producer_id = batch.producer_id
                count = self._replay_each(partition, batch, lambda record: apply_transactional(
                    producer_id, record))
            elif apply_offset_commits is not None:
                count = self._read_plain(partition, batch, reader, run, apply)
            else:
                count = self._replay_each(partition, batch, apply)
            applied += count
            since_yield += count
            if since_yield >= LOAD_YIELD_RECORDS:
                run.end()   # whoever runs meanwhile finds every record read so far applied
                since_yield = 0
                await asyncio.sleep(0)  # let requests in; they get LOAD_IN_PROGRESS
        run.end()
        return applied

    def _read_plain(self, partition: int, batch, reader: OffsetCommitReader, run: _CommitRun,
                    apply: Callable[[Record], None]) -> int:
        """A batch outside any transaction, nearly all offset commits: those join the run as
        plain values (OffsetCommitReader). Any other record, or one the reader finds unusual,
        goes through decode to `apply`, after the run before it, so every record is still
        applied in log order."""
        applied = 0
        for entry in batch:
            key = entry.key
            if key is None:
                continue
            try:
                commit = reader.read(key, entry.value)
            except (struct.error, UnicodeDecodeError):
                commit = None   # the general reader judges it
            if commit is not None:
                run.commits.append(commit)
                applied += 1
            else:
                run.end()
                applied += self._replay_entry(partition, entry, apply)
        return applied

    def _replay_each(self, partition: int, batch, apply: Callable[[Record], None]) -> int:
        return sum(self._replay_entry(partition, entry, apply) for entry in batch
                   if entry.key is not None)

    @staticmethod
    def _replay_entry(partition: int, entry, apply: Callable[[Record], None]) -> bool:
        """One record through the general reader; False (logged) when it cannot be read."""
        try:
            record = decode(entry.key, entry.value)
        except (RecordFormatError, UnicodeDecodeError) as exc:
            log.warning("skipping unreadable record at %s-%d offset %d: %s",
                        OFFSETS_TOPIC, partition, entry.offset, exc)
            return False
        apply(record)
        return True


class _CommitRun:
    """Plain offset commits read and not yet applied, across batches: a restart may replay a
    million, often one small batch each (a commit that arrives alone), and a Record of three
    frozen dataclasses and a handful of calls each, or a call into the shard per batch, was
    most of its time. They are applied together, before any other record and before the
    loader yields, so every record still takes effect in log order."""

    __slots__ = ("commits", "_apply")

    def __init__(self, apply: Callable[[list[OffsetCommit]], None] | None) -> None:
        self.commits: list[OffsetCommit] = []
        self._apply = apply

    def end(self) -> None:
        if self.commits:
            commits, self.commits = self.commits, []
            self._apply(commits)


def _size(records: Encoded) -> int:
    return sum(len(key) + len(value or b"") + RECORD_OVERHEAD for key, value in records)


def encode_operation(records: list[Record], max_bytes: int = INTERNAL_MAX_BATCH) -> Encoded:
    """One operation's records as (key, value) bytes; RecordTooLarge (logged) when they cannot
    be written: a field past its length (offset metadata over 32767 bytes, when
    offset.metadata.max.bytes allows it) or more than one batch can hold."""
    try:
        encoded = [record.encode() for record in records]
    except (struct.error, ValueError, OverflowError) as exc:
        log.error("cannot encode group records: %s", exc)
        raise RecordTooLarge(f"cannot encode group records: {exc}") from exc
    if BATCH_OVERHEAD + _size(encoded) > max_bytes:
        log.error("cannot write group records: one operation's records take more than %d "
                  "bytes", max_bytes)
        raise RecordTooLarge("one operation's group records over the batch limit")
    return encoded


def operation_batches(operations: list[Encoded], timestamp: int,
                      target_bytes: int = BATCH_TARGET_BYTES, max_bytes: int = INTERNAL_MAX_BATCH):
    """Yield (batch, indexes of the operations in it, its record count): every operation's
    records (encoded by encode_operation, so each fits a batch) in one batch, never split, as
    Kafka's coordinator writes an operation atomically. Operations share a batch while it stays
    under `target_bytes`."""
    entries: list = []
    size, included = 0, []
    for index, encoded in enumerate(operations):
        needed = _size(encoded)
        if included and size + needed > target_bytes:
            yield records_batch(entries, max_bytes), included, len(entries)
            entries, size, included = [], 0, []
        entries += [(key, value, timestamp) for key, value in encoded]
        size += needed
        included.append(index)
    if included:
        yield records_batch(entries, max_bytes), included, len(entries)
