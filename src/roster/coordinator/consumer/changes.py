"""A consumer group's changes (the one model of mutation, coordinator/changes.py): one kind per
record type that consumer/replay.py applies, noting what was there before the record, and one
for a classic group taken out of or put into the classic coordinator (an online upgrade or
downgrade, migration.py; a simple group giving way).

A change names its group by id and finds it again when undone: the changes made after it, and
undone before it, may have put another group object under that id (a group record replaces
the group).
"""
from __future__ import annotations

from typing import NamedTuple

from roster.coordinator.consumer.model import ConsumerGroup


class GroupAbsent(NamedTuple):
    """The group did not exist: undone, it is gone again."""

    groups: dict
    group_id: str

    def undo(self, now: int) -> None:
        self.groups.pop(self.group_id, None)


class GroupPutBack(NamedTuple):
    """A group record: the group object and its epoch as they were."""

    groups: dict
    group_id: str
    group: ConsumerGroup
    group_epoch: int

    def undo(self, now: int) -> None:
        self.groups[self.group_id] = self.group
        self.group.group_epoch = self.group_epoch


class MetadataPutBack(NamedTuple):
    """A partition metadata record: the group's subscription metadata as it was."""

    groups: dict
    group_id: str
    subscription_metadata: object

    def undo(self, now: int) -> None:
        group = self.groups.get(self.group_id)
        if group is not None:
            group.subscription_metadata = self.subscription_metadata


class TargetEpochPutBack(NamedTuple):
    """A target metadata record: the group's target assignment epoch as it was."""

    groups: dict
    group_id: str
    assignment_epoch: int

    def undo(self, now: int) -> None:
        group = self.groups.get(self.group_id)
        if group is not None:
            group.assignment_epoch = self.assignment_epoch


class MemberPutBack(NamedTuple):
    """A member record or its current assignment: the member as it was (None: it was not
    there), with the session deadline that removing it took."""

    groups: dict
    group_id: str
    member_id: str
    member: object
    session_deadline: int | None

    def undo(self, now: int) -> None:
        group = self.groups.get(self.group_id)
        if group is None:
            return
        if self.member is None:
            group.remove_member(self.member_id)
        else:
            group.put_member(self.member)
            if self.session_deadline is not None:
                group.session_deadlines[self.member_id] = self.session_deadline
        group.subscribed_cache = group.regex_cache = None


class TargetPutBack(NamedTuple):
    """A member's target assignment as it was (None: it had none)."""

    groups: dict
    group_id: str
    member_id: str
    target: object

    def undo(self, now: int) -> None:
        group = self.groups.get(self.group_id)
        if group is not None:
            _restore(group.target, self.member_id, self.target)


class RegexPutBack(NamedTuple):
    """A resolved regular expression as it was (None: unresolved)."""

    groups: dict
    group_id: str
    regex: str
    resolved: object

    def undo(self, now: int) -> None:
        group = self.groups.get(self.group_id)
        if group is not None:
            _restore(group.resolved_regex, self.regex, self.resolved)
            group.subscribed_cache = None
            group.regex_version = None    # resolve again: the catalog may differ now


class ClassicGroupPutBack(NamedTuple):
    """The classic coordinator's group of this id as it was (None: it had none)."""

    classic_groups: dict
    group_id: str
    group: object

    def undo(self, now: int) -> None:
        _restore(self.classic_groups, self.group_id, self.group)


def _restore(mapping: dict, key, previous) -> None:
    """`mapping[key]` as it was: `previous`, or absent when that is None."""
    if previous is None:
        mapping.pop(key, None)
    else:
        mapping[key] = previous
