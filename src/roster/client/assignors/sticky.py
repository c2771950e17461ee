"""Kafka's "sticky" assignor (eager), and the sticky core the cooperative one shares.

The assignment is balanced first (identical subscriptions: counts differ by at most one;
otherwise as even as the subscriptions allow) and sticky second: as many partitions as possible
stay with their current owner. Current ownership is the members' ownedPartitions as filtered by
ownership.py (KIP-792 generations; overlapping claims are refused); placement.py does the rest.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from .api import Assignment, MemberSubscription, TopicPartition
from .ordering import existing_topics, ordered_members
from .ownership import resolve_owners
from .placement import Placement

from roster.frozen import frozen


@frozen
class StickyPlan:
    assignment: Assignment               # member id -> sorted partitions
    owners: dict[TopicPartition, str]    # the trusted current owners it was built from

    def transfers(self) -> dict[TopicPartition, tuple[str, str]]:
        """Partitions that change hands: partition -> (current owner, new holder)."""
        return {tp: (self.owners[tp], member)
                for member, partitions in self.assignment.items()
                for tp in partitions if self.owners.get(tp, member) != member}


def plan_sticky(partitions_per_topic: Mapping[str, int],
                members: Sequence[MemberSubscription]) -> StickyPlan:
    ordered = ordered_members(members)
    owners = resolve_owners(partitions_per_topic, ordered)
    if not ordered:
        return StickyPlan({}, owners)
    placement = Placement([m.member_id for m in ordered],
                          {m.member_id: existing_topics(m, partitions_per_topic) for m in ordered},
                          owners)
    placement.fill(partitions_per_topic)
    placement.balance()
    return StickyPlan(placement.assignment(), owners)


class StickyAssignor:
    name = "sticky"
    rebalance_protocol = "eager"

    def assign(self, partitions_per_topic: Mapping[str, int],
               members: Sequence[MemberSubscription]) -> Assignment:
        return plan_sticky(partitions_per_topic, members).assignment
