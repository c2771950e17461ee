"""Kafka's "range" assignor (eager).

Topic by topic, the partitions are cut into contiguous ranges, one per member subscribed to the
topic, in member order (static members by group.instance.id first, see ordering.py). When the
count does not divide evenly the first members get one partition more, as in Kafka: 2 members
and a 3-partition topic give [0, 1] and [2]. Every topic starts again with the first member, so
with many topics the first members carry the remainders of all of them; balance is per topic.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from .api import Assignment, MemberSubscription
from .ordering import ordered_members, subscribers_by_topic


class RangeAssignor:
    name = "range"
    rebalance_protocol = "eager"

    def assign(self, partitions_per_topic: Mapping[str, int],
               members: Sequence[MemberSubscription]) -> Assignment:
        ordered = ordered_members(members)
        assignment: Assignment = {m.member_id: [] for m in ordered}
        for topic, subscribers in subscribers_by_topic(ordered, partitions_per_topic).items():
            share, extra = divmod(partitions_per_topic[topic], len(subscribers))
            start = 0
            for index, member_id in enumerate(subscribers):
                length = share + (1 if index < extra else 0)
                assignment[member_id].extend((topic, p) for p in range(start, start + length))
                start += length
        # Topics were visited in sorted order and ranges ascend, so each list is already sorted.
        return assignment
