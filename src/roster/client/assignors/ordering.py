"""The member order every built-in assignor uses, and the checks on its input.

Static members come first, sorted by group.instance.id, then dynamic members by member id
(KIP-345). A static member gets a new member id whenever it restarts, but keeps its instance id,
so ordering by instance id first lets the order-based assignors (range, roundrobin) give it the
same partitions after a restart. Sorting also makes every assignor independent of the order in
which the JoinGroup answer happened to list the members.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from .api import AssignmentError, MemberSubscription


def member_sort_key(member: MemberSubscription) -> tuple[int, str, str]:
    if member.group_instance_id is not None:
        return (0, member.group_instance_id, member.member_id)
    return (1, "", member.member_id)


def ordered_members(members: Sequence[MemberSubscription]) -> list[MemberSubscription]:
    """The members in assignor order; a member id listed twice is refused (the result is keyed
    by member id, so the two entries could not both get an assignment)."""
    ordered = sorted(members, key=member_sort_key)
    seen: set[str] = set()
    for member in ordered:
        if member.member_id in seen:
            raise AssignmentError(f"member id {member.member_id!r} appears more than once")
        seen.add(member.member_id)
    return ordered


def existing_topics(member: MemberSubscription,
                    partitions_per_topic: Mapping[str, int]) -> tuple[str, ...]:
    """The member's subscribed topics that exist (have metadata), sorted, without repeats. A
    subscription may name a topic that is not created yet; it simply has nothing to assign."""
    return tuple(sorted({t for t in member.topics if partitions_per_topic.get(t, 0) > 0}))


def subscribers_by_topic(members: Sequence[MemberSubscription],
                         partitions_per_topic: Mapping[str, int]) -> dict[str, list[str]]:
    """topic -> member ids subscribed to it, in member order, for topics with partitions; keys
    sorted by topic. `members` must already be in assignor order."""
    subscribers: dict[str, list[str]] = {}
    for member in members:
        for topic in existing_topics(member, partitions_per_topic):
            subscribers.setdefault(topic, []).append(member.member_id)
    return {topic: subscribers[topic] for topic in sorted(subscribers)}
