"""The coordinator's timers on the event loop: a heap of deadlines under one loop timer.

The coordinator asks for timers by key: Schedule sets a key's deadline and event (replacing any
earlier one), Cancel drops the key. Each key costs a small record and a heap entry, not a loop
TimerHandle (about 600 bytes each); one loop timer is armed for the earliest deadline.

Heap entries are never removed in place. A key's record remembers the deadline of the entry
that stands for it (`queued_ms`); any other entry for the key is stale and skipped when it comes
up. A deadline pushed later (what a re-armed session does) keeps its entry: when that entry
comes up early, the key is queued again for its new deadline. A deadline pulled earlier gets a
new entry at once. Stale entries would otherwise stay until their deadline passes (every group
leaves one from its first member's 5-minute join timer), so once they make up a third of the
heap it is rebuilt from the live timers: each rebuild costs what the entries it drops cost to
push, so timers stay O(log n) amortised.
"""
from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable, Iterable

from roster.coordinator.results import Cancel, Schedule

_COMPACT_FROM = 64  # heap entries; below this, stale entries cost too little to bother


class _Timer:
    __slots__ = ("deadline_ms", "event", "queued_ms")

    def __init__(self, deadline_ms: int, event) -> None:
        self.deadline_ms = deadline_ms
        self.event = event
        self.queued_ms = deadline_ms


class TimerQueue:
    def __init__(self, now_ms: Callable[[], int],
                 fire: Callable[[str, object, int], None]) -> None:
        """`fire(key, event, now)` runs each timer that comes due, once; `now_ms` is the clock
        deadlines are expressed in."""
        self._now_ms = now_ms
        self._fire = fire
        self._timers: dict[str, _Timer] = {}
        self._heap: list[tuple[int, str]] = []
        self._wakeup: asyncio.TimerHandle | None = None
        self._wakeup_ms = 0
        self._running = False

    def __len__(self) -> int:
        return len(self._timers)

    def deadline(self, key: str) -> int | None:
        timer = self._timers.get(key)
        return timer.deadline_ms if timer is not None else None

    def apply(self, operations: Iterable[Schedule | Cancel]) -> None:
        for op in operations:
            if isinstance(op, Cancel):
                self._timers.pop(op.key, None)  # its heap entry goes stale
            elif isinstance(op, Schedule):
                timer = self._timers.get(op.key)
                if timer is None:
                    self._timers[op.key] = _Timer(op.deadline_ms, op.event)
                    heapq.heappush(self._heap, (op.deadline_ms, op.key))
                else:
                    timer.deadline_ms, timer.event = op.deadline_ms, op.event
                    if op.deadline_ms < timer.queued_ms:
                        timer.queued_ms = op.deadline_ms
                        heapq.heappush(self._heap, (op.deadline_ms, op.key))
            else:
                raise TypeError(f"unknown timer operation {op!r}")
        if not self._running and len(self._heap) >= _COMPACT_FROM and \
                2 * len(self._heap) > 3 * len(self._timers):
            self._compact()
        self._arm()

    def _compact(self) -> None:
        """Drop the stale entries: one entry per live timer, at the deadline it is queued for."""
        self._heap = [(timer.queued_ms, key) for key, timer in self._timers.items()]
        heapq.heapify(self._heap)

    def close(self) -> None:
        if self._wakeup is not None:
            self._wakeup.cancel()
            self._wakeup = None
        self._timers.clear()
        self._heap.clear()

    def fire_due(self) -> None:
        """Fire what is due now, at once: the clock jumped (broker/clock.py, test mode), so
        the loop timer armed for the earliest deadline may be far too late."""
        if self._running:
            return
        if self._wakeup is not None:
            self._wakeup.cancel()
            self._wakeup = None
        self._run()

    def _arm(self) -> None:
        """Keep the loop timer set for the earliest entry (never while running: _run re-arms)."""
        if self._running or not self._heap:
            return
        earliest = self._heap[0][0]
        if self._wakeup is not None:
            if self._wakeup_ms <= earliest:
                return  # already set early enough (an early wake-up finds nothing due)
            self._wakeup.cancel()
        self._wakeup_ms = earliest
        self._wakeup = asyncio.get_running_loop().call_later(
            max(earliest - self._now_ms(), 0) / 1000, self._run)

    def _run(self) -> None:
        self._wakeup = None
        self._running = True
        try:
            now = self._now_ms()
            # Only what is due now: a timer scheduled by a firing one, even for "now", waits for
            # the next loop iteration, as a new loop timer would (requests that arrived meanwhile
            # are handled first).
            due = []
            while self._heap and self._heap[0][0] <= now:
                queued, key = heapq.heappop(self._heap)
                timer = self._timers.get(key)
                if timer is not None and timer.queued_ms == queued < timer.deadline_ms:
                    # pushed later: queued again at its deadline, which sorts it among the
                    # others when the loop comes late and that deadline has passed too
                    timer.queued_ms = timer.deadline_ms
                    heapq.heappush(self._heap, (timer.deadline_ms, key))
                    continue
                due.append((queued, key))
            for queued, key in due:
                timer = self._timers.get(key)
                if timer is None or timer.queued_ms != queued:
                    continue  # cancelled, replaced, or queued again earlier
                if timer.deadline_ms > now:  # pushed later: come back at the new deadline
                    timer.queued_ms = timer.deadline_ms
                    heapq.heappush(self._heap, (timer.deadline_ms, key))
                    continue
                del self._timers[key]
                self._fire(key, timer.event, now)
        finally:
            self._running = False
            self._arm()
