"""What a coordinator operation hands back to the edge: records to write, replies to release,
timers to set. The core never performs I/O; the edge carries these out in order.

Replies are addressed by an opaque token the edge attached to the request. A reply in a result is
released only after that result's records are durable; then its continuations (continuations.py)
go back to GroupShard.write_completed (shard.py).

Every group type mutates the same way (docs/architecture.md, "One model of mutation"): an
operation changes state at once and notes in `changes` how to put each change back
(changes.py); if its records cannot be written, the edge hands them to the shard's `revert`
before any continuation runs. What nobody may see before it is durable (committed offsets, a
deletion taking effect, a classic generation's assignment) is not changed at once: a
continuation applies it once written.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable

from roster.frozen import frozen


@frozen
class Parked:
    """A request the coordinator holds until it can be answered (JoinGroup/SyncGroup long polls)."""

    token: Hashable
    api_version: int


@frozen
class Reply:
    token: Hashable
    body: Any


@frozen
class Schedule:
    """Run `event` at `deadline_ms` unless the key is rescheduled or cancelled first."""

    key: str
    deadline_ms: int
    event: Any


@frozen
class Cancel:
    key: str


@dataclass(slots=True)
class Result:
    records: list = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    timers: list[Schedule | Cancel] = field(default_factory=list)
    # what to do once the records are written, in order: continuations.py's, and each group
    # type's own (listed in its `steps`; the consumer type's ConsumerWritten, the shard's
    # JoinAfterDeletion), handed back to GroupShard.write_completed
    after_write: list = field(default_factory=list)
    # what the flight recorder is told (coordinator/facts.py), in the order decided;
    # observed, never steer
    facts: list = field(default_factory=list)
    # the GroupEvents the edge derives from the facts (observability/flight_recorder.py); the
    # core never fills this
    events: list = field(default_factory=list)
    # what the operation changed at once, each able to put itself back (changes.Change), in
    # the order made; reverted, newest first, if the records are not written
    changes: list = field(default_factory=list)
    # what the edge does beyond writing records, once they are durable (a streams group's
    # internal topics to create, a share group's state to initialise): values of the classes
    # the type registered handlers for (GroupTypeRegistration.effects); a tuple, as few
    # results carry any
    effects: tuple = ()

    def reply(self, token: Hashable, body: Any) -> None:
        self.replies.append(Reply(token, body))

    def schedule(self, key: str, deadline_ms: int, event: Any) -> None:
        self.timers.append(Schedule(key, deadline_ms, event))

    def cancel(self, key: str) -> None:
        self.timers.append(Cancel(key))

    def merge(self, then: Result) -> Result:
        """This result followed by `then`, as one (their records go in one write)."""
        self.records += then.records
        self.replies += then.replies
        self.timers += then.timers
        self.after_write += then.after_write
        self.facts += then.facts
        self.changes += then.changes
        self.effects += then.effects
        return self
