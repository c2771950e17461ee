"""The share group's target assignment, as Kafka 4.4.0's SimpleAssignor ("simple") computes
it: every subscribed partition goes to at least one member; balance first, stickiness second.

Read off its SimpleHomogeneousAssignmentBuilder (all members subscribe to the same topics):
- with P partitions and M members, each partition is shared by
  desired_sharing = ceil(M / P) members (1 while M <= P: a partition has one member; more
  members than partitions share partitions among them);
- member i (0-based) wants ceil(x * (i + 1)) - ceil(x * i) partitions, x = desired_sharing * P
  / M (so the counts differ by at most one and add up to desired_sharing * P);
- from the previous target: partitions of topics no longer subscribed are dropped, a member
  over its count gives partitions up until it is at it, a partition shared by more than
  desired_sharing members is taken from members until it is not;
- then the partitions with too few members are walked in order, handed round-robin to the
  members under their count that do not hold them yet.
With members subscribed to different topics (SimpleHeterogeneousAssignmentBuilder) each topic
is assigned so among the members subscribed to it.

Kafka walks Java hash sets, whose order roster does not reproduce: roster walks members and
partitions in sorted order, so who gets which partition may differ from Kafka's choice while
the counts, the sharing and the stickiness are the same.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

from roster.coordinator.share.model import Assignment, freeze

TopicPartition = tuple[bytes, int]


def assign(subscriptions: Mapping[str, frozenset[bytes]], partitions: Mapping[bytes, int],
           previous: Mapping[str, Assignment]) -> dict[str, Assignment]:
    """member id -> its target. `subscriptions`: member id -> the topic ids it subscribes to
    (existing topics only); `partitions`: topic id -> its partition count; `previous`: the
    last target of each member (stickiness)."""
    if not subscriptions:
        return {}
    distinct = set(subscriptions.values())
    if len(distinct) == 1:
        topics = next(iter(distinct))
        return _build(sorted(subscriptions), topics, partitions, previous)
    out: dict[str, dict] = {m: {} for m in subscriptions}
    for topic in sorted({t for ts in subscriptions.values() for t in ts}):
        members = sorted(m for m, ts in subscriptions.items() if topic in ts)
        for member, assignment in _build(members, frozenset({topic}), partitions,
                                         previous).items():
            out[member].update(assignment)
    return {m: freeze(a.items()) for m, a in out.items()}


def _build(members: list[str], topics: frozenset[bytes], counts: Mapping[bytes, int],
           previous: Mapping[str, Assignment]) -> dict[str, Assignment]:
    if not topics:
        return {m: {} for m in members}
    target = [(t, p) for t in sorted(topics) for p in range(counts.get(t, 0))]
    valid = set(target)
    n_members, n_partitions = len(members), len(target)
    sharing = 0 if n_partitions == 0 else (n_members + n_partitions - 1) // n_partitions
    precise = sharing * n_partitions / n_members
    wanted = [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(n_members)]
    # what each member keeps, and who holds each partition (insertion-ordered dicts as sets)
    held: list[dict[TopicPartition, None]] = []
    by_partition: dict[TopicPartition, dict[int, None]] = {}
    unfilled: dict[int, None] = {}
    for index, member in enumerate(members):
        kept = {tp: None for tp in _pairs(previous.get(member, {})) if tp in valid}
        # a member over its count gives partitions up (its first ones first, as Kafka walks)
        while len(kept) > wanted[index]:
            del kept[next(iter(kept))]
        held.append(kept)
        for tp in kept:
            by_partition.setdefault(tp, {})[index] = None
        if len(kept) < wanted[index]:
            unfilled[index] = None
    # a partition shared more than it should be is taken from members until it is not
    for tp, holders in by_partition.items():
        while len(holders) > sharing:
            index = next(iter(holders))
            del holders[index]
            del held[index][tp]
            unfilled[index] = None
    for tp in target:
        by_partition.setdefault(tp, {})
    _assign_remaining(target, by_partition, held, unfilled, wanted, sharing)
    return {member: freeze(_grouped(held[i])) for i, member in enumerate(members)}


def _assign_remaining(target, by_partition, held, unfilled, wanted, sharing) -> None:
    """Round-robin over the members under their count, once through the partitions."""
    order = sorted(unfilled)
    position = 0
    for tp in target:
        holders = by_partition[tp]
        missing = sharing - len(holders)
        tried = 0
        while missing > 0 and order and tried < len(order):
            position %= len(order)
            index = order[position]
            if index in holders:
                position += 1
                tried += 1
                continue
            holders[index] = None
            held[index][tp] = None
            missing -= 1
            tried = 0
            if len(held[index]) >= wanted[index]:
                order.pop(position)
            else:
                position += 1
        if not order:
            break


def _pairs(assignment: Assignment):
    for topic_id in sorted(assignment):
        for p in sorted(assignment[topic_id]):
            yield topic_id, p


def _grouped(tps) -> list[tuple[bytes, list[int]]]:
    out: dict[bytes, list[int]] = {}
    for topic_id, p in tps:
        out.setdefault(topic_id, []).append(p)
    return list(out.items())
