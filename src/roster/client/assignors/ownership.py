"""Who currently owns which partition, as far as the sticky assignors may trust it (KIP-792).

Each member reports the partitions it owns together with the generation in which it owned them.
A member that missed a rebalance reports an older generation, and its claims may be out of date:
the group may already have given those partitions to someone else. So:

- only claims made in the highest generation present are current; two members claiming one
  partition in that generation means the previous assignment was broken, and building on it
  would hand the partition to two consumers, so it is refused (AssignmentError);
- an older-generation ("stale") claim counts only for a partition nobody claims in the highest
  generation, and when several stale claims compete the newest generation wins; two members
  tied in the same older generation cancel out (neither is more credible);
- a claim counts only while the partition still exists and the claimant is still subscribed to
  its topic: a member that unsubscribed releases those partitions.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from .api import AssignmentError, MemberSubscription, TopicPartition
from .ordering import existing_topics


def resolve_owners(partitions_per_topic: Mapping[str, int],
                   members: Sequence[MemberSubscription]) -> dict[TopicPartition, str]:
    """partition -> member id of its trusted current owner (see the module docstring)."""
    if not members:
        return {}
    newest = max(m.generation for m in members)
    current = _claims_in_generation(newest, members)
    stale = _newest_stale_claims(newest, members, current)
    topics_of = {m.member_id: frozenset(existing_topics(m, partitions_per_topic))
                 for m in members}
    owners = {}
    for claims in (current, stale):
        for (topic, partition), owner in claims.items():
            if topic in topics_of[owner] and 0 <= partition < partitions_per_topic[topic]:
                owners[(topic, partition)] = owner
    return owners


def _claims_in_generation(generation: int, members: Sequence[MemberSubscription]
                          ) -> dict[TopicPartition, str]:
    """Every claim made in `generation`, valid or not (an unsubscribed topic's partitions still
    show that the claimant, not some older member, held them last)."""
    claims: dict[TopicPartition, str] = {}
    for member in members:
        if member.generation != generation:
            continue
        for tp in member.owned_partitions:
            other = claims.setdefault(tp, member.member_id)
            if other != member.member_id:
                first, second = sorted((other, member.member_id))
                raise AssignmentError(
                    f"partition {tp[0]}-{tp[1]} is claimed by both {first!r} and {second!r} "
                    f"in generation {generation}")
    return claims


def _newest_stale_claims(newest: int, members: Sequence[MemberSubscription],
                         current: Mapping[TopicPartition, str]) -> dict[TopicPartition, str]:
    """For partitions nobody claims in the newest generation: the member with the newest older
    claim, unless two members tie for it."""
    best: dict[TopicPartition, tuple[int, str | None]] = {}
    for member in members:
        if member.generation >= newest:
            continue
        for tp in member.owned_partitions:
            if tp in current:
                continue
            held = best.get(tp)
            if held is None or member.generation > held[0]:
                best[tp] = (member.generation, member.member_id)
            elif member.generation == held[0] and held[1] != member.member_id:
                best[tp] = (member.generation, None)
    return {tp: owner for tp, (_, owner) in best.items() if owner is not None}
