"""What an operation changed at once, able to put itself back: the one model of mutation every
group type shares (results.py; docs/architecture.md, "One model of mutation").

An operation applies its changes to the groups as it decides them, so the next request sees
them, and notes each one here, in its Result's `changes`. A refused operation reverts its own
at once; one whose records cannot be written is reverted by the shard (`revert`) before its
continuations answer. A change is a small typed value: what it changed and what was there
before, so an operation costs what it changes, not what its group holds.

Each group type keeps its own changes: the classic group's in classic/changes.py, a consumer
group's (one per record type it replays) in consumer/changes.py. The types whose members are
immutable values (share and streams groups) put the whole group back: one `GroupPutBack` per
group an operation writes to, kept by a `WholeGroupOperation`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from roster.coordinator.results import Result
from roster.frozen import frozen


class Change(Protocol):
    def undo(self, now: int) -> None:
        """Put back what this change did (the changes made after it are already undone)."""


def revert(changes: Iterable[Change], now: int) -> None:
    """Undo these changes, newest first."""
    for change in reversed(tuple(changes)):
        change.undo(now)


@frozen
class GroupPutBack:
    """The group as it was before an operation (None: it did not exist); undone, it is again."""
    groups: dict
    group_id: str
    before: object | None

    def undo(self, now: int) -> None:
        if self.before is None:
            self.groups.pop(self.group_id, None)
        else:
            self.groups[self.group_id] = self.before


@dataclass
class WholeGroupOperation:
    """One operation's writes to groups that are put back whole: before the first record of a
    group is replayed, a copy of the group is kept (`copy`); `replay` applies a record. A group
    type names both in its subclass."""
    groups: dict
    now: int
    changes: list = field(default_factory=list)
    saved: set = field(default_factory=set)

    def copy(self, group):
        raise NotImplementedError

    def replay(self, record) -> None:
        raise NotImplementedError

    def write(self, records: list, result) -> None:
        for record in records:
            gid = record.key.group
            if gid not in self.saved:
                self.saved.add(gid)
                group = self.groups.get(gid)
                self.changes.append(GroupPutBack(self.groups, gid,
                                                 None if group is None else self.copy(group)))
            self.replay(record)
        result.records.extend(records)

    def revert(self) -> None:
        for change in reversed(self.changes):
            change.undo(self.now)
        self.changes.clear()


@frozen
class MemberWritten:
    """The continuation of a member's operation in a group put back whole (share, streams):
    once its records are written, `reply` goes to `token`; if they could not be (the shard has
    put the group back), the error is answered and a session timeout's fencing of `fenced`
    members is tried again."""
    group_id: str
    token: object
    reply: object
    fenced: tuple[str, ...] = ()

    def completed(self, error, groups: dict, now: int, retry_fencing: Callable,
                  failed_reply: Callable) -> Result:
        """The group type's write_completed: `retry_fencing(result, group_id, member_id, now)`
        schedules a fencing again, `failed_reply(error)` is the answer to a failed write."""
        result = Result()
        if error is None:
            if self.token is not None:
                result.reply(self.token, self.reply)
            return result
        group = groups.get(self.group_id)       # as it was: the shard put it back
        if group is not None:
            for member_id in self.fenced:
                if member_id in group.members:
                    retry_fencing(result, self.group_id, member_id, now)
        if self.token is not None:
            result.reply(self.token, failed_reply(error))
        return result
