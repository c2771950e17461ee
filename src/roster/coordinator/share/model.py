"""A share group (KIP-932) and its members, as the share coordinator keeps them.

An assignment is {topic id (16 bytes): frozenset of partitions}. Members are immutable values:
an operation builds the member's next value and the group swaps it in, so a restart rebuilds
the same state from the records and a failed write puts the old group back.

Kafka 4.4.0's ShareGroupState has two live states: Empty (no members) and Stable (any); a
share group has no reconciliation phase, since a member takes its target at once.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from roster.frozen import frozen

Assignment = dict[bytes, frozenset[int]]

EMPTY_STATE = "Empty"
STABLE_STATE = "Stable"
DEAD_STATE = "Dead"
STABLE_MEMBER = 0     # Kafka's MemberState.STABLE, the one state a share member is ever in


def freeze(pairs) -> Assignment:
    """An assignment from (topic id, partitions) pairs; empty partition sets are left out, so
    two equal assignments compare equal however they were built."""
    out: dict[bytes, frozenset[int]] = {}
    for topic_id, partitions in pairs:
        ps = frozenset(partitions)
        if ps:
            out[topic_id] = out.get(topic_id, frozenset()) | ps
    return out


def size(assignment: Assignment) -> int:
    return sum(len(ps) for ps in assignment.values())


def pairs(assignment: Assignment):
    """(topic id, partition) in a stable order."""
    for topic_id in sorted(assignment):
        for p in sorted(assignment[topic_id]):
            yield topic_id, p


@frozen
class ShareMember:
    member_id: str
    # ShareGroupMemberMetadataValue
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: tuple[str, ...] = ()          # topic names, as Kafka's HashSet orders them
    # ShareGroupCurrentMemberAssignmentValue
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = STABLE_MEMBER
    assigned: Assignment = field(default_factory=dict)

    def replace(self, **changes) -> ShareMember:
        return dataclasses.replace(self, **changes)


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    # ShareGroupMetadataValue; a new group starts at 0, as Kafka's
    group_epoch: int = 0
    metadata_hash: int = 0
    # ShareGroupTargetAssignmentMetadataValue
    assignment_epoch: int = 0
    assignment_timestamp: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)     # member id -> its target
    # ShareGroupStatePartitionMetadataValue: topic id -> (topic name, partitions) whose share
    # state was asked to be initialised (roster initialises before it assigns, so nothing
    # stays in "initializing"); the other two lists are kept as read
    initialized: dict[bytes, tuple[str, frozenset[int]]] = field(default_factory=dict)
    initializing: tuple = ()
    deleting: tuple = ()

    @property
    def state(self) -> str:
        return STABLE_STATE if self.members else EMPTY_STATE

    def subscribed_names(self) -> set[str]:
        return {name for m in self.members.values() for name in m.subscribed}

    def copy(self) -> ShareGroup:
        return ShareGroup(self.group_id, self.group_epoch, self.metadata_hash,
                          self.assignment_epoch, self.assignment_timestamp, dict(self.members),
                          dict(self.target), dict(self.initialized), self.initializing,
                          self.deleting)
