"""The share group protocol's (KIP-932) flight recorder. A generation here is a group epoch, as
in the consumer protocol: the coordinator notes the cause just before it bumps the epoch
(ShareEpochCause) and, after every operation that wrote records, what the group looks like then
(ShareObserved).

A share group has no revocation: a member takes its new partitions, and drops the ones it no
longer has, on its next heartbeat. The recorder follows who holds each partition (several
members when they outnumber the partitions), and writes one event per epoch once every member
is at it ("stable"), when the group empties ("empty"), or when the next epoch begins first
("interrupted"), naming every partition whose holders changed. Pure.
"""
from __future__ import annotations

from dataclasses import dataclass

from roster.coordinator import facts as shared
from roster.coordinator.share import facts as f
from roster.observability.events import (
    DELETED,
    GENERATION,
    GROUP_DELETED,
    OTHER,
    GroupEvent,
    Moved,
    Trigger,
)


@dataclass(slots=True)
class _Open:
    trigger: Trigger
    started_ms: int
    epoch: int
    members_before: tuple
    members_at_open: tuple
    holders_before: dict
    triggers_after: int = 0


def _members(view: f.ShareView) -> tuple:
    return tuple((member_id, None) for member_id, _, _ in view.members)


def _holders(view: f.ShareView) -> dict:
    """(topic, partition) -> the names of the members holding it."""
    out: dict = {}
    for member_id, _, held in view.members:
        for key in held:
            out.setdefault(key, set()).add(member_id)
    return {key: frozenset(names) for key, names in out.items()}


def _names(holders) -> str | None:
    return ",".join(sorted(holders)) if holders else None


def _settled(view: f.ShareView, epoch: int) -> bool:
    return view.assignment_epoch >= epoch and all(e >= epoch for _, e, _ in view.members)


class ShareRecorder:
    name = "share"      # the GroupType it records (and its events' protocol)
    facts = (f.ShareEpochCause, f.ShareObserved, shared.GroupDeleted)

    def __init__(self) -> None:
        self._cause: dict[str, tuple[Trigger, int]] = {}
        self._extra: dict[str, int] = {}
        self._epoch: dict[str, int] = {}
        self._holders: dict[str, dict] = {}
        self._open: dict[str, _Open] = {}
        self._last: dict[str, tuple] = {}       # the members of the last epoch's event

    def take(self, fact, out: list) -> None:
        match fact:
            case f.ShareEpochCause():
                if fact.group_id in self._cause:
                    self._extra[fact.group_id] = self._extra.get(fact.group_id, 0) + 1
                else:
                    self._cause[fact.group_id] = (fact.trigger, fact.now)
            case f.ShareObserved():
                self.observe(fact.group_id, fact.group, fact.now, out)
            case shared.GroupDeleted():
                self.deleted(fact.group_id, fact.generation, fact.now, out)

    def loaded(self, view: f.ShareView, now: int) -> None:
        """A group replayed after a restart (ShareCoordinator.group gives its view): its
        epoch, members and holders are where the next epoch starts from."""
        gid = view.group_id
        self._epoch[gid] = view.group_epoch
        self._holders[gid] = _holders(view)
        self._last[gid] = members = _members(view)
        if view.members and not _settled(view, view.group_epoch):
            self._open[gid] = _Open(Trigger(OTHER, detail="under way when the broker restarted"),
                                    now, view.group_epoch, members, members, self._holders[gid])

    def observe(self, group_id: str, view: f.ShareView | None, now: int, out: list) -> None:
        cause = self._cause.pop(group_id, None)
        extra = self._extra.pop(group_id, 0)
        if view is None:
            return
        epoch = view.group_epoch
        last = self._epoch.get(group_id)
        if last is None:      # a group created now, or one older than this recorder
            last = 0 if cause is not None else epoch
            self._holders[group_id], self._last[group_id] = {}, ()
        if epoch != last:
            current = self._open.pop(group_id, None)
            if current is not None:
                self._emit(group_id, current, now, out, "interrupted")
            trigger, started = cause if cause is not None else (Trigger(OTHER), now)
            self._open[group_id] = _Open(trigger, started, epoch, self._last.get(group_id, ()),
                                         _members(view), self._holders.get(group_id, {}),
                                         triggers_after=extra)
            self._epoch[group_id] = epoch
        elif cause is not None and group_id in self._open:
            self._open[group_id].triggers_after += 1 + extra
        self._holders[group_id] = _holders(view)
        current = self._open.get(group_id)
        if current is None:
            return
        if not view.members:
            del self._open[group_id]
            self._emit(group_id, current, now, out, "empty", ())
        elif _settled(view, current.epoch):
            del self._open[group_id]
            self._emit(group_id, current, now, out, "stable", _members(view))

    def deleted(self, group_id: str, epoch: int, now: int, out: list) -> None:
        for table in (self._epoch, self._holders, self._open, self._cause, self._extra):
            table.pop(group_id, None)
        before = self._last.pop(group_id, ())
        out.append(GroupEvent(group_id, self.name, DELETED, epoch,
                              Trigger(GROUP_DELETED, detail="DeleteGroups"), now, now,
                              members_before=before))

    def _emit(self, group_id: str, current: _Open, now: int, out: list, outcome: str,
              after: tuple | None = None) -> None:
        # an epoch cut short by the next one had the members it began with
        after = current.members_at_open if after is None else after
        before, held = current.holders_before, self._holders.get(group_id, {})
        moved = tuple(Moved(topic, p, _names(before.get((topic, p))),
                            _names(held.get((topic, p))))
                      for topic, p in sorted({*before, *held})
                      if before.get((topic, p)) != held.get((topic, p)))
        out.append(GroupEvent(
            group_id, self.name, GENERATION, current.epoch, current.trigger, now,
            current.started_ms, outcome=outcome, members_before=current.members_before,
            members_after=after, moved=moved, triggers_after=current.triggers_after))
        self._last[group_id] = after
