"""What the streams coordinator tells the flight recorder (observability/streams_recorder.py):
plain facts about one operation, in the order it decided them, as coordinator/facts.py defines
them for the other types. The streams type's own, so that the recorder of each type reads only
the fact classes its type notes (flight_recorder.py routes a fact by its class); a deletion is
the shared facts.GroupDeleted, naming the type.

Pure values: the members a StreamsView carries are immutable (model.StreamsMember), so copying
the dict keeps them as they were; it is taken once per operation that wrote records, never on a
heartbeat that changed nothing.
"""
from __future__ import annotations


from roster.coordinator.triggers import Trigger
from roster.frozen import frozen


@frozen
class StreamsEpochCause:
    """Why the group epoch is about to be bumped (the first cause of an operation wins)."""

    group_id: str
    trigger: Trigger
    now: int


@frozen
class StreamsSaved:
    """A static member that left with epoch -2 came back within its session under a new member
    id: it took its tasks and epoch back, no new group epoch."""

    group_id: str
    instance_id: str
    new_id: str
    old_id: str


@frozen
class StreamsAway:
    """A static member left with epoch -2: it stays in the group, holding its tasks, until it
    comes back or its session ends."""

    group_id: str
    member_id: str
    instance_id: str
    now: int


@frozen
class StreamsView:
    """What the recorder reads of a streams group after an operation that wrote records."""

    group_id: str
    group_epoch: int
    assignment_epoch: int
    members: dict        # member id -> model.StreamsMember (immutable values)


@frozen
class StreamsObserved:
    group_id: str
    group: StreamsView | None    # None: the group is gone
    now: int

    @classmethod
    def of(cls, group_id: str, group, now: int) -> StreamsObserved:
        view = None if group is None else StreamsView(
            group.group_id, group.group_epoch, group.assignment_epoch, dict(group.members))
        return cls(group_id, view, now)
