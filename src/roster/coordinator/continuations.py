"""What an operation does once its records are written (or failed to be): one frozen type per
kind of continuation. A Result carries them in `after_write`; the edge hands each back,
untouched, to GroupShard.write_completed (shard.py), which settles its own (offsets, deletions)
and hands the others, by type, to the group type that listed it in its `steps` (the classic
coordinator takes the rest). These are the shard's own (JoinAfterDeletion too, which a type that
gives way to a classic group asks for); each group type keeps its own in its package
(classic/continuations.py, consumer/timers.py's ConsumerWritten).

Records that take effect only once durable (offset commits, tombstones) are the continuation's
own field: the same objects the Result writes, replayed by the shard itself. What an
operation changed at once is not here: it is in the Result's `changes`, reverted by the shard
before any continuation hears of a failed write (changes.py).
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping

from roster.frozen import frozen
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import Record


@frozen
class JoinAfterDeletion:
    """A classic JoinGroup found an empty group of a type that gives way to a classic group (a
    consumer group, as in Kafka): it was deleted (its records are being written); once they
    are, the shard runs the join again (or answers it the write's error)."""

    request: object   # messages.JoinRequest


@frozen
class OffsetsCommitted:
    """OffsetCommit: replay the offsets, then answer (every partition gets the write's error if
    it failed)."""

    token: Hashable
    group_id: str
    answers: tuple[tuple[str, int, ErrorCode], ...]
    records: tuple[Record, ...]


@frozen
class OffsetsDeleted:
    """OffsetDelete: the tombstones take effect, then the answer."""

    token: Hashable
    answers: tuple[tuple[str, int, ErrorCode], ...]
    tombstones: tuple[Record, ...]


@frozen
class GroupsDeleted:
    """DeleteGroups: the tombstones take effect, then each group's answer."""

    token: Hashable
    outcome: Mapping[str, ErrorCode]
    tombstones: tuple[Record, ...]


@frozen
class OffsetsExpired:
    """Offset expiry: nobody waits for an answer; the tombstones take effect."""

    tombstones: tuple[Record, ...]


# the shard's own, settled in GroupShard.write_completed
Continuation = (JoinAfterDeletion | OffsetsCommitted | OffsetsDeleted | GroupsDeleted
                | OffsetsExpired)
