"""One share partition: the records of a (group, topic id, partition) between the share-partition
start offset (SPSO) and the end of the in-flight window, their states, delivery counts and
acquisition locks, and the rules that move them (KIP-932, as Kafka 4.4's SharePartition keeps
them). Pure: every operation takes `now` in ms and says what it changed; the coordinator
(coordinator.py) makes those changes durable, and its edge arms the lock timers.

The window holds one entry per offset in [start, end) that is a record of the log; an offset of
the window without an entry is not in the log (a compacted hole, or one a read skipped) and
counts as delivered. After a restart the offsets of the window that were never written are
entries again, AVAILABLE with delivery count 0 (Kafka's "acquirable gap"): a read finds out
whether the log has them.

The rules (read off Kafka 4.4's kafka.server.share.SharePartition):
- acquiring takes AVAILABLE records of the window and new records past its end, raising each
  one's delivery count, ACQUIRED by the member until its lock's deadline; new records only
  while the window holds fewer than share.partition.max.record.locks offsets;
- batch_optimized acquires whole batches and may overshoot max_records; record_limit
  (KIP-1206) stops at exactly max_records;
- redelivered records are throttled: from a delivery count of max(2, ceil(limit / 2)) a read
  hands out at most max(1, batch size >> (count - that + 1)) of them, and (for a limit above
  2) a record on its last delivery goes out alone;
- acknowledging needs every offset of every batch ACQUIRED by the acknowledging member, or the
  whole acknowledgement is refused (INVALID_RECORD_STATE; offsets past the window:
  INVALID_REQUEST) and nothing changes;
- ACCEPT -> ACKNOWLEDGED; REJECT and GAP -> ARCHIVED; RELEASE -> AVAILABLE, or ARCHIVED when the
  record's delivery count has reached share.delivery.count.limit; RENEW (KIP-1222, only with
  share.renew.acknowledge.enable) extends the lock; an expired lock and a member's release count
  as RELEASE;
- the SPSO moves past every delivered (ACKNOWLEDGED/ARCHIVED) offset at the window's front.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from roster.frozen import frozen
from roster.protocol.errors import ErrorCode
from roster.share.counts import LOCK_EXPIRED, RELEASE, SESSION_CLOSED, ShareCounts
from roster.share.states import AckType, RecordState


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int
    member: str | None = None       # the holder while ACQUIRED
    deadline: int | None = None     # the acquisition lock's deadline (ms) while ACQUIRED

    def copy(self) -> InFlight:
        return InFlight(self.state, self.delivery_count, self.member, self.deadline)


@frozen
class Acquired:
    """Records handed to a member: ShareFetch's AcquiredRecords entry."""
    first_offset: int
    last_offset: int
    delivery_count: int


@frozen
class StateBatch:
    """A run of offsets in one persisted state (ShareSnapshot/ShareUpdate's StateBatch)."""
    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int


@frozen
class Limits:
    """A group's values for its share partitions (group configs, else the broker's)."""
    delivery_count_limit: int = 5
    lock_duration_ms: int = 30000
    max_record_locks: int = 2000
    renew_enabled: bool = True


