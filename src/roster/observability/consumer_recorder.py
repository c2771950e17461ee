"""The consumer protocol's (KIP-848) flight recorder. A generation here is a group epoch: the
coordinator notes the cause just before it bumps the epoch (facts.EpochCause, read by cause()),
and after every operation that wrote records what the group looks like then
(facts.ConsumerObserved, read by observe()). The recorder follows
partition ownership (a member's assigned plus pending-revocation partitions) to tell which
partitions changed owner and how long each had none; the event is written once every member
has reconciled to the new epoch ("stable"), or when the next epoch begins first
("interrupted"). Pure; a heartbeat that changes nothing never reaches it.

Members are immutable values, so what an operation changed is the members that are no longer
the objects last seen: ownership and reconciliation are followed through those alone (one
identity check per member, not a walk over every partition of the group at every operation).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from roster.coordinator import facts as f

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
        owners.update(_held(member))
    return owners


def _held(member) -> dict:
    """(topic id, partition) -> who holds it, for the partitions this member holds."""
    who = member.instance_id or member.member_id
    return {(topic_id, p): who
            for assignment in (member.assigned, member.pending_revocation)
            for topic_id, partitions in assignment.items() for p in partitions}


def _reconciled(member, assignment_epoch: int) -> bool:
    return member.member_epoch == STATIC_LEAVE_EPOCH or member.reconciled_to(assignment_epoch)


class ConsumerRecorder:
    name = "consumer"   # the GroupType it records
    facts = (f.EpochCause, f.ConsumerSaved, f.ConsumerObserved, f.OperationUndone,
             f.GroupDeleted)

    def take(self, fact, out: list) -> None:
        """One fact of a consumer group (flight_recorder.py hands it over)."""
        match fact:
            case f.EpochCause():
                self.cause(fact.group_id, fact.trigger, fact.now)
            case f.ConsumerSaved():
                self.saved(fact.group_id, fact.instance_id, fact.new_id, fact.old_id)
            case f.ConsumerObserved():
                self.observe(fact.group_id, fact.group, fact.now, out)
            case f.OperationUndone():
                self.forget_operation()
            case f.GroupDeleted():
                self.deleted(fact.group_id, fact.generation, fact.now, out)

    def __init__(self) -> None:
        self._cause: dict[str, tuple[Trigger, int]] = {}
        self._extra_causes: dict[str, int] = {}
        self._epoch: dict[str, int] = {}
        self._owners: dict[str, dict] = {}
        self._seen: dict[str, dict] = {}         # member id -> the member value last seen
        # (assignment epoch, members not reconciled to it) as of the last look
        self._unreconciled: dict[str, tuple[int, set]] = {}
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
        self._seen[group_id] = dict(group.members)
        self._unreconciled.pop(group_id, None)
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

    def observe(self, group_id: str, group, now: int, out: list) -> None:
        """`group` is what the operation left (facts.ConsumerView), None once it is gone."""
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
            self._seen[group_id] = dict(group.members) if cause is None else {}
            self._unreconciled.pop(group_id, None)
            self._last[group_id] = () if cause is not None else _members(group)
        if epoch != last:
            current = self._open.pop(group_id, None)
            if current is not None:
                self._emit(group, current, now, out, "interrupted")
            trigger, started = cause if cause is not None else (Trigger(OTHER), now)
            self._open[group_id] = _Open(trigger, started, epoch, self._last.get(group_id, ()),
                                         triggers_after=extra,
                                         members_at_open=_members(group))
            self._epoch[group_id] = epoch
        elif cause is not None and group_id in self._open:
            self._open[group_id].triggers_after += 1 + extra
        for _, instance_id, new_id, old_id in saved:
            members = _members(group)
            out.append(GroupEvent(
                group_id, CONSUMER, SAVED, epoch,
                Trigger(STATIC_REJOIN, new_id, instance_id, None, old_id,
                        f"static member {instance_id} rejoined as {new_id} (was {old_id})"),
                now, now, members_before=members, members_after=members))
        changed = self._changed(group_id, group)
        self._follow_ownership(group_id, group, changed, now)
        self._follow_reconciliation(group_id, group, changed)
        current = self._open.get(group_id)
        if current is None:
            return
        if not group.members:
            del self._open[group_id]
            self._emit(group, current, now, out, "empty")
        elif group.assignment_epoch >= current.epoch \
                and not self._still_reconciling(group_id, group):
            del self._open[group_id]
            self._emit(group, current, now, out, "stable")

    @staticmethod
    def _settled(group, epoch: int) -> bool:
        """Every member has reconciled to an assignment of this epoch (or later)."""
        return group.assignment_epoch >= epoch and all(
            m.member_epoch == STATIC_LEAVE_EPOCH or m.reconciled_to(group.assignment_epoch)
            for m in group.members.values())

    def deleted(self, group_id: str, epoch: int, now: int, out: list) -> None:
        for table in (self._epoch, self._owners, self._released, self._open, self._seen,
                      self._unreconciled):
            table.pop(group_id, None)
        before = self._last.pop(group_id, ())
        out.append(GroupEvent(
            group_id, CONSUMER, DELETED, epoch, Trigger(GROUP_DELETED, detail="DeleteGroups"),
            now, now, members_before=before))

    def _changed(self, group_id: str, group) -> list[tuple]:
        """(member id, value last seen or None, value now or None) of every member that is
        not the value last seen (joined, changed, or gone); the group's members are seen."""
        seen = self._seen.setdefault(group_id, {})
        members = group.members
        get = seen.get
        changed = [(member_id, get(member_id), member) for member_id, member in members.items()
                   if get(member_id) is not member]
        joined = sum(1 for _, before, _ in changed if before is None)
        if len(members) - joined < len(seen):     # some left
            changed += [(member_id, before, None) for member_id, before in seen.items()
                        if member_id not in members]
        for member_id, _, member in changed:
            if member is None:
                del seen[member_id]
            else:
                seen[member_id] = member
        return changed

    def _follow_ownership(self, group_id: str, group, changed: list, now: int) -> None:
        """Only the changed members' partitions can have changed owner (a partition is never
        held by two members at once)."""
        if not changed:
            return
        owners = self._owners.setdefault(group_id, {})
        old, new = {}, {}
        for _, before, after in changed:
            if before is not None:
                old.update((key, owners.get(key)) for key in _held(before))
            if after is not None:
                new.update(_held(after))
        released = self._released.setdefault(group_id, {})
        current = self._open.get(group_id)
        names = None
        for key in old:
            if key not in new and owners.get(key) is not None:
                released[key] = (now, owners.pop(key))
        for key, who in new.items():
            was = owners.get(key)
            if was == who:
                continue
            since, before = released.pop(key, (None, was))
            if current is not None and before != who:
                if names is None:
                    names = {tid: name for name, (tid, _) in group.subscription_metadata.items()}
                topic_id, partition = key
                topic = names.get(topic_id, topic_id.hex() if isinstance(topic_id, bytes)
                                  else str(topic_id))
                current.moves[key] = Moved(topic, partition, before, who,
                                           None if since is None else now - since)
            owners[key] = who

    def _follow_reconciliation(self, group_id: str, group, changed: list) -> None:
        """Keep the members not reconciled to the assignment epoch up to date through the
        changed ones; a new assignment epoch is looked at afresh when asked."""
        known = self._unreconciled.get(group_id)
        if known is None:
            return
        epoch, waiting = known
        if epoch != group.assignment_epoch:
            del self._unreconciled[group_id]
            return
        for member_id, _, member in changed:
            if member is None or _reconciled(member, epoch):
                waiting.discard(member_id)
            else:
                waiting.add(member_id)

    def _still_reconciling(self, group_id: str, group) -> bool:
        """Whether some member has not reconciled to the group's assignment epoch: looked at
        member by member once per assignment epoch, then through the members that change."""
        known = self._unreconciled.get(group_id)
        if known is None:
            epoch = group.assignment_epoch
            known = self._unreconciled[group_id] = (epoch, {
                m.member_id for m in group.members.values() if not _reconciled(m, epoch)})
        return bool(known[1])

    def _emit(self, group, current: _Open, now: int, out: list, outcome: str) -> None:
        # an epoch cut short by the next one had the members it began with
        after = current.members_at_open if outcome == "interrupted" else _members(group)
        out.append(GroupEvent(
            group.group_id, CONSUMER, GENERATION, current.epoch, current.trigger, now,
            current.started_ms, outcome=outcome, members_before=current.members_before,
            members_after=after,
            moved=tuple(sorted(current.moves.values(), key=lambda m: (m.topic, m.partition))),
            triggers_after=current.triggers_after))
        self._last[group.group_id] = after
