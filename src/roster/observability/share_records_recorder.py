"""What became of a share group's records, for the flight recorder: the share coordinator's
facts (roster/share/counts.py: locks that expired, records archived at the delivery limit) and
the dead-letter queue's writes become GroupEvents of the group (protocol "share", generation
-1), so `roster groups history` and the console tell why a record came back or went away
without one event per record: one event per partition and pass of the lock timer, listing
members and offset ranges (at most counts.MAX_RANGES runs each, the rest counted).

Bounded per group: at most EVENTS_PER_WINDOW such events in WINDOW_MS; what is left out beyond
that is counted and told by the group's next event (`extra.suppressed`), and the records in
them stay counted in /metrics. Pure: `now` comes with each fact, topic names from the
`name_of` the edge hands over.
"""
from __future__ import annotations

from collections.abc import Callable

from roster.coordinator.triggers import OTHER, Trigger
from roster.observability.events import (
    ARCHIVED,
    DEAD_LETTERED,
    LOCKS_EXPIRED,
    GroupEvent,
)
from roster.share.counts import ArchivedAtLimit, LocksExpired, bounded, ranges

PROTOCOL = "share"
WINDOW_MS = 60_000
EVENTS_PER_WINDOW = 30

_CAUSES = {"release": "released by its consumer", "lock_expired": "its lock expired",
           "session_closed": "its share session closed"}


def _text(runs) -> str:
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


class ShareRecordsRecorder:
    def __init__(self, name_of: Callable[[object], str | None] = lambda topic_id: None,
                 per_window: int = EVENTS_PER_WINDOW, window_ms: int = WINDOW_MS) -> None:
        self._name_of = name_of
        self._per_window = per_window
        self._window_ms = window_ms
        self._windows: dict[str, list[int]] = {}   # group -> [window start, events in it]
        self._suppressed: dict[str, int] = {}      # group -> events left out since its last

    def derive(self, facts: list) -> list:
        """The share coordinator's facts as events (CoordinatorRuntime's derive_events)."""
        out: list = []
        for fact in facts:
            if isinstance(fact, LocksExpired):
                self._locks_expired(fact, out)
            elif isinstance(fact, ArchivedAtLimit):
                self._archived(fact, out)
        return out

    def forget(self, group_id: str) -> None:
        """The group is gone: its bound goes with it."""
        self._windows.pop(group_id, None)
        self._suppressed.pop(group_id, None)

    def _where(self, key) -> tuple[str, int]:
        group_id, topic_id, partition = key
        name = self._name_of(topic_id)
        return (name if name is not None else str(topic_id)), partition

    def _admit(self, group_id: str, now: int) -> bool:
        window = self._windows.get(group_id)
        if window is None or now - window[0] >= self._window_ms:
            window = self._windows[group_id] = [now, 0]
        if window[1] >= self._per_window:
            self._suppressed[group_id] = self._suppressed.get(group_id, 0) + 1
            return False
        window[1] += 1
        return True

    def _event(self, group_id: str, kind: str, now: int, trigger: Trigger, extra: dict,
               out: list) -> None:
        if not self._admit(group_id, now):
            return
        suppressed = self._suppressed.pop(group_id, 0)
        if suppressed:
            extra["suppressed"] = suppressed
        out.append(GroupEvent(group_id, PROTOCOL, kind, -1, trigger, now, now, extra=extra))

    def _locks_expired(self, fact: LocksExpired, out: list) -> None:
        topic, partition = self._where(fact.key)
        members = [{"member_id": member, "ranges": [list(r) for r in runs],
                    "left_out": left_out} for member, runs, left_out in fact.members]
        held = "; ".join(f"{m['member_id'] or '?'} held {_text(runs)}"
                         + (f" (+{left} more)" if left else "")
                         for m, (_, runs, left) in zip(members, fact.members))
        detail = (f"{fact.records} acquisition lock(s) expired on {topic}-{partition}: {held}"
                  + (f"; {fact.archived} archived at the delivery limit" if fact.archived
                     else "; released for redelivery"))
        who = fact.members[0][0] if len(fact.members) == 1 else None
        self._event(fact.key[0], LOCKS_EXPIRED, fact.now, Trigger(OTHER, who, detail=detail),
                    {"topic": topic, "partition": partition, "records": fact.records,
                     "archived": fact.archived, "members": members}, out)

    def _archived(self, fact: ArchivedAtLimit, out: list) -> None:
        topic, partition = self._where(fact.key)
        detail = (f"{fact.records} record(s) of {topic}-{partition} archived at delivery "
                  f"count {fact.delivery_count} (the limit): {_CAUSES.get(fact.cause, fact.cause)}"
                  f"; offsets {_text(fact.ranges)}"
                  + (f" (+{fact.left_out} more)" if fact.left_out else ""))
        self._event(fact.key[0], ARCHIVED, fact.now, Trigger(OTHER, fact.member, detail=detail),
                    {"topic": topic, "partition": partition, "records": fact.records,
                     "delivery_count": fact.delivery_count, "cause": fact.cause,
                     "member_id": fact.member, "ranges": [list(r) for r in fact.ranges],
                     "left_out": fact.left_out}, out)

    def dead_lettered(self, key, entries, dlq_topic: str, dlq_partition: int,
                      now: int) -> list:
        """The dead-letter queue wrote `entries` ((offset, delivery count) each) of share
        partition `key` to `dlq_topic`: its event (none beyond the group's bound)."""
        topic, partition = self._where(key)
        runs, left_out = bounded(ranges(offset for offset, _ in entries))
        detail = (f"{len(entries)} record(s) of {topic}-{partition} written to dead-letter "
                  f"topic {dlq_topic}-{dlq_partition}: offsets {_text(runs)}"
                  + (f" (+{left_out} more)" if left_out else ""))
        out: list = []
        self._event(key[0], DEAD_LETTERED, now, Trigger(OTHER, detail=detail),
                    {"topic": topic, "partition": partition, "records": len(entries),
                     "dead_letter_topic": dlq_topic, "dead_letter_partition": dlq_partition,
                     "ranges": [list(r) for r in runs], "left_out": left_out}, out)
        return out
