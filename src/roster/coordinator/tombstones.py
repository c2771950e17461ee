"""Deleting a classic group by its tombstone, the one way DeleteGroups, OffsetDelete and offset
expiry all do it: the tombstone is written first and takes effect (through the shard's replay,
as at a restart) only once durable. The group is Dead while it is written, so nothing joins it
meanwhile (replaying the tombstone would take the group, and whoever joined, away); if the write
fails nothing was deleted, and the group is back as it was. (Its offsets' tombstones are the
OffsetStore's, offset_store.py.)
"""
from __future__ import annotations

from collections.abc import Iterable

from roster.coordinator import records
from roster.coordinator.group import Group
from roster.coordinator.results import Result
from roster.coordinator.states import GroupState
from roster.protocol.group_records import GroupKey, Record


def bury(group: Group, now: int, result: Result) -> tuple[Record, ...]:
    """The group's tombstone, added to the result's records (the group is Dead meanwhile);
    returned for the continuation that replays it."""
    tombstone = records.group_tombstone(group.group_id)
    group.transition_to(GroupState.DEAD, now)
    result.records.append(tombstone)
    return (tombstone,)


def buried_groups(tombstones: Iterable[Record]) -> list[str]:
    """The groups these tombstones delete entirely, in order."""
    return [r.key.group for r in tombstones if isinstance(r.key, GroupKey)]


def unwritten(groups: dict[str, Group], tombstones: Iterable[Record], now: int) -> None:
    """The tombstones were not written: every group marked Dead for them is back, Empty."""
    for group_id in buried_groups(tombstones):
        group = groups.get(group_id)
        if group is not None and group.state is GroupState.DEAD:
            group.transition_to(GroupState.EMPTY, now, undo=True)
