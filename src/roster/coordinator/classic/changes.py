"""What a classic group operation changed at once, able to put itself back (the shared model
of mutation is coordinator/changes.py)."""
from __future__ import annotations

from typing import NamedTuple

from roster.coordinator.classic.group import Group
from roster.coordinator.classic.states import GroupState

Protocols = tuple[tuple[str, bytes], ...]


class StaticIdReplaced(NamedTuple):
    """A static member rejoined with a new id (KIP-345) and new protocols and timeouts; undone,
    the member has its old id and what it had before (a JoinGroup parked under the new id moves
    with it, for the continuation to answer)."""

    group: Group
    old_id: str
    new_id: str
    previous: tuple[Protocols, int, int]   # protocols, rebalance and session timeouts

    def undo(self, now: int) -> None:
        group = self.group
        member = group.members.get(self.new_id)
        if member is None or group.state is GroupState.DEAD:
            return   # it left meanwhile, or the group is going: nothing to give back
        protocols, rebalance_timeout, session_timeout = self.previous
        group.set_protocols(member, protocols)
        member.rebalance_timeout_ms = rebalance_timeout
        member.session_timeout_ms = session_timeout
        group.replace_static(self.new_id, self.old_id)


class SimpleGroupCreated(NamedTuple):
    """A commit from outside any group made a simple group (offsets.validate_commit, as Kafka
    does); undone, the group is gone again if it is still that empty group (its offsets were
    not written, so none were replayed)."""

    groups: dict
    group: Group

    def undo(self, now: int) -> None:
        group = self.group
        if self.groups.get(group.group_id) is group and not group.members \
                and group.state is GroupState.EMPTY:
            del self.groups[group.group_id]


class Buried(NamedTuple):
    """A classic group was marked Dead while its tombstone is written (tombstones.py); undone,
    it is Empty again."""

    group: Group

    def undo(self, now: int) -> None:
        if self.group.state is GroupState.DEAD:
            self.group.transition_to(GroupState.EMPTY, now, undo=True)
