"""The classic protocol's flight recorder: the coordinator calls it at the few points where a
rebalance begins, forms a generation, becomes Stable, or is avoided; it appends GroupEvents to
the operation's Result. Pure (no I/O, no clock), and never on the heartbeat path.

A rebalance is "open" from prepare_rebalance until its generation is Stable (or Empty, or the
sync phase is cut short by another rebalance): one event per generation.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from roster.observability.events import (
    CLASSIC,
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
from roster.protocol.consumer_protocol import ConsumerProtocolError, decode_assignment


@dataclass(slots=True)
class _Open:
    trigger: Trigger
    started_ms: int
    members_before: tuple
    generation: int | None = None     # set once the join phase formed it
    joined_ms: int | None = None
    formed_with: tuple = ()        # the members the generation was formed with
    triggers_after: int = 0
    extra: dict = field(default_factory=dict)


def _members(group) -> tuple:
    return tuple(sorted((m.member_id, m.group_instance_id) for m in group.members.values()))


def _ownership(group) -> dict | None:
    """(topic, partition) -> the instance id or member id its assignment names, for the embedded
    consumer protocol; None when an assignment cannot be read."""
    owners = {}
    try:
        for member in group.members.values():
            who = member.group_instance_id or member.member_id
            for topic, partitions in decode_assignment(member.assignment).partitions:
                for p in partitions:
                    owners[(topic, p)] = who
    except ConsumerProtocolError:
        return None
    return owners


class ClassicRecorder:
    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self._last: dict[str, tuple] = {}   # members of each group's last recorded generation
        self._owners: dict[str, dict] = {}  # (topic, partition) -> instance id or member id

    def loaded(self, group) -> None:
        """A group replayed from `__consumer_offsets` after a restart: its last generation's
        members and partition owners are what the next generation is compared with (without
        this, the first event after a restart would report every partition as moved)."""
        self._last[group.group_id] = _members(group)
        if group.protocol_type == "consumer":
            owners = _ownership(group)
            if owners:
                self._owners[group.group_id] = owners

    def rebalance_started(self, group, trigger: Trigger | None, reason: str, now: int,
                          result) -> None:
        current = self._open.get(group.group_id)
        if current is not None and current.generation is not None:
            # the sync phase of a formed generation was cut short
            self._emit(group, current, now, result, "interrupted", sync_done=False)
            current = None
        if current is not None:
            current.triggers_after += 1
            return
        trigger = trigger or Trigger(OTHER, detail=reason)
        if not trigger.detail:
            trigger = Trigger(trigger.kind, trigger.member_id, trigger.instance_id,
                              trigger.client_reason, trigger.fenced_id, reason)
        before = self._last.get(group.group_id)
        if before is None:   # not seen since this broker started: an Empty group had nobody
            before = () if group.state.value == "Empty" else _members(group)
        self._open[group.group_id] = _Open(trigger, now, before)

    def also(self, group) -> None:
        """Another cause arrived while the group was already rebalancing."""
        current = self._open.get(group.group_id)
        if current is not None and current.generation is None:
            current.triggers_after += 1

    def generation_formed(self, group, now: int, result) -> None:
        current = self._open.get(group.group_id)
        if current is None:   # e.g. a group loaded mid-rebalance
            current = self._open[group.group_id] = _Open(Trigger(OTHER), now,
                                                         self._last.get(group.group_id, ()))
        current.generation = group.generation
        current.joined_ms = now
        current.formed_with = _members(group)
        if not group.members:
            self._emit(group, current, now, result, "empty", sync_done=True)

    def generation_stable(self, group, now: int, result) -> None:
        current = self._open.get(group.group_id)
        if current is not None and current.generation == group.generation:
            moved = self._moves(group, current.started_ms, now)
            self._emit(group, current, now, result, "stable", sync_done=True, moved=moved)

    def saved(self, group, instance_id: str | None, new_id: str, old_id: str,
              client_reason: str | None, now: int, result) -> None:
        """A static member came back within its session: same generation, no rebalance."""
        members = _members(group)
        result.events.append(GroupEvent(
            group.group_id, CLASSIC, SAVED, group.generation,
            Trigger(STATIC_REJOIN, new_id, instance_id, client_reason, old_id,
                    f"static member {instance_id} rejoined as {new_id} (was {old_id})"),
            now, now, members_before=members, members_after=members))
        if group.group_id in self._last:
            self._last[group.group_id] = members

    def deleted(self, group_id: str, generation: int, now: int, result) -> None:
        self._open.pop(group_id, None)
        self._owners.pop(group_id, None)
        before = self._last.pop(group_id, ())
        result.events.append(GroupEvent(
            group_id, CLASSIC, DELETED, generation, Trigger(GROUP_DELETED, detail="DeleteGroups"),
            now, now, members_before=before))

    def _moves(self, group, started_ms: int, now: int) -> tuple:
        """For the embedded consumer protocol (protocol type "consumer"): the partitions whose
        owner changed between the last Stable generation and this one. A moved partition had
        no owner at most from the rebalance's start (when an eager member revokes everything)
        until this generation's assignment was handed out."""
        if group.protocol_type != "consumer":
            return ()
        owners = _ownership(group)
        if owners is None:
            return ()
        before = self._owners.get(group.group_id, {})
        self._owners[group.group_id] = owners
        moved = [Moved(t, p, before.get((t, p)), who,
                       now - started_ms if (t, p) in before else None)
                 for (t, p), who in owners.items() if before.get((t, p)) != who]
        moved += [Moved(t, p, who, None, None) for (t, p), who in before.items()
                  if (t, p) not in owners]
        return tuple(sorted(moved, key=lambda m: (m.topic, m.partition)))

    def _emit(self, group, current: _Open, now: int, result, outcome: str,
              sync_done: bool, moved: tuple = ()) -> None:
        del self._open[group.group_id]
        after = current.formed_with if outcome == "interrupted" else _members(group)
        joined = current.joined_ms if current.joined_ms is not None else now
        result.events.append(GroupEvent(
            group.group_id, CLASSIC, GENERATION, current.generation or group.generation,
            current.trigger, now, current.started_ms,
            join_ms=joined - current.started_ms,
            sync_ms=(now - joined) if sync_done else None,
            outcome=outcome, members_before=current.members_before, members_after=after,
            moved=moved, triggers_after=current.triggers_after, extra=current.extra))
        self._last[group.group_id] = after
