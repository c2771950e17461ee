"""What an operation changed at once, able to put itself back: the one model of mutation every
group type shares (results.py; docs/architecture.md, "One model of mutation").

An operation applies its changes to the groups as it decides them, so the next request sees
them, and notes each one here, in its Result's `changes`. A refused operation reverts its own
at once; one whose records cannot be written is reverted by the shard (`revert`) before its
continuations answer. A change is a small typed value: what it changed and what was there
before, so an operation costs what it changes, not what its group holds.

Each group type keeps its own changes: the classic group's in classic/changes.py, a consumer
group's (one per record type it replays) in consumer/changes.py.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class Change(Protocol):
    def undo(self, now: int) -> None:
        """Put back what this change did (the changes made after it are already undone)."""


def revert(changes: Iterable[Change], now: int) -> None:
    """Undo these changes, newest first."""
    for change in reversed(tuple(changes)):
        change.undo(now)
