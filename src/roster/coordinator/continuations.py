"""What an operation does once its records are written (or failed to be): one frozen type per
kind of continuation. A Result carries them in `after_write`; the edge hands each back,
untouched, to Coordinator.write_completed, which dispatches on the type.

Records that take effect only once durable (offset commits, tombstones) are the continuation's
own field: the same objects the Result writes, replayed by the coordinator itself.
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import Record

Protocols = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class OffsetsCommitted:
    """OffsetCommit: replay the offsets, then answer (every partition gets the write's error if
    it failed)."""

    token: Hashable
    answers: tuple[tuple[str, int, ErrorCode], ...]
    records: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class LeaderAssignmentWritten:
    """SyncGroup from the leader: hand the assignment out, if the group is still in the sync
    phase of that generation."""

    group_id: str
    generation: int
    assignments: Mapping[str, bytes]


@dataclass(frozen=True, slots=True)
class StaticMemberReplaced:
    """A static member rejoined with a new id (KIP-345) and the group record naming it was
    written: answer it, or undo the replacement."""

    group_id: str
    old_id: str
    new_id: str
    leader_before: str | None
    previous: tuple[Protocols, int, int]   # protocols, rebalance and session timeouts
    api_version: int


@dataclass(frozen=True, slots=True)
class OffsetsDeleted:
    """OffsetDelete: the tombstones take effect, then the answer."""

    token: Hashable
    answers: tuple[tuple[str, int, ErrorCode], ...]
    tombstones: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class GroupsDeleted:
    """DeleteGroups: the tombstones take effect, then each group's answer."""

    token: Hashable
    outcome: Mapping[str, ErrorCode]
    tombstones: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class OffsetsExpired:
    """Offset expiry: nobody waits for an answer; the tombstones take effect."""

    tombstones: tuple[Record, ...]


Continuation = (OffsetsCommitted | LeaderAssignmentWritten | StaticMemberReplaced
                | OffsetsDeleted | GroupsDeleted | OffsetsExpired)
