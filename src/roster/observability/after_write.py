"""When the flight recorder's events may leave the group runtime: only once the group records
they describe are durable. An event says "generation 7 is stable" or "a rebalance was saved";
written to `__roster_group_events` before the records of that generation (or of the static
member's new id) reached `__consumer_offsets`, it could tell of something a crash then undid.

So the events of an operation that wrote records wait for that write; those of a failed write
are dropped (the coordinator undoes or retries what they describe). The events of an operation
that wrote nothing go at once, unless earlier events are still waiting: then they go after those,
so the topic keeps the order the coordinator decided things in. Pure bookkeeping, no I/O; an
operation without events (every heartbeat) never comes here.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable

_WAITING, _WRITTEN, _FAILED = "waiting", "written", "failed"


class EventsAfterWrites:
    def __init__(self, publish: Callable[[list], None]) -> None:
        self._publish = publish
        self._queue: deque[list] = deque()     # [events, state], in the order operations ran
        self._held: dict[int, list] = {}       # id(events) -> its slot in _queue

    @property
    def waiting(self) -> int:
        """How many operations' events are waiting for their records (or behind those)."""
        return len(self._queue)

    def hold(self, events: list) -> None:
        """The operation that made these events is writing records: keep them until it is done."""
        slot = [events, _WAITING]
        self._queue.append(slot)
        self._held[id(events)] = slot

    def release(self, events: list, written: bool) -> None:
        """The operation's records are written (written=True), failed to be (False), or it
        wrote none (True, never held). Publishes every event whose turn has come."""
        slot = self._held.pop(id(events), None)
        if slot is not None:
            slot[1] = _WRITTEN if written else _FAILED
        elif not self._queue:
            if written:
                self._publish(events)   # the usual case: nothing is waiting ahead of it
            return
        else:
            self._queue.append([events, _WRITTEN if written else _FAILED])
        while self._queue and self._queue[0][1] is not _WAITING:
            ready, state = self._queue.popleft()
            if state is _WRITTEN:
                self._publish(ready)
