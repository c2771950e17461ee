"""Kafka's "cooperative-sticky" assignor (KIP-429 incremental rebalancing).

Under the cooperative protocol members keep consuming their partitions during a rebalance, so a
partition must never be handed to a new member while its current owner may still hold it. The
sticky assignment is computed as usual, then every partition it moves away from its current
(trusted) owner is left out of this round altogether: the owner sees it missing from its
assignment, revokes it and rejoins, and in the next round the partition is unowned and goes to
its new member. Stickiness keeps that second round small.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from .api import Assignment, MemberSubscription
from .sticky import plan_sticky


class CooperativeStickyAssignor:
    name = "cooperative-sticky"
    rebalance_protocol = "cooperative"

    def assign(self, partitions_per_topic: Mapping[str, int],
               members: Sequence[MemberSubscription]) -> Assignment:
        plan = plan_sticky(partitions_per_topic, members)
        owners = plan.owners
        return {member: [tp for tp in partitions if owners.get(tp, member) == member]
                for member, partitions in plan.assignment.items()}
