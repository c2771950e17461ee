"""The share coordinator: every share partition of the broker (partition.py), what each change
writes to __share_group_state (records.py), the acquisition-lock timers, and replay. A core of
the one coordinator runtime (broker/coordinator_runtime.py): each operation takes `now` and a
reply token and returns a Result; `expire`, `revert` and `write_completed` are what the runtime
asks of it.

An acknowledgement changes the partition at once (so a fetch right behind it sees it) and is
answered once its record is durable; if the write fails, the change is put back first and the
answer is the failure. Acquisition is in memory only, as in Kafka: a restart finds acquired
records as they were last written, AVAILABLE.

Records: an update per write, and every `per_snapshot`-th write of a partition a snapshot of its
whole state instead (Kafka's share.coordinator.snapshot.update.records.per.snapshot), so replay
reads at most that many records of a partition after its latest snapshot and the edge can drop
what lies before every partition's latest snapshot.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from roster.coordinator.results import Result
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode
from roster.share.counts import (
    LOCK_EXPIRED,
    ArchivedAtLimit,
    LocksExpired,
    ShareCounts,
    bounded,
    ranges,
)
from roster.share.partition import (
    AckRefused,
    Acquired,
    Change,
    Limits,
    SharePartition,
    StateBatch,
    Undo,
)
from roster.share.records import SNAPSHOT, UPDATE, ShareRecord

# (group id, topic id, partition), as Kafka keys share partitions
Key = tuple[str, object, int]


@frozen
class LockCheck:
    """Timer event: a partition's earliest acquisition lock is due."""
    key: Key


@frozen
class DeadLetters:
    """Effect, once durable: records archived by a rejection or at the delivery limit, for the
    group's dead-letter queue (KIP-1191). entries: (offset, delivery count)."""
    key: Key
    entries: tuple[tuple[int, int], ...]


@frozen
class Available:
    """Effect: records of the partition became AVAILABLE again (released, lock expired,
    reverted): parked fetches may now be answered."""
    key: Key


@frozen
class AckOutcome:
    error: ErrorCode | None
    message: str | None = None


@frozen
class Answer:
    """Continuation: answer `token` with `body` once the records are durable."""
    token: object
    body: object


@frozen
class _Rearm:
    """Continuation: if the write failed, its change was put back (acquired records again,
    under their locks): set the partition's lock timer again."""
    key: Key


# what a failed write puts back
@frozen
class _Undo:
    key: Key
    undo: Undo
    counts: ShareCounts | None = None   # what the change counted, taken back with it


@frozen
class _Created:
    key: Key


@frozen
class _Removed:
    key: Key
    partition: SharePartition


def timer_key(key: Key) -> str:
    return f"share-lock/{key[0]}/{key[1]}/{key[2]}"


