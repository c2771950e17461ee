"""The streams group protocol's (KIP-1071) flight recorder. A generation here is a group epoch,
as in the consumer protocol (consumer_recorder.py): the coordinator notes the cause just before
it bumps the epoch (StreamsEpochCause) and, after every operation that wrote records, what the
group looks like then (StreamsObserved); a static member leaving with epoch -2 (StreamsAway) and
coming back in time (StreamsSaved) are events of their own, with no epoch.

What moves here is tasks, not partitions: (subtopology, partition) in three roles, active,
standby and warm-up. The recorder follows who holds each (assigned, or still to revoke), so an
epoch's event names every task whose holder changed, from whom to whom, and how long an active
task had nobody (revoked by one member, not yet given to the next). The event is written once
every member has reconciled to the epoch ("stable"), when the group empties ("empty"), or when
the next epoch begins first ("interrupted"). Pure; a heartbeat that changes nothing never
reaches it.

Members are immutable values, so what an operation changed is the members that are no longer
the objects last seen: holders are followed through those alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from roster.coordinator import facts as shared
from roster.coordinator.streams import facts as f
from roster.observability.events import (
    AWAY,
    DELETED,
    GENERATION,
    GROUP_DELETED,
    OTHER,
    SAVED,
    STATIC_LEAVE,
    STATIC_REJOIN,
    GroupEvent,
    Moved,
    Trigger,
)

STATIC_LEAVE_EPOCH = -2
ROLES = ("active", "standby", "warmup")


@dataclass(slots=True)
class _Open:
    trigger: Trigger
    started_ms: int
    epoch: int
    members_before: tuple
    members_at_open: tuple
    moves: dict = field(default_factory=dict)   # (role, subtopology, partition) -> Moved
    triggers_after: int = 0


def _members(group) -> tuple:
    return tuple(sorted((m.member_id, m.instance_id) for m in group.members.values()))


def _who(member) -> str:
    return member.instance_id or member.member_id


def _held(member):
    """The (role, subtopology, partition) keys of every task this member holds: assigned, or
    told to revoke and not yet done."""
    for role in ROLES:
        for sets in (member.assigned, member.pending_revocation):
            for subtopology, partitions in getattr(sets, role).items():
                for p in partitions:
                    yield role, subtopology, p


def _names(holders) -> str | None:
    return ",".join(sorted(holders)) if holders else None


def _reconciled(member, epoch: int) -> bool:
    return member.member_epoch == STATIC_LEAVE_EPOCH or member.reconciled_to(epoch)


class StreamsRecorder:
    name = "streams"    # the GroupType it records (and its events' protocol)
    facts = (f.StreamsEpochCause, f.StreamsSaved, f.StreamsAway, f.StreamsObserved,
             shared.GroupDeleted)

    def __init__(self) -> None:
        self._cause: dict[str, tuple[Trigger, int]] = {}
        self._extra_causes: dict[str, int] = {}
        self._epoch: dict[str, int] = {}
        self._holders: dict[str, dict] = {}      # key -> set of holder names
        self._seen: dict[str, dict] = {}         # member id -> the member value last seen
        self._released: dict[str, dict] = {}     # key -> (since ms, names of the last holders)
        self._open: dict[str, _Open] = {}
        self._last: dict[str, tuple] = {}        # the members of the last epoch's event
        self._pending: dict[str, list] = {}      # group id -> its saved/away, emitted with its
        #                                          next observation

    def take(self, fact, out: list) -> None:
        """One fact of a streams group (flight_recorder.py hands it over)."""
        match fact:
            case f.StreamsEpochCause():
                if fact.group_id in self._cause:
                    self._extra_causes[fact.group_id] = \
                        self._extra_causes.get(fact.group_id, 0) + 1
                else:
                    self._cause[fact.group_id] = (fact.trigger, fact.now)
            case f.StreamsSaved() | f.StreamsAway():
                self._pending.setdefault(fact.group_id, []).append(fact)
            case f.StreamsObserved():
                self.observe(fact.group_id, fact.group, fact.now, out)
            case shared.GroupDeleted():
                self.deleted(fact.group_id, fact.generation, fact.now, out)

    def loaded(self, group, now: int) -> None:
        """A group replayed from `__consumer_offsets` after a restart: its epoch, members and
        task holders are where the next epoch starts from. An epoch some member had not
        reconciled to when the broker stopped is followed from now on."""
        gid = group.group_id
        self._epoch[gid] = group.group_epoch
        self._seen[gid] = {}
        self._holders[gid] = {}
        self._follow(gid, group, self._changed(gid, group), now)
        self._last[gid] = members = _members(group)
        if group.members and not self._settled(group, group.group_epoch):
            self._open[gid] = _Open(Trigger(OTHER, detail="under way when the broker restarted"),
                                    now, group.group_epoch, members, members)

    def observe(self, group_id: str, group, now: int, out: list) -> None:
        """`group` is what the operation left (facts.StreamsView), None once it is gone."""
        cause = self._cause.pop(group_id, None)
        extra = self._extra_causes.pop(group_id, 0)
        pending = self._pending.pop(group_id, [])
        if group is None:
            return
        epoch = group.group_epoch
        last = self._epoch.get(group_id)
        if last is None:
            # first sight: a group created now (its first epoch is this operation's), or one
            # whose history before this recorder started is not ours to tell
            last = 0 if cause is not None else epoch
            self._seen[group_id], self._holders[group_id] = {}, {}
            self._last[group_id] = ()
        if epoch != last:
            current = self._open.pop(group_id, None)
            if current is not None:
                self._emit(group, current, now, out, "interrupted")
            trigger, started = cause if cause is not None else (Trigger(OTHER), now)
            self._open[group_id] = _Open(trigger, started, epoch, self._last.get(group_id, ()),
                                         _members(group), triggers_after=extra)
            self._epoch[group_id] = epoch
        elif cause is not None and group_id in self._open:
            self._open[group_id].triggers_after += 1 + extra
        members = _members(group)
        for fact in pending:
            if isinstance(fact, f.StreamsSaved):
                trigger = Trigger(STATIC_REJOIN, fact.new_id, fact.instance_id, None,
                                  fact.old_id, f"static member {fact.instance_id} rejoined as "
                                               f"{fact.new_id} (was {fact.old_id})")
                out.append(GroupEvent(group_id, self.name, SAVED, epoch, trigger, now, now,
                                      members_before=members, members_after=members))
            else:
                trigger = Trigger(STATIC_LEAVE, fact.member_id, fact.instance_id,
                                  detail=f"static member {fact.instance_id} left with epoch -2;"
                                         " its tasks wait for it")
                out.append(GroupEvent(group_id, self.name, AWAY, epoch, trigger, fact.now,
                                      fact.now, members_before=members, members_after=members))
        self._follow(group_id, group, self._changed(group_id, group), now)
        current = self._open.get(group_id)
        if current is None:
            return
        if not group.members:
            del self._open[group_id]
            self._emit(group, current, now, out, "empty")
        elif self._settled(group, current.epoch):
            del self._open[group_id]
            self._emit(group, current, now, out, "stable")

    @staticmethod
    def _settled(group, epoch: int) -> bool:
        """Every member has reconciled to an assignment of this epoch or later (a static
        member away with -2 counts: its tasks wait for it as they are)."""
        return group.assignment_epoch >= epoch and all(
            _reconciled(m, group.assignment_epoch) for m in group.members.values())

    def deleted(self, group_id: str, epoch: int, now: int, out: list) -> None:
        for table in (self._epoch, self._holders, self._released, self._open, self._seen):
            table.pop(group_id, None)
        before = self._last.pop(group_id, ())
        out.append(GroupEvent(group_id, self.name, DELETED, epoch,
                              Trigger(GROUP_DELETED, detail="DeleteGroups"), now, now,
                              members_before=before))

    def _changed(self, group_id: str, group) -> list[tuple]:
        """(value last seen or None, value now or None) of every member that is not the value
        last seen (joined, changed, or gone); the group's members are then seen."""
        seen = self._seen.setdefault(group_id, {})
        members = group.members
        changed = [(seen.get(mid), m) for mid, m in members.items() if seen.get(mid) is not m]
        changed += [(before, None) for mid, before in seen.items() if mid not in members]
        for before, after in changed:
            if after is None:
                del seen[before.member_id]
            else:
                seen[after.member_id] = after
        return changed

    def _follow(self, group_id: str, group, changed: list, now: int) -> None:
        """Only the changed members' tasks can have changed holder. Every holder that goes is
        taken off before any that comes is put on, so a static member replaced by its new
        member id within one operation (same name) moves nothing."""
        if not changed:
            return
        holders = self._holders.setdefault(group_id, {})
        before: dict = {}
        for old, new in changed:
            for member in (old, new):
                if member is not None:
                    for key in _held(member):
                        if key not in before:
                            before[key] = frozenset(holders.get(key, ()))
        for old, _ in changed:
            if old is not None:
                for key in _held(old):
                    holders[key].discard(_who(old))
        for _, new in changed:
            if new is not None:
                for key in _held(new):
                    holders.setdefault(key, set()).add(_who(new))
        released = self._released.setdefault(group_id, {})
        current = self._open.get(group_id)
        for key, was in before.items():
            now_held = frozenset(holders.get(key, ()))
            if now_held == was:
                continue
            if not now_held:
                holders.pop(key, None)
                released[key] = (now, _names(was))
            since, first = released.pop(key, (None, _names(was))) if now_held else (None, None)
            if current is None:
                continue
            role, subtopology, partition = key
            kept = current.moves.get(key)
            origin = kept.before if kept is not None else (first if now_held else _names(was))
            after = _names(now_held)
            if origin == after:
                current.moves.pop(key, None)      # back where it was
                continue
            unowned = None if since is None else now - since
            if kept is not None and kept.unowned_ms is not None:
                unowned = max(unowned or 0, kept.unowned_ms)
            current.moves[key] = Moved(subtopology, partition, origin, after, unowned, role)

    def _emit(self, group, current: _Open, now: int, out: list, outcome: str) -> None:
        # an epoch cut short by the next one had the members it began with
        after = current.members_at_open if outcome == "interrupted" else _members(group)
        moved = sorted(current.moves.values(),
                       key=lambda m: (ROLES.index(m.role), m.topic, m.partition))
        out.append(GroupEvent(
            group.group_id, self.name, GENERATION, current.epoch, current.trigger, now,
            current.started_ms, outcome=outcome, members_before=current.members_before,
            members_after=after, moved=tuple(moved), triggers_after=current.triggers_after))
        self._last[group.group_id] = after