class AckRefused(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass(slots=True)
class Undo:
    """How to put a partition back as it was before a change (its write failed)."""
    start: int
    end: int
    entries: dict[int, InFlight | None]


@dataclass(slots=True)
class Change:
    """What one operation did to a partition: the offsets whose state changed (to persist),
    those to copy to the dead-letter queue (rejected, or archived at the delivery limit), and
    how to undo it; and, for /metrics and the flight recorder (counts.py), what became of the
    records: counted, the locks that expired and the records archived at the limit."""
    undo: Undo
    changed: set[int]
    dead_letters: list[tuple[int, int]]     # (offset, delivery count)
    start_moved: bool = False
    counts: ShareCounts = field(default_factory=ShareCounts)
    expired: list[tuple[str | None, int]] = field(default_factory=list)   # (member, offset)
    # (offset, delivery count, member, cause: counts.RELEASE / LOCK_EXPIRED / SESSION_CLOSED)
    limit_archived: list[tuple[int, int, str | None, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.changed and not self.start_moved


class SharePartition:
    def __init__(self, start: int, state_epoch: int = 0, created_ms: int = 0) -> None:
        self.start = start
        self.end = start
        self.records: dict[int, InFlight] = {}
        self.state_epoch = state_epoch
        self.created_ms = created_ms
        # offsets that became AVAILABLE inside the window (a heap, stale entries dropped as
        # met): where the next read starts without walking the window
        self._available: list[int] = []
        # (deadline, offset) of every acquisition lock set, stale ones dropped as met
        self._locks: list[tuple[int, int]] = []

    def _now_available(self, offset: int) -> None:
        heapq.heappush(self._available, offset)

    # -- reading -------------------------------------------------------------------------

    def next_fetch_offset(self) -> int:
        """Where the next read of the log starts: the first AVAILABLE offset of the window, or
        its end."""
        heap = self._available
        while heap:
            offset = heap[0]
            entry = self.records.get(offset)
            if offset >= self.start and entry is not None \
                    and entry.state is RecordState.AVAILABLE:
                return offset
            heapq.heappop(heap)
        return self.end

    def has_available(self) -> bool:
        return self.next_fetch_offset() < self.end

    def delivery_complete_count(self) -> int:
        """Offsets at or past the SPSO whose delivery is complete (KIP-1226)."""
        return sum(1 for e in self.records.values() if e.state.terminal)

    def in_flight(self) -> int:
        return self.end - self.start

    def state_counts(self) -> dict[RecordState, int]:
        """The window's records by state (the console, /metrics): every state, 0 included.
        An offset of the window the log does not hold has no entry and is not counted."""
        counts = dict.fromkeys(RecordState, 0)
        for entry in self.records.values():
            counts[entry.state] += 1
        return counts

    def lock_deadline(self) -> int | None:
        """The earliest acquisition lock's deadline, None when nothing is acquired."""
        heap = self._locks
        while heap:
            deadline, offset = heap[0]
            entry = self.records.get(offset)
            if entry is not None and entry.state is RecordState.ACQUIRED \
                    and entry.deadline == deadline:
                return deadline
            heapq.heappop(heap)
        return None

    def _locked(self, offset: int, entry: InFlight) -> None:
        heapq.heappush(self._locks, (entry.deadline, offset))

    def acquired_by(self, member: str) -> list[int]:
        return sorted(o for o, e in self.records.items()
                      if e.state is RecordState.ACQUIRED and e.member == member)

    def state_batches(self, offsets: Iterable[int] | None = None) -> list[StateBatch]:
        """The persisted view of `offsets` (all of the window when None) as runs of equal
        state and delivery count. ACQUIRED records are written as Kafka finds them after a
        restart: AVAILABLE (their acquisition is not persisted)."""
        chosen = sorted(self.records if offsets is None else
                        (o for o in offsets if o in self.records))
        runs: list[StateBatch] = []
        for offset in chosen:
            entry = self.records[offset]
            state = RecordState.AVAILABLE if entry.state is RecordState.ACQUIRED else entry.state
            count = entry.delivery_count
            if entry.state is RecordState.ACQUIRED:
                count = max(0, count - 1)
            last = runs[-1] if runs else None
            if last is not None and last.last_offset + 1 == offset and last.state is state \
                    and last.delivery_count == count:
                runs[-1] = StateBatch(last.first_offset, offset, state, count)
            else:
                runs.append(StateBatch(offset, offset, state, count))
        return runs

    # -- changing --------------------------------------------------------------------------

    def _begin(self) -> Change:
        return Change(Undo(self.start, self.end, {}), set(), [])

    def _touch(self, change: Change, offset: int) -> InFlight | None:
        """The entry at `offset`, remembering it for the undo before it changes."""
        entry = self.records.get(offset)
        if offset not in change.undo.entries:
            change.undo.entries[offset] = None if entry is None else entry.copy()
        return entry

    def revert(self, undo: Undo) -> None:
        self.start, self.end = undo.start, undo.end
        for offset, entry in undo.entries.items():
            if entry is None:
                self.records.pop(offset, None)
            else:
                self.records[offset] = entry.copy()
                if entry.state is RecordState.AVAILABLE:
                    self._now_available(offset)
                elif entry.state is RecordState.ACQUIRED and entry.deadline is not None:
                    self._locked(offset, entry)
        for offset in [o for o in self.records if o < self.start or o >= self.end]:
            del self.records[offset]

    def acquire(self, member: str, batches: Sequence[tuple[int, int]], max_records: int,
                strict: bool, limits: Limits, now: int) -> tuple[list[Acquired], Change]:
        """Acquire for `member` from `batches`, the (base offset, last offset) of the batches a
        read of the log from next_fetch_offset() returned, in order."""
        change = self._begin()
        taken: list[tuple[int, int]] = []       # (offset, delivery count)
        cursor = self.next_fetch_offset()
        stop = False
        # records redelivered many times go out in ever smaller numbers, and one on its last
        # delivery alone (Kafka 4.4's throttling of records near the delivery limit)
        limit = limits.delivery_count_limit
        throttle_from = max(2, -(-limit // 2))
        throttled_to = None

        def last_attempt(count: int) -> bool:
            return limit > 2 and count == limit
        for base, last in batches:
            if stop or len(taken) >= max_records:
                break
            first = max(base, cursor)
            if first > last:
                continue
            # the window's offsets before this batch are not in the log (a hole)
            self._drop_absent(change, cursor, min(first, self.end))
            for offset in range(first, last + 1):
                if strict and len(taken) >= max_records:
                    stop = True
                    break
                if offset < self.end:
                    entry = self.records.get(offset)
                    if entry is None or entry.state is not RecordState.AVAILABLE:
                        continue
                    delivered = entry.delivery_count
                    if last_attempt(delivered + 1) and taken:
                        stop = True     # its last delivery: alone, in the next fetch
                        break
                    if delivered >= throttle_from and throttled_to is None:
                        throttled_to = max(1, (last - base + 1) >> (delivered - throttle_from + 1))
                    self._touch(change, offset)
                else:
                    if self.end - self.start >= limits.max_record_locks:
                        stop = True
                        break
                    self._touch(change, offset)
                    entry = InFlight(RecordState.AVAILABLE, 0)
                    self.records[offset] = entry
                    self.end = offset + 1
                entry.state = RecordState.ACQUIRED
                entry.delivery_count += 1
                entry.member = member
                entry.deadline = now + limits.lock_duration_ms
                self._locked(offset, entry)
                taken.append((offset, entry.delivery_count))
                if last_attempt(entry.delivery_count) or len(taken) == throttled_to:
                    stop = True         # alone on its last delivery; or throttled
                    break
            cursor = last + 1
        self._advance_start(change)
        if taken:       # counted once, not per record (the fetch path's hot loop)
            change.counts.acquired = len(taken)
            change.counts.redelivered = sum(1 for _, count in taken if count > 1)
        return _runs(taken), change

    def _drop_absent(self, change: Change, first: int, end: int) -> None:
        for offset in range(first, end):
            entry = self.records.get(offset)
            if entry is not None and entry.state is RecordState.AVAILABLE:
                self._touch(change, offset)
                del self.records[offset]

    def acknowledge(self, member: str, batches: Sequence[tuple[int, int, Sequence[int]]],
                    limits: Limits, now: int) -> Change:
        """Apply a member's acknowledgements, all or nothing. Raises AckRefused."""
        plan: list[tuple[int, AckType]] = []
        for first, last, types in batches:
            plan += self._check(member, first, last, types, limits)
        if len({offset for offset, _ in plan}) != len(plan):
            raise AckRefused(ErrorCode.invalid_request, "Acknowledgement batches overlap.")
        change = self._begin()
        for offset, kind in plan:
            entry = self._touch(change, offset)
            if entry is None:           # a GAP over an offset the log does not hold
                continue
            if kind is AckType.RENEW:
                entry.deadline = now + limits.lock_duration_ms
                self._locked(offset, entry)
                change.counts.renewed += 1
                continue
            if kind is AckType.ACCEPT:
                self._settle(entry, RecordState.ACKNOWLEDGED)
                change.counts.accepted += 1
            elif kind is AckType.RELEASE:
                change.counts.released += 1
                self._release(change, offset, entry, limits, RELEASE)
            else:                       # REJECT, GAP
                if kind is AckType.REJECT:
                    change.dead_letters.append((offset, entry.delivery_count))
                    change.counts.rejected += 1
                self._settle(entry, RecordState.ARCHIVED)
            change.changed.add(offset)
        self._advance_start(change)
        return change

    def _check(self, member: str, first: int, last: int, types: Sequence[int],
               limits: Limits) -> list[tuple[int, AckType]]:
        if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
            raise AckRefused(ErrorCode.invalid_request, "Invalid acknowledgement batch.")
        try:
            kinds = [AckType(t) for t in types]
        except ValueError:
            raise AckRefused(ErrorCode.invalid_request,
                             f"Invalid acknowledge type: {list(types)}") from None
        if first >= self.end:
            raise AckRefused(ErrorCode.invalid_request,
                             "Batch record not found. The first offset in request is past "
                             "acquired records.")
        if last >= self.end:
            raise AckRefused(ErrorCode.invalid_request,
                             "Batch record not found. The last offset in request is past "
                             "acquired records.")
        if last < self.start:
            # every offset is behind the start offset, already settled (another member's
            # acknowledgement after this one's lock ran out, say): Kafka skips the batch
            # ("All offsets in the acknowledgement batch ... are already archived") and
            # answers no error; a batch reaching past the start offset acts from it on
            return []
        plan = []
        for offset in range(max(first, self.start), last + 1):
            kind = kinds[0] if len(kinds) == 1 else kinds[offset - first]
            entry = self.records.get(offset)
            if entry is None and kind is AckType.GAP:
                plan.append((offset, kind))
                continue
            if entry is None or entry.state is not RecordState.ACQUIRED:
                raise AckRefused(ErrorCode.invalid_record_state,
                                 "The record state is invalid. The acknowledgement of delivery "
                                 "could not be completed.")
            if entry.member != member:
                raise AckRefused(ErrorCode.invalid_record_state,
                                 "Member is not the owner of offset")
            if kind is AckType.RENEW and not limits.renew_enabled:
                raise AckRefused(ErrorCode.invalid_record_state,
                                 "Renewing acquisition locks is not enabled for the group.")
            plan.append((offset, kind))
        return plan

    @staticmethod
    def _settle(entry: InFlight, state: RecordState) -> None:
        entry.state = state
        entry.member = None
        entry.deadline = None

    def _release(self, change: Change, offset: int, entry: InFlight, limits: Limits,
                 cause: str) -> None:
        """Back to AVAILABLE, or ARCHIVED once the delivery limit is reached (then it is a
        dead letter). `cause`: how its delivery ended (counts.py), for the recorder."""
        if entry.delivery_count >= limits.delivery_count_limit:
            change.dead_letters.append((offset, entry.delivery_count))
            change.limit_archived.append((offset, entry.delivery_count, entry.member, cause))
            change.counts.archived += 1
            self._settle(entry, RecordState.ARCHIVED)
        else:
            self._settle(entry, RecordState.AVAILABLE)
            self._now_available(offset)

    def release_member(self, member: str, limits: Limits) -> Change:
        """The member is gone (left, fenced, its session closed): its records are released."""
        change = self._begin()
        for offset in self.acquired_by(member):
            entry = self._touch(change, offset)
            change.counts.released += 1
            self._release(change, offset, entry, limits, SESSION_CLOSED)
            change.changed.add(offset)
        self._advance_start(change)
        return change

    def expire_locks(self, now: int, limits: Limits) -> Change:
        """Release every record whose acquisition lock's deadline has passed."""
        change = self._begin()
        while (deadline := self.lock_deadline()) is not None and deadline <= now:
            _, offset = heapq.heappop(self._locks)
            entry = self.records[offset]
            self._touch(change, offset)
            change.counts.lock_expired += 1
            change.expired.append((entry.member, offset))
            self._release(change, offset, entry, limits, LOCK_EXPIRED)
            change.changed.add(offset)
        self._advance_start(change)
        return change

    def reset(self, offset: int) -> Change:
        """Start over at `offset` with nothing in flight (AlterShareGroupOffsets)."""
        change = self._begin()
        for existing in list(self.records):
            self._touch(change, existing)
            del self.records[existing]
        self.start = self.end = offset
        change.start_moved = True
        return change

    def move_start_to(self, offset: int) -> Change:
        """The log's start moved past the SPSO (retention, DeleteRecords): the records before
        it are gone, so is their part of the window."""
        change = self._begin()
        if offset <= self.start:
            return change
        for existing in [o for o in self.records if o < offset]:
            self._touch(change, existing)
            del self.records[existing]
        self.start = offset
        self.end = max(self.end, offset)
        change.start_moved = True
        self._advance_start(change)
        return change

    def _advance_start(self, change: Change) -> None:
        moved = False
        while self.start < self.end:
            entry = self.records.get(self.start)
            if entry is not None and not entry.state.terminal:
                break
            if entry is not None:
                self._touch(change, self.start)
                del self.records[self.start]
            self.start += 1
            moved = True
        change.start_moved = change.start_moved or moved

    # -- replay ----------------------------------------------------------------------------

    def apply_state(self, start: int, batches: Iterable[StateBatch], reset: bool) -> None:
        """Replay a persisted snapshot (reset) or update: the start offset (-1: unchanged) and
        the states of the batches; acquired records come back AVAILABLE."""
        if reset:
            self.records.clear()
            self.start = self.end = start
        elif start >= 0 and start != self.start:
            self.start = start
            for offset in [o for o in self.records if o < start]:
                del self.records[offset]
            self.end = max(self.end, start)
        for batch in batches:
            state = RecordState.AVAILABLE if batch.state is RecordState.ACQUIRED else batch.state
            for offset in range(max(batch.first_offset, self.start), batch.last_offset + 1):
                self.records[offset] = InFlight(state, batch.delivery_count)
                if state is RecordState.AVAILABLE:
                    self._now_available(offset)
            self.end = max(self.end, batch.last_offset + 1)

    def loaded(self) -> None:
        """After replay: the window's offsets never written are an acquirable gap (entries
        AVAILABLE with delivery count 0), then the delivered front is passed."""
        for offset in range(self.start, self.end):
            if offset not in self.records:
                self.records[offset] = InFlight(RecordState.AVAILABLE, 0)
                self._now_available(offset)
        self._advance_start(self._begin())


def _runs(taken: list[tuple[int, int]]) -> list[Acquired]:
    """Consecutive offsets with one delivery count, as AcquiredRecords entries."""
    runs: list[Acquired] = []
    for offset, count in taken:
        last = runs[-1] if runs else None
        if last is not None and last.last_offset + 1 == offset and last.delivery_count == count:
            runs[-1] = Acquired(last.first_offset, offset, count)
        else:
            runs.append(Acquired(offset, offset, count))
    return runs