class ShareCoordinator:
    def __init__(self, limits_for: Callable[[str], Limits], per_snapshot: int = 500) -> None:
        self._limits_for = limits_for
        self.per_snapshot = max(1, per_snapshot)
        self.partitions: dict[Key, SharePartition] = {}
        self._updates: dict[Key, int] = {}          # updates since the partition's snapshot
        self._snapshot_epochs: dict[Key, int] = {}
        # the start offset DescribeShareGroupOffsets answers, as Kafka's share coordinator
        # holds it: -1 from initialisation until the partition's first write, then the start
        # the partition had when it wrote (Kafka moves the SPSO once the write is done, so
        # what it persisted trails by one write); an alteration's at once
        self._described: dict[Key, int] = {}
        # what became of each partition's records since this broker started (counts.py), for
        # /metrics; dropped with the partition
        self.counts: dict[Key, ShareCounts] = {}

    # -- reading ---------------------------------------------------------------------------

    def get(self, key: Key) -> SharePartition | None:
        return self.partitions.get(key)

    def described_start(self, key: Key) -> int:
        return self._described.get(key, -1)

    def keys_of(self, group_id: str) -> list[Key]:
        return [k for k in self.partitions if k[0] == group_id]

    def limits(self, group_id: str) -> Limits:
        return self._limits_for(group_id)

    # -- the runtime's side ----------------------------------------------------------------

    def write_completed(self, step, error, now: int) -> Result:
        """An operation's records are durable (error None) or not (its change is already put
        back): answer it."""
        result = Result()
        if isinstance(step, Answer):
            result.reply(step.token, step.body if error is None
                         else AckOutcome(error, "Unable to write the share group state."))
        elif isinstance(step, _Rearm) and error is not None:
            partition = self.partitions.get(step.key)
            if partition is not None:
                self._arm(result, step.key, partition)
        return result

    def revert(self, changes: list, now: int) -> None:
        for change in reversed(changes):
            if isinstance(change, _Undo):
                partition = self.partitions.get(change.key)
                if partition is not None:
                    partition.revert(change.undo)
                counted = self.counts.get(change.key)
                if counted is not None and change.counts is not None:
                    counted.add(change.counts, -1)
            elif isinstance(change, _Created):
                self.partitions.pop(change.key, None)
            elif isinstance(change, _Removed):
                self.partitions[change.key] = change.partition

    def expire(self, event: LockCheck, now: int) -> Result:
        partition = self.partitions.get(event.key)
        result = Result()
        if partition is None:
            return result
        change = partition.expire_locks(now, self.limits(event.key[0]))
        self._written(result, event.key, partition, change, now)
        self._arm(result, event.key, partition)
        return result

    # -- operations ------------------------------------------------------------------------

    def initialize(self, key: Key, start_offset: int, now: int, token=None) -> Result:
        """A share partition starting at `start_offset`, unless it exists (idempotent); `token`
        is answered once its snapshot is durable."""
        result = Result()
        if key not in self.partitions:
            partition = SharePartition(start_offset, state_epoch=0, created_ms=now)
            self.partitions[key] = partition
            self._described[key] = -1
            result.changes.append(_Created(key))
            result.records.append(self._snapshot(key, partition, now))
        self._answer(result, token, AckOutcome(None))
        return result

    def acquire(self, key: Key, member_id: str, batches: Sequence[tuple[int, int]],
                max_records: int, strict: bool, now: int) -> tuple[list[Acquired], Result]:
        partition = self.partitions.get(key)
        result = Result()
        if partition is None or max_records <= 0:
            return [], result
        acquired, change = partition.acquire(member_id, batches, max_records, strict,
                                             self.limits(key[0]), now)
        self._count(key, change.counts)
        if acquired:
            self._arm(result, key, partition)
        return acquired, result

    def acknowledge(self, key: Key, member_id: str,
                    batches: Sequence[tuple[int, int, Sequence[int]]], now: int,
                    token) -> Result:
        result = Result()
        partition = self.partitions.get(key)
        if partition is None:
            result.reply(token, AckOutcome(ErrorCode.unknown_topic_or_partition,
                                           "The share partition is not initialized."))
            return result
        try:
            change = partition.acknowledge(member_id, batches, self.limits(key[0]), now)
        except AckRefused as refused:
            result.reply(token, AckOutcome(refused.error, refused.message))
            return result
        self._written(result, key, partition, change, now)
        self._arm(result, key, partition)
        self._answer(result, token, AckOutcome(None))
        return result

    @staticmethod
    def _answer(result: Result, token, body) -> None:
        """Reply once the result's records are durable (at once when it writes none)."""
        if token is None:
            return
        if result.records:
            result.after_write.append(Answer(token, body))
        else:
            result.reply(token, body)

    def release_member(self, group_id: str, member_id: str, keys: Iterable[Key] | None,
                       now: int) -> Result:
        """Release what the member holds in the group's partitions (`keys`: only those)."""
        result = Result()
        for key in (self.keys_of(group_id) if keys is None else keys):
            partition = self.partitions.get(key)
            if partition is None or key[0] != group_id:
                continue
            change = partition.release_member(member_id, self.limits(group_id))
            self._written(result, key, partition, change, now)
            self._arm(result, key, partition)
        return result

    def move_start_to(self, key: Key, log_start: int, now: int) -> Result:
        """The log's start is past the SPSO: follow it."""
        result = Result()
        partition = self.partitions.get(key)
        if partition is not None and log_start > partition.start:
            self._written(result, key, partition, partition.move_start_to(log_start), now)
            self._arm(result, key, partition)
        return result

    def alter(self, key: Key, start_offset: int, now: int, token=None) -> Result:
        """AlterShareGroupOffsets: the partition starts over at `start_offset` (a new state
        epoch, as Kafka's), created if it was not initialised."""
        result = Result()
        partition = self.partitions.get(key)
        if partition is None:
            partition = SharePartition(start_offset, created_ms=now)
            self.partitions[key] = partition
            result.changes.append(_Created(key))
        else:
            result.changes.append(_Undo(key, partition.reset(start_offset).undo))
            partition.state_epoch += 1
        result.records.append(self._snapshot(key, partition, now))
        self._described[key] = start_offset
        self._arm(result, key, partition)
        self._answer(result, token, AckOutcome(None))
        return result

    def delete(self, keys: Iterable[Key], now: int, token=None) -> Result:
        """The partitions' share state is dropped (DeleteShareGroupOffsets, DeleteGroups):
        tombstones for both of their record keys."""
        result = Result()
        for key in list(keys):
            partition = self.partitions.pop(key, None)
            if partition is None:
                continue
            result.changes.append(_Removed(key, partition))
            self._updates.pop(key, None)
            self._described.pop(key, None)
            self.counts.pop(key, None)
            for kind in (SNAPSHOT, UPDATE):
                result.records.append(ShareRecord(kind, key[0], key[1], key[2],
                                                  tombstone=True))
            result.cancel(timer_key(key))
        self._answer(result, token, AckOutcome(None))
        return result

    def snapshot_all(self, now: int) -> Result:
        """A fresh snapshot of every partition (the edge's periodic pass, after which the state
        topic can drop everything before the oldest of them: a partition not written to for
        long would otherwise hold its old snapshot, and the log, back)."""
        result = Result()
        for key, partition in self.partitions.items():
            result.records.append(self._snapshot(key, partition, now))
        return result

    # -- records ---------------------------------------------------------------------------

    def _written(self, result: Result, key: Key, partition: SharePartition, change: Change,
                 now: int) -> None:
        """Note a change: its record, its undo, its effects, its counts and facts."""
        self._count(key, change.counts)
        if change.empty:
            return
        result.changes.append(_Undo(key, change.undo, change.counts))
        self._note(result, key, change, now)
        result.records.append(self._update(key, partition, change, now))
        self._described[key] = change.undo.start
        result.after_write.append(_Rearm(key))
        if change.dead_letters:
            result.effects += (DeadLetters(key, tuple(change.dead_letters)),)
        if any(o in partition.records and partition.records[o].state == 0
               for o in change.changed):
            result.effects += (Available(key),)

    def _count(self, key: Key, counts: ShareCounts) -> None:
        if counts and key in self.partitions:
            self.counts.setdefault(key, ShareCounts()).add(counts)

    def dead_lettered(self, key: Key, records: int) -> None:
        """The edge wrote `records` of the partition to the group's dead-letter topic."""
        self._count(key, ShareCounts(dead_lettered=records))

    @staticmethod
    def _note(result: Result, key: Key, change: Change, now: int) -> None:
        """The facts that explain what became of records without one per record: the
        locks that expired, by member; the records archived at the delivery limit, by member,
        cause and delivery count."""
        if change.expired:
            by_member: dict = {}
            for member, offset in change.expired:
                by_member.setdefault(member or "", []).append(offset)
            members = tuple((member, *bounded(ranges(offsets)))
                            for member, offsets in sorted(by_member.items()))
            result.facts.append(LocksExpired(key, now, members, len(change.expired),
                                             sum(1 for *_, cause in change.limit_archived
                                                 if cause == LOCK_EXPIRED)))
        if change.limit_archived:
            groups: dict = {}
            for offset, count, member, cause in change.limit_archived:
                groups.setdefault((member, cause, count), []).append(offset)
            for (member, cause, count), offsets in sorted(
                    groups.items(), key=lambda item: (min(item[1]), item[0][1])):
                runs, left_out = bounded(ranges(offsets))
                result.facts.append(ArchivedAtLimit(key, now, member, cause, count, runs,
                                                    left_out, len(offsets)))

    def _update(self, key: Key, partition: SharePartition, change: Change,
                now: int) -> ShareRecord:
        count = self._updates.get(key, 0) + 1
        if count >= self.per_snapshot:
            return self._snapshot(key, partition, now)
        self._updates[key] = count
        return ShareRecord(UPDATE, key[0], key[1], key[2],
                           start_offset=partition.start if change.start_moved else -1,
                           batches=tuple(partition.state_batches(change.changed)),
                           snapshot_epoch=self._snapshot_epochs.get(key, 0))

    def _snapshot(self, key: Key, partition: SharePartition, now: int) -> ShareRecord:
        self._updates[key] = 0
        epoch = self._snapshot_epochs.get(key, -1) + 1
        self._snapshot_epochs[key] = epoch
        return ShareRecord(SNAPSHOT, key[0], key[1], key[2], start_offset=partition.start,
                           batches=tuple(partition.state_batches()), snapshot_epoch=epoch,
                           state_epoch=partition.state_epoch, create_ms=partition.created_ms,
                           write_ms=now,
                           delivery_complete_count=partition.delivery_complete_count())

    def _arm(self, result: Result, key: Key, partition: SharePartition) -> None:
        deadline = partition.lock_deadline()
        if deadline is None:
            result.cancel(timer_key(key))
        else:
            result.schedule(timer_key(key), deadline, LockCheck(key))

    # -- replay ----------------------------------------------------------------------------

    def replay(self, record: ShareRecord) -> None:
        """One record of __share_group_state, in log order (topic ids as the edge keys them)."""
        key = (record.group_id, record.topic_id, record.partition)
        if record.tombstone:
            if record.kind == SNAPSHOT:
                self.partitions.pop(key, None)
                self._updates.pop(key, None)
                self._described.pop(key, None)
                self.counts.pop(key, None)
            return
        partition = self.partitions.get(key)
        if record.kind == SNAPSHOT:
            if partition is None:
                partition = SharePartition(record.start_offset)
                self.partitions[key] = partition
            partition.state_epoch = record.state_epoch
            partition.created_ms = record.create_ms
            partition.apply_state(record.start_offset, record.batches, reset=True)
            self._described[key] = record.start_offset
            self._updates[key] = 0
            self._snapshot_epochs[key] = record.snapshot_epoch
        elif partition is not None:     # an update without its snapshot: pruned away with it
            partition.apply_state(record.start_offset, record.batches, reset=False)
            if record.start_offset >= 0:
                self._described[key] = record.start_offset
            self._updates[key] = self._updates.get(key, 0) + 1

    def loaded(self) -> None:
        for partition in self.partitions.values():
            partition.loaded()


__all__ = ["AckOutcome", "Acquired", "Available", "DeadLetters", "Key", "Limits", "LockCheck",
           "Answer", "ShareCoordinator", "StateBatch", "timer_key"]
