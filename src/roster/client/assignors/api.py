"""What every partition assignor gets and returns. Assignors are pure functions of these.

The leader of a consumer group runs the assignor the group selected over the subscriptions of
all members (from the JoinGroup answer) and the partition counts of the subscribed topics.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

from roster.frozen import frozen

TopicPartition = tuple[str, int]
Assignment = dict[str, list[TopicPartition]]  # member id -> partitions, sorted
RebalanceProtocol = Literal["eager", "cooperative"]


@frozen
class MemberSubscription:
    member_id: str
    group_instance_id: str | None
    topics: tuple[str, ...]
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation: int = -1          # KIP-792: the generation in which owned_partitions were owned
    rack_id: str | None = None


class AssignmentError(ValueError):
    """The subscriptions cannot be assigned as given (e.g. two members claim one partition in
    the same generation): the leader must not hand out an assignment built on them."""


class Assignor(Protocol):
    name: str
    rebalance_protocol: RebalanceProtocol

    def assign(self, partitions_per_topic: Mapping[str, int],
               members: Sequence[MemberSubscription]) -> Assignment:
        """Every member id appears in the result (possibly with no partitions); each partition
        of a subscribed topic goes to at most one member subscribed to its topic."""


class UnknownAssignorError(LookupError):
    """No assignor of that name is known (the group selected a protocol this client lacks)."""
