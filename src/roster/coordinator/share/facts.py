"""What the share coordinator tells the flight recorder (observability/share_recorder.py): plain
facts about one operation, in the order it decided them, as coordinator/facts.py defines them
for the other types. The share type's own classes, so that its recorder alone reads them
(flight_recorder.py routes a fact by its class); a deletion is the shared facts.GroupDeleted.

Pure values: a ShareView names each member's partitions by topic name, resolved when the
operation noted it; it is made once per operation that wrote records, never on a heartbeat
that changed nothing.
"""
from __future__ import annotations

from collections.abc import Callable

from roster.coordinator.triggers import Trigger
from roster.frozen import frozen


@frozen
class ShareEpochCause:
    """Why the group epoch is about to be bumped (the first cause of an operation wins)."""

    group_id: str
    trigger: Trigger
    now: int


@frozen
class ShareView:
    """A share group as the recorder reads it: its epochs and each member's epoch and
    partitions ((topic name, partition), ...)."""

    group_id: str
    group_epoch: int
    assignment_epoch: int
    members: tuple[tuple[str, int, frozenset], ...]

    @classmethod
    def of(cls, group, name_of: Callable[[bytes], str]) -> ShareView:
        return cls(group.group_id, group.group_epoch, group.assignment_epoch, tuple(
            (m.member_id, m.member_epoch,
             frozenset((name_of(tid), p) for tid, ps in m.assigned.items() for p in ps))
            for _, m in sorted(group.members.items())))


@frozen
class ShareObserved:
    """The group as an operation that wrote records left it (None: it is gone)."""

    group_id: str
    group: ShareView | None
    now: int
