"""Deleting a classic group by its tombstone, the one way DeleteGroups, OffsetDelete and offset
expiry all do it: the tombstone is written first and takes effect (through the shard's replay,
as at a restart) only once durable. The group is Dead while it is written, so nothing joins it
meanwhile (replaying the tombstone would take the group, and whoever joined, away); if the write
fails nothing was deleted, and the group is back as it was (changes.Buried, reverted by the
shard). (Its offsets' tombstones are the OffsetStore's, offset_store.py.)
"""
from __future__ import annotations

from roster.coordinator.classic import records
from roster.coordinator.classic.changes import Buried
from roster.coordinator.classic.group import Group
from roster.coordinator.classic.states import GroupState
from roster.coordinator.results import Result
from roster.protocol.group_records import Record


def bury(group: Group, now: int, result: Result) -> tuple[Record, ...]:
    """The group's tombstone, added to the result's records (the group is Dead meanwhile);
    returned for the continuation that replays it."""
    tombstone = records.group_tombstone(group.group_id)
    group.transition_to(GroupState.DEAD, now)
    result.changes.append(Buried(group))
    result.records.append(tombstone)
    return (tombstone,)

