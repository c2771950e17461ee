"""One consumer-coordinator operation in progress, passed explicitly to every step that changes
a group: its records are applied at once through replay() (the function a restart uses), each
noted first with how to undo it, so that a refused operation, or one whose records cannot be
written, puts everything back. An undo log rather than a snapshot: an operation costs what it
changes, not what the group holds (a heartbeat of a 1,000-member group changes one member).

The undo entries are tagged by the record type they reverse (_inverse, one case per record type
of consumer/replay.py) and by "classic", a classic group taken out of or put into the classic
coordinator's groups (an online upgrade or downgrade, migration.py; a simple group giving way).
"""
from __future__ import annotations

from roster.coordinator.consumer import records as rec
from roster.coordinator.consumer.model import ConsumerGroup
from roster.coordinator.consumer.replay import replay
from roster.coordinator.consumer.timers import ConsumerWritten
from roster.coordinator.results import Result


class Operation:
    __slots__ = ("groups", "classic_groups", "now", "log", "fenced")

    def __init__(self, groups: dict[str, ConsumerGroup], classic_groups: dict | None,
                 now: int) -> None:
        self.groups = groups
        self.classic_groups = classic_groups   # the classic coordinator's, None: there is none
        self.now = now
        self.log: list[tuple] = []
        self.fenced: tuple[str, ...] = ()      # the members this operation removes

    def write(self, records: list, result: Result) -> None:
        """Apply records through replay(), noting first how to undo each; they join the
        result's records."""
        groups = self.groups
        for record in records:
            self.log.append(_inverse(groups, record))
            replay(groups, record, self.now)
            group = groups.get(record.key.group)
            if group is not None:
                group.steady_version = None   # changed: the next heartbeat looks again
        result.records.extend(records)

    def take_classic(self, group_id: str) -> None:
        """The classic group of this id leaves the classic coordinator (put back on undo)."""
        self.log.append(("classic", group_id, self.classic_groups.pop(group_id)))

    def put_classic(self, group_id: str, group) -> None:
        """A classic group of this id replaces whatever the classic coordinator had."""
        self.log.append(("classic", group_id, self.classic_groups.get(group_id)))
        self.classic_groups[group_id] = group

    def revert(self) -> None:
        undo(self.groups, self.classic_groups, tuple(self.log))

    def written(self, group_id: str, token, reply) -> ConsumerWritten:
        """The continuation: answer once written, or undo and answer the error."""
        return ConsumerWritten(group_id, token, reply, tuple(self.log), self.fenced)


def _inverse(groups: dict[str, ConsumerGroup], record) -> tuple:
    key = record.key
    group = groups.get(key.group)
    if group is None:
        return ("absent", key.group)
    t = key.type
    if t == rec.GROUP_METADATA:
        return ("group", key.group, group, group.group_epoch)
    if t == rec.PARTITION_METADATA:
        return ("metadata", key.group, group.subscription_metadata)
    if t in (rec.MEMBER_METADATA, rec.CURRENT_ASSIGNMENT):
        return ("member", key.group, key.member, group.members.get(key.member),
                group.session_deadlines.get(key.member))
    if t == rec.TARGET_METADATA:
        return ("target_epoch", key.group, group.assignment_epoch)
    if t == rec.TARGET_MEMBER:
        return ("target", key.group, key.member, group.target.get(key.member))
    if t == rec.REGULAR_EXPRESSION:
        return ("regex", key.group, key.regex, group.resolved_regex.get(key.regex))
    return ("none", key.group)


def undo(groups: dict[str, ConsumerGroup], classic_groups: dict | None, log: tuple) -> None:
    """Put the groups back as they were before the operation whose undo log this is."""
    for entry in reversed(log):
        kind, group_id = entry[0], entry[1]
        if kind == "classic":   # the classic group before a conversion (migration.py)
            if entry[2] is None:
                classic_groups.pop(group_id, None)
            else:
                classic_groups[group_id] = entry[2]
            continue
        if kind == "absent":
            groups.pop(group_id, None)
            continue
        if kind == "group":
            group = groups[group_id] = entry[2]
            group.group_epoch = entry[3]
            continue
        group = groups.get(group_id)
        if group is None:
            continue
        if kind == "metadata":
            group.subscription_metadata = entry[2]
        elif kind == "member":
            if entry[3] is None:
                group.remove_member(entry[2])
            else:
                group.put_member(entry[3])
                if entry[4] is not None:   # removing it took its session deadline
                    group.session_deadlines[entry[2]] = entry[4]
            group.subscribed_cache = group.regex_cache = None
        elif kind == "target_epoch":
            group.assignment_epoch = entry[2]
        elif kind == "target":
            if entry[3] is None:
                group.target.pop(entry[2], None)
            else:
                group.target[entry[2]] = entry[3]
        elif kind == "regex":
            if entry[3] is None:
                group.resolved_regex.pop(entry[2], None)
            else:
                group.resolved_regex[entry[2]] = entry[3]
            group.subscribed_cache = None
            group.regex_version = None    # resolve again: the catalog may differ now
