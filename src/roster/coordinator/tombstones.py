"""Deleting group state by records, the one way DeleteGroups, OffsetDelete and offset expiry
all do it: tombstones are written first and take effect (through replay, as at a restart) only
once durable. A group that is to go entirely is Dead while its tombstone is written, so nothing
joins it meanwhile (replaying the tombstone would take the group, and whoever joined, away);
if the write fails nothing was deleted, and the group is back as it was.
"""
from __future__ import annotations

from collections.abc import Iterable

from roster.coordinator import records
from roster.coordinator.group import Group
from roster.coordinator.results import Result
from roster.coordinator.states import GroupState
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import GroupKey, Record


def bury(group: Group, offsets: Iterable[tuple[str, int]], whole_group: bool, now: int,
         result: Result) -> tuple[Record, ...]:
    """Tombstones for these offsets of the group, and for the group itself when `whole_group`
    (which marks it Dead), added to the result's records; returns them for the continuation."""
    tombstones = [records.offset_tombstone(group.group_id, topic, partition)
                  for topic, partition in offsets]
    if whole_group:
        tombstones.append(records.group_tombstone(group.group_id))
        group.transition_to(GroupState.DEAD, now)
    result.records.extend(tombstones)
    return tuple(tombstones)


def buried_groups(tombstones: Iterable[Record]) -> list[str]:
    """The groups these tombstones delete entirely, in order."""
    return [r.key.group for r in tombstones if isinstance(r.key, GroupKey)]


def settle(ctx, tombstones: Iterable[Record], error: ErrorCode | None, now: int) -> None:
    """The tombstones were written (error None): they take effect. Or they were not: every group
    marked Dead for them is back, Empty."""
    if error is None:
        for record in tombstones:
            ctx.replay(record, now)
        return
    for group_id in buried_groups(tombstones):
        group = ctx.groups.get(group_id)
        if group is not None and group.state is GroupState.DEAD:
            group.transition_to(GroupState.EMPTY, now, undo=True)
