"""What an operation does once its records are written (or failed to be): one frozen type per
kind of continuation. A Result carries them in `after_write`; the edge hands each back,
untouched, to GroupShard.write_completed (shard.py), which settles its own (offsets, deletions)
and hands the others, by type, to the group type that listed it in its `steps` (the classic
coordinator takes the rest). These are the shard's (JoinAfterDeletion too, which a type that
gives way to a classic group asks for) and the classic coordinator's; the consumer coordinator's
ConsumerWritten is in consumer/timers.py.

Records that take effect only once durable (offset commits, tombstones) are the continuation's
own field: the same objects the Result writes, replayed by the shard itself. What an
operation changed at once is not here: it is in the Result's `changes`, reverted by the shard
before any continuation hears of a failed write (changes.py).
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import Record


@dataclass(frozen=True, slots=True)
class JoinAfterDeletion:
    """A classic JoinGroup found an empty group of a type that gives way to a classic group (a
    consumer group, as in Kafka): it was deleted (its records are being written); once they
    are, the shard runs the join again (or answers it the write's error)."""

    request: object   # messages.JoinRequest


@dataclass(frozen=True, slots=True)
class OffsetsCommitted:
    """OffsetCommit: replay the offsets, then answer (every partition gets the write's error if
    it failed)."""

    token: Hashable
    group_id: str
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
    written: answer it; or, the replacement undone (changes.StaticIdReplaced), answer the
    write's error."""

    group_id: str
    old_id: str
    new_id: str
    leader_before: str | None
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


# the shard's (offsets, deletions) and the classic coordinator's; other types list theirs in
# their `steps` (consumer/timers.py's ConsumerWritten), the shard's own JoinAfterDeletion is
# in shard.py
Continuation = (OffsetsCommitted | LeaderAssignmentWritten | StaticMemberReplaced
                | OffsetsDeleted | GroupsDeleted | OffsetsExpired)
