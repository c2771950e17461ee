"""The classic protocol's flight recorder: it reads the facts the coordinator noted at the few
points where a rebalance begins, forms a generation, becomes Stable, or is avoided (facts.py),
and turns them into GroupEvents. Pure (no I/O, no clock), and never on the heartbeat path.

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
from roster.coordinator.facts import (
    AlsoRebalancing,
    GenerationFormed,
    GenerationStable,
    GroupDeleted,
    RebalanceStarted,
    StaticMemberSaved,
    classic_members,
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


def _ownership(assignments: tuple) -> dict | None:
    """(topic, partition) -> the instance id or member id its assignment names, for the embedded
    consumer protocol; None when an assignment cannot be read."""
    owners = {}
    try:
        for who, assignment in assignments:
            for topic, partitions in decode_assignment(assignment).partitions:
                for p in partitions:
                    owners[(topic, p)] = who
    except ConsumerProtocolError:
        return None
    return owners


class ClassicRecorder:
    name = "classic"    # the GroupType it records
    facts = (RebalanceStarted, AlsoRebalancing, GenerationFormed, GenerationStable,
             StaticMemberSaved, GroupDeleted)

    def take(self, fact, out: list) -> None:
        """One fact of a classic group (flight_recorder.py hands it over)."""
        match fact:
            case RebalanceStarted():
                self.rebalance_started(fact, out)
            case AlsoRebalancing():
                self.also(fact)
            case GenerationFormed():
                self.generation_formed(fact, out)
            case GenerationStable():
                self.generation_stable(fact, out)
            case StaticMemberSaved():
                self.saved(fact, out)
            case GroupDeleted():
                self.deleted(fact, out)

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self._last: dict[str, tuple] = {}   # members of each group's last recorded generation
        self._owners: dict[str, dict] = {}  # (topic, partition) -> instance id or member id

    def loaded(self, group, now: int = 0) -> None:
        """A group replayed from `__consumer_offsets` after a restart: its last generation's
        members and partition owners are what the next generation is compared with (without
        this, the first event after a restart would report every partition as moved)."""
        self._last[group.group_id] = classic_members(group)
        if group.protocol_type == "consumer":
            owners = _ownership(tuple((m.group_instance_id or m.member_id, m.assignment)
                                      for m in group.members.values()))
            if owners:
                self._owners[group.group_id] = owners

    def rebalance_started(self, fact: RebalanceStarted, out: list) -> None:
        group_id = fact.group_id
        current = self._open.get(group_id)
        if current is not None and current.generation is not None:
            # the sync phase of a formed generation was cut short
            self._emit(group_id, fact.generation, current, fact.now, out, "interrupted",
                       sync_done=False, after=current.formed_with)
            current = None
        if current is not None:
            current.triggers_after += 1
            return
        trigger = fact.trigger or Trigger(OTHER, detail=fact.reason)
        if not trigger.detail:
            trigger = Trigger(trigger.kind, trigger.member_id, trigger.instance_id,
                              trigger.client_reason, trigger.fenced_id, fact.reason)
        before = self._last.get(group_id)
        if before is None:   # not seen since this broker started: an Empty group had nobody
            before = () if fact.was_empty else fact.members
        self._open[group_id] = _Open(trigger, fact.now, before)

    def also(self, fact: AlsoRebalancing) -> None:
        current = self._open.get(fact.group_id)
        if current is not None and current.generation is None:
            current.triggers_after += 1

    def generation_formed(self, fact: GenerationFormed, out: list) -> None:
        group_id = fact.group_id
        current = self._open.get(group_id)
        if current is None:   # e.g. a group loaded mid-rebalance
            current = self._open[group_id] = _Open(Trigger(OTHER), fact.now,
                                                   self._last.get(group_id, ()))
        current.generation = fact.generation
        current.joined_ms = fact.now
        current.formed_with = fact.members
        if not fact.members:
            self._emit(group_id, fact.generation, current, fact.now, out, "empty",
                       sync_done=True, after=fact.members)

    def generation_stable(self, fact: GenerationStable, out: list) -> None:
        current = self._open.get(fact.group_id)
        if current is not None and current.generation == fact.generation:
            moved = self._moves(fact, current.started_ms)
            self._emit(fact.group_id, fact.generation, current, fact.now, out, "stable",
                       sync_done=True, after=fact.members, moved=moved)

    def saved(self, fact: StaticMemberSaved, out: list) -> None:
        """A static member came back within its session: same generation, no rebalance."""
        members, now = fact.members, fact.now
        out.append(GroupEvent(
            fact.group_id, CLASSIC, SAVED, fact.generation,
            Trigger(STATIC_REJOIN, fact.new_id, fact.instance_id, fact.client_reason,
                    fact.old_id,
                    f"static member {fact.instance_id} rejoined as {fact.new_id} "
                    f"(was {fact.old_id})"),
            now, now, members_before=members, members_after=members))
        if fact.group_id in self._last:
            self._last[fact.group_id] = members

    def deleted(self, fact: GroupDeleted, out: list) -> None:
        group_id, now = fact.group_id, fact.now
        self._open.pop(group_id, None)
        self._owners.pop(group_id, None)
        before = self._last.pop(group_id, ())
        out.append(GroupEvent(
            group_id, CLASSIC, DELETED, fact.generation,
            Trigger(GROUP_DELETED, detail="DeleteGroups"), now, now, members_before=before))

    def _moves(self, fact: GenerationStable, started_ms: int) -> tuple:
        """For the embedded consumer protocol (protocol type "consumer"): the partitions whose
        owner changed between the last Stable generation and this one. A moved partition had
        no owner at most from the rebalance's start (when an eager member revokes everything)
        until this generation's assignment was handed out."""
        if fact.assignments is None:
            return ()
        owners = _ownership(fact.assignments)
        if owners is None:
            return ()
        now = fact.now
        before = self._owners.get(fact.group_id, {})
        self._owners[fact.group_id] = owners
        moved = [Moved(t, p, before.get((t, p)), who,
                       now - started_ms if (t, p) in before else None)
                 for (t, p), who in owners.items() if before.get((t, p)) != who]
        moved += [Moved(t, p, who, None, None) for (t, p), who in before.items()
                  if (t, p) not in owners]
        return tuple(sorted(moved, key=lambda m: (m.topic, m.partition)))

    def _emit(self, group_id: str, generation: int, current: _Open, now: int, out: list,
              outcome: str, sync_done: bool, after: tuple, moved: tuple = ()) -> None:
        del self._open[group_id]
        joined = current.joined_ms if current.joined_ms is not None else now
        out.append(GroupEvent(
            group_id, CLASSIC, GENERATION, current.generation or generation,
            current.trigger, now, current.started_ms,
            join_ms=joined - current.started_ms,
            sync_ms=(now - joined) if sync_done else None,
            outcome=outcome, members_before=current.members_before, members_after=after,
            moved=moved, triggers_after=current.triggers_after, extra=current.extra))
        self._last[group_id] = after
