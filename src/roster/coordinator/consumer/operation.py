"""One consumer-coordinator operation in progress, passed explicitly to every step that changes
a group: its records are applied at once through replay() (the function a restart uses), which
notes first, in the same switch, the change that puts each back (consumer/changes.py), so
that a refused operation reverts at once and one whose records cannot be written is reverted
by the shard — the one model of mutation every group type shares (coordinator/changes.py).
"""
from __future__ import annotations

from roster.coordinator.changes import revert
from roster.coordinator.consumer.changes import ClassicGroupPutBack
from roster.coordinator.consumer.model import ConsumerGroup
from roster.coordinator.consumer.replay import replay
from roster.coordinator.consumer.timers import ConsumerWritten
from roster.coordinator.results import Result


class Operation:
    __slots__ = ("groups", "classic_groups", "now", "changes", "fenced", "classic_made")

    def __init__(self, groups: dict[str, ConsumerGroup], classic_groups: dict | None,
                 now: int) -> None:
        self.groups = groups
        self.classic_groups = classic_groups   # the classic coordinator's, None: there is none
        self.now = now
        self.changes: list = []
        self.fenced: tuple[str, ...] = ()      # the members this operation removes
        self.classic_made: tuple = ()          # the classic groups it makes (put_classic)

    def write(self, records: list, result: Result) -> None:
        """Apply records through replay(), noting first how to undo each; they join the
        result's records."""
        groups, changes = self.groups, self.changes
        for record in records:
            replay(groups, record, self.now, changes)   # notes the change that undoes it
            group = groups.get(record.key.group)
            if group is not None:
                group.steady_version = None   # changed: the next heartbeat looks again
        result.records.extend(records)

    def take_classic(self, group_id: str) -> None:
        """The classic group of this id leaves the classic coordinator (put back on undo)."""
        self.changes.append(ClassicGroupPutBack(self.classic_groups, group_id,
                                                self.classic_groups.pop(group_id)))

    def put_classic(self, group_id: str, group) -> None:
        """A classic group of this id replaces whatever the classic coordinator had."""
        self.changes.append(ClassicGroupPutBack(self.classic_groups, group_id,
                                                self.classic_groups.get(group_id)))
        self.classic_groups[group_id] = group
        self.classic_made += (group,)

    def revert(self) -> None:
        """The operation is refused: everything it changed is put back."""
        revert(self.changes, self.now)
        self.changes.clear()

    def finish(self, result: Result, group_id: str, token, reply) -> None:
        """Its changes go into the result (reverted by the shard if the write fails), and the
        continuation: answer once written, or answer the error."""
        result.changes += self.changes
        result.after_write.append(ConsumerWritten(group_id, token, reply, self.fenced,
                                                  self.classic_made))
