"""What a classic group operation does once its records are written (or failed to be); the
shard hands these to the classic coordinator's write_completed (coordinator/continuations.py
says how continuations work)."""
from __future__ import annotations

from collections.abc import Mapping

from roster.frozen import frozen


@frozen
class LeaderAssignmentWritten:
    """SyncGroup from the leader: hand the assignment out, if the group is still in the sync
    phase of that generation."""

    group_id: str
    generation: int
    assignments: Mapping[str, bytes]


@frozen
class StaticMemberReplaced:
    """A static member rejoined with a new id (KIP-345) and the group record naming it was
    written: answer it; or, the replacement undone (changes.StaticIdReplaced), answer the
    write's error."""

    group_id: str
    old_id: str
    new_id: str
    leader_before: str | None
    api_version: int


ClassicContinuation = LeaderAssignmentWritten | StaticMemberReplaced
