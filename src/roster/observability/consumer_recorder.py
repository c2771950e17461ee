"""The consumer protocol's (KIP-848) flight recorder. A generation here is a group epoch: the
coordinator names the cause just before it bumps the epoch (cause()), and after every operation
that wrote records it lets the recorder look at the group (observe()). The recorder follows
partition ownership (a member's assigned plus pending-revocation partitions) to tell which
partitions changed owner and how long each had none; the event is written once every member
has reconciled to the new epoch ("stable"), or when the next epoch begins first
("interrupted"). Pure; a heartbeat that changes nothing never reaches it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from roster.observability.events import (
    CONSUMER,
    DELETED,
    GENERATION,
    GROUP_DELETED,
    OTHER,
    SAVED,
    STATIC_REJOIN,
    GroupEvent,
    Moved,
    Trigger,
)

STATIC_LEAVE_EPOCH = -2


@dataclass(slots=True)
class _Open:
    trigger: Trigger
    started_ms: int
    epoch: int
    members_before: tuple
    moves: dict = field(default_factory=dict)   # (topic id, partition) -> Moved
    members_at_open: tuple = ()
    triggers_after: int = 0


def _members(group) -> tuple:
    return tuple(sorted((m.member_id, m.instance_id) for m in group.members.values()))


def _owners(group) -> dict:
    owners = {}
    for member in group.members.values():
        who = member.instance_id or member.member_id
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    owners[(topic_id, p)] = who
    return owners


class ConsumerRecorder:
    def __init__(self) -> None:
        self._cause: dict[str, tuple[Trigger, int]] = {}
        self._extra_causes: dict[str, int] = {}
        self._epoch: dict[str, int] = {}
        self._owners: dict[str, dict] = {}
        self._released: dict[str, dict] = {}     # partition -> (since ms, previous owner)
        self._open: dict[str, _Open] = {}
        self._last: dict[str, tuple] = {}
        self._saved: list[tuple] = []

    def loaded(self, group, now: int) -> None:
        """A group replayed from `__consumer_offsets` after a restart: its epoch, members and
        partition owners are where the next epoch starts from (without this, the first event
        after a restart would report every partition as moved and nobody as a member before).
        An epoch some member had not reconciled to when the broker stopped is followed from
        now on; what caused it was not written down."""
        group_id = group.group_id
        self._epoch[group_id] = group.group_epoch
        self._owners[group_id] = _owners(group)
        self._last[group_id] = members = _members(group)
        if group.members and not self._settled(group, group.group_epoch):
            self._open[group_id] = _Open(
                Trigger(OTHER, detail="under way when the broker restarted"), now,
                group.group_epoch, members, members_at_open=members)

    def cause(self, group_id: str, trigger: Trigger, now: int) -> None:
        """Why the group epoch is about to be bumped (the first cause of an operation wins)."""
        if group_id in self._cause:
            self._extra_causes[group_id] = self._extra_causes.get(group_id, 0) + 1
        else:
            self._cause[group_id] = (trigger, now)

    def saved(self, group_id: str, instance_id: str, new_id: str, old_id: str) -> None:
        self._saved.append((group_id, instance_id, new_id, old_id))

    def forget_operation(self) -> None:
        """The operation failed and was undone: nothing it named happened."""
        self._cause.clear()
        self._extra_causes.clear()
        self._saved.clear()

    def observe(self, group_id: str, group, now: int, result) -> None:
        cause = self._cause.pop(group_id, None)
        extra = self._extra_causes.pop(group_id, 0)
        saved, self._saved = self._saved, []
        if group is None:
            return
        epoch = group.group_epoch
        last = self._epoch.get(group_id)
        if last is None:
            # first sight: a group created now, or one loaded from the log (then its history
            # before this broker started is not ours to tell)
            last = 0 if cause is not None else epoch
            self._owners[group_id] = _owners(group) if cause is None else {}
            self._last[group_id] = () if cause is not None else _members(group)
        if epoch != last:
            current = self._open.pop(group_id, None)
            if current is not None:
                self._emit(group, current, now, result, "interrupted")
            trigger, started = cause if cause is not None else (Trigger(OTHER), now)
            self._open[group_id] = _Open(trigger, started, epoch, self._last.get(group_id, ()),
                                         triggers_after=extra,
                                         members_at_open=_members(group))
            self._epoch[group_id] = epoch
        elif cause is not None and group_id in self._open:
            self._open[group_id].triggers_after += 1 + extra
        for _, instance_id, new_id, old_id in saved:
            members = _members(group)
            result.events.append(GroupEvent(
                group_id, CONSUMER, SAVED, epoch,
                Trigger(STATIC_REJOIN, new_id, instance_id, None, old_id,
                        f"static member {instance_id} rejoined as {new_id} (was {old_id})"),
                now, now, members_before=members, members_after=members))
        self._follow_ownership(group_id, group, now)
        current = self._open.get(group_id)
        if current is None:
            return
        if not group.members:
            del self._open[group_id]
            self._emit(group, current, now, result, "empty")
        elif self._settled(group, current.epoch):
            del self._open[group_id]
            self._emit(group, current, now, result, "stable")

    @staticmethod
    def _settled(group, epoch: int) -> bool:
        """Every member has reconciled to an assignment of this epoch (or later)."""
        return group.assignment_epoch >= epoch and all(
            m.member_epoch == STATIC_LEAVE_EPOCH or m.reconciled_to(group.assignment_epoch)
            for m in group.members.values())

    def deleted(self, group_id: str, epoch: int, now: int, result) -> None:
        for table in (self._epoch, self._owners, self._released, self._open):
            table.pop(group_id, None)
        before = self._last.pop(group_id, ())
        result.events.append(GroupEvent(
            group_id, CONSUMER, DELETED, epoch, Trigger(GROUP_DELETED, detail="DeleteGroups"),
            now, now, members_before=before))

    def _follow_ownership(self, group_id: str, group, now: int) -> None:
        old = self._owners.get(group_id, {})
        new = _owners(group)
        if new == old:
            return
        released = self._released.setdefault(group_id, {})
        current = self._open.get(group_id)
        names = {tid: name for name, (tid, _) in group.subscription_metadata.items()}
        for key, who in old.items():
            if key not in new:
                released[key] = (now, who)
        for key, who in new.items():
            if old.get(key) == who:
                continue
            since, before = released.pop(key, (None, old.get(key)))
            if current is not None and before != who:
                topic_id, partition = key
                topic = names.get(topic_id, topic_id.hex() if isinstance(topic_id, bytes)
                                  else str(topic_id))
                current.moves[key] = Moved(topic, partition, before, who,
                                           None if since is None else now - since)
        self._owners[group_id] = new

    def _emit(self, group, current: _Open, now: int, result, outcome: str) -> None:
        # an epoch cut short by the next one had the members it began with
        after = current.members_at_open if outcome == "interrupted" else _members(group)
        result.events.append(GroupEvent(
            group.group_id, CONSUMER, GENERATION, current.epoch, current.trigger, now,
            current.started_ms, outcome=outcome, members_before=current.members_before,
            members_after=after,
            moved=tuple(sorted(current.moves.values(), key=lambda m: (m.topic, m.partition))),
            triggers_after=current.triggers_after))
        self._last[group.group_id] = after
