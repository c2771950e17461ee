"""What the pure core tells the flight recorder: plain facts about one operation, in the order
it decided them, each carrying the state it speaks of as values (the group goes on changing
after the fact is noted). The core appends them to Result.facts; the edge (broker/groups/runtime.py)
hands them to the FlightRecorder (observability/flight_recorder.py), which turns them into
GroupEvents. So the core never calls the recorder, and an operation whose result is refused or
never applied tells the recorder nothing.

Pure: no I/O, no clock. Snapshots are taken only where a generation begins, forms or becomes
Stable, or a member is saved: never on the heartbeat path.
"""
from __future__ import annotations


from roster.coordinator.triggers import Trigger
from roster.frozen import frozen


def classic_members(group) -> tuple:
    """A classic group's members as the recorder compares them: sorted (member id, instance id)."""
    return tuple(sorted((m.member_id, m.group_instance_id) for m in group.members.values()))


# -- the classic protocol ----------------------------------------------------------------------

@frozen
class RebalanceStarted:
    group_id: str
    generation: int
    was_empty: bool           # the group was Empty when the rebalance began
    members: tuple            # classic_members() then
    trigger: Trigger | None
    reason: str
    now: int

    @classmethod
    def of(cls, group, trigger: Trigger | None, reason: str, now: int) -> RebalanceStarted:
        return cls(group.group_id, group.generation, group.state.value == "Empty",
                   classic_members(group), trigger, reason, now)


@frozen
class AlsoRebalancing:
    """Another cause arrived while the group was already rebalancing."""

    group_id: str


@frozen
class GenerationFormed:
    group_id: str
    generation: int
    members: tuple
    now: int

    @classmethod
    def of(cls, group, now: int) -> GenerationFormed:
        return cls(group.group_id, group.generation, classic_members(group), now)


@frozen
class GenerationStable:
    group_id: str
    generation: int
    members: tuple
    # for the embedded consumer protocol (protocol type "consumer"): (instance id or member id,
    # assignment bytes) of every member; None for any other protocol type
    assignments: tuple | None
    now: int

    @classmethod
    def of(cls, group, now: int) -> GenerationStable:
        assignments = None
        if group.protocol_type == "consumer":
            assignments = tuple((m.group_instance_id or m.member_id, m.assignment)
                                for m in group.members.values())
        return cls(group.group_id, group.generation, classic_members(group), assignments, now)


@frozen
class StaticMemberSaved:
    """A static member came back within its session: same generation, no rebalance."""

    group_id: str
    generation: int
    members: tuple
    instance_id: str | None
    new_id: str
    old_id: str
    client_reason: str | None
    now: int


# -- the consumer protocol (KIP-848) -----------------------------------------------------------

@frozen
class EpochCause:
    """Why the group epoch is about to be bumped (the first cause of an operation wins)."""

    group_id: str
    trigger: Trigger
    now: int


@frozen
class ConsumerSaved:
    group_id: str
    instance_id: str
    new_id: str
    old_id: str


@frozen
class OperationUndone:
    """The operation failed and was undone: nothing it named happened."""


@frozen
class ConsumerView:
    """What the recorder reads of a consumer group after an operation that wrote records. The
    members are immutable values: a shallow copy of the dict keeps them as they were."""

    group_id: str
    group_epoch: int
    assignment_epoch: int
    members: dict
    subscription_metadata: dict


@frozen
class ConsumerObserved:
    group_id: str
    group: ConsumerView | None   # None: the group is gone
    now: int

    @classmethod
    def of(cls, group_id: str, group, now: int) -> ConsumerObserved:
        view = None if group is None else ConsumerView(
            group.group_id, group.group_epoch, group.assignment_epoch, dict(group.members),
            group.subscription_metadata)
        return cls(group_id, view, now)


# -- both ----------------------------------------------------------------------------------------

@frozen
class GroupDeleted:
    protocol: str             # the name of the group type that deleted it
    group_id: str
    generation: int           # the generation (classic) or group epoch (consumer) it had
    now: int
