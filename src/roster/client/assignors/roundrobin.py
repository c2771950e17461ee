"""Kafka's "roundrobin" assignor (eager).

All partitions of all subscribed topics, sorted by (topic, partition), are dealt one at a time
to the members in member order (static members by group.instance.id first), wrapping around.
A member not subscribed to a partition's topic is skipped for that partition, and the deal goes
on from the member after the one that took it, which keeps homogeneous groups within one
partition of each other.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from .api import Assignment, MemberSubscription
from .ordering import existing_topics, ordered_members, subscribers_by_topic


class RoundRobinAssignor:
    name = "roundrobin"
    rebalance_protocol = "eager"

    def assign(self, partitions_per_topic: Mapping[str, int],
               members: Sequence[MemberSubscription]) -> Assignment:
        ordered = ordered_members(members)
        assignment: Assignment = {m.member_id: [] for m in ordered}
        topics_of = [frozenset(existing_topics(m, partitions_per_topic)) for m in ordered]
        next_seat = 0  # the member the deal resumes from
        for topic in subscribers_by_topic(ordered, partitions_per_topic):
            for partition in range(partitions_per_topic[topic]):
                # The topic has at least one subscriber, so this finds a seat within one lap.
                while topic not in topics_of[next_seat]:
                    next_seat = (next_seat + 1) % len(ordered)
                assignment[ordered[next_seat].member_id].append((topic, partition))
                next_seat = (next_seat + 1) % len(ordered)
        return assignment
