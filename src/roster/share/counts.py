"""What happened to a share partition's records, counted and noted by the pure core for the
edge's /metrics and flight recorder (observability/share_metrics.py,
observability/share_records_recorder.py). Plain values: the core never imports observability.

ShareCounts are running totals per share partition (the coordinator keeps one per partition it
holds, dropped with the partition, so a deleted group's counts go with it). The facts are what
explains a record's fate without one event per record: the locks that expired in one pass (by
member, as offset ranges), the records archived at the delivery limit in one operation.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from roster.frozen import frozen

# offset ranges a fact lists at most (the rest are counted, not listed)
MAX_RANGES = 16


@dataclass(slots=True)
class ShareCounts:
    acquired: int = 0       # records handed to members (every delivery)
    redelivered: int = 0    # of those, deliveries after the first (delivery count > 1)
    accepted: int = 0       # ACCEPT acknowledgements
    released: int = 0       # RELEASE acknowledgements, and records a closed session gave back
    rejected: int = 0       # REJECT acknowledgements
    renewed: int = 0        # RENEW acknowledgements (KIP-1222)
    lock_expired: int = 0   # acquisition locks that ran out (the record released)
    archived: int = 0       # archived at share.delivery.count.limit instead of redelivered
    dead_lettered: int = 0  # written to the group's dead-letter topic (the edge tells)

    def add(self, other: ShareCounts, sign: int = 1) -> None:
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + sign * getattr(other, name))

    def items(self) -> list[tuple[str, int]]:
        return [(name, getattr(self, name)) for name in COUNTERS]

    def __bool__(self) -> bool:
        return any(getattr(self, name) for name in COUNTERS)


COUNTERS = tuple(f.name for f in fields(ShareCounts))


def ranges(offsets) -> tuple[tuple[int, int], ...]:
    """Sorted offsets as (first, last) runs of consecutive offsets."""
    runs: list[list[int]] = []
    for offset in sorted(offsets):
        if runs and runs[-1][1] + 1 == offset:
            runs[-1][1] = offset
        else:
            runs.append([offset, offset])
    return tuple((first, last) for first, last in runs)


def bounded(runs: tuple[tuple[int, int], ...]) -> tuple[tuple[tuple[int, int], ...], int]:
    """At most MAX_RANGES runs, and how many offsets the runs left out hold."""
    kept = runs[:MAX_RANGES]
    return kept, sum(last - first + 1 for first, last in runs[MAX_RANGES:])


@frozen
class LocksExpired:
    """Fact: acquisition locks of a share partition ran out in one pass. `members`:
    (member id, offset ranges it held, offsets left out of the ranges) each; `archived`: how
    many of them were on their last delivery and so were archived instead of released."""
    key: tuple
    now: int
    members: tuple[tuple[str, tuple[tuple[int, int], ...], int], ...]
    records: int
    archived: int


@frozen
class ArchivedAtLimit:
    """Fact: records reached share.delivery.count.limit and were archived, not redelivered.
    `cause`: how their last delivery ended (release, lock_expired, session_closed);
    `member`: who held them; `ranges`/`left_out` as LocksExpired's."""
    key: tuple
    now: int
    member: str | None
    cause: str
    delivery_count: int
    ranges: tuple[tuple[int, int], ...]
    left_out: int
    records: int


# how a delivery ended without an acknowledgement of the consumer's
RELEASE = "release"
LOCK_EXPIRED = "lock_expired"
SESSION_CLOSED = "session_closed"
