"""Kafka 4.4.0's SimpleAssignor rules as roster's share assignor keeps them: balance (counts
differ by at most one), every partition assigned, sharing when members outnumber partitions
(ceil(members / partitions) each), stickiness, and per-topic assignment for members
subscribed to different topics."""
from __future__ import annotations

import itertools

from roster.coordinator.share.assignor import assign

A, B = b"a" * 16, b"b" * 16


def counts(target) -> list[int]:
    return sorted(sum(len(ps) for ps in t.values()) for t in target.values())


def holders(target, topic=A) -> dict[int, int]:
    out: dict[int, int] = {}
    for t in target.values():
        for p in t.get(topic, ()):
            out[p] = out.get(p, 0) + 1
    return out


def test_fewer_members_than_partitions_split_them_evenly():
    for members, partitions in itertools.product(range(1, 6), range(5, 12)):
        subs = {f"m{i}": frozenset({A}) for i in range(members)}
        target = assign(subs, {A: partitions}, {})
        c = counts(target)
        assert sum(c) == partitions and c[-1] - c[0] <= 1
        assert holders(target) == {p: 1 for p in range(partitions)}


def test_more_members_than_partitions_share_each_partition():
    for members, partitions in ((3, 1), (5, 2), (7, 3), (4, 3)):
        subs = {f"m{i}": frozenset({A}) for i in range(members)}
        target = assign(subs, {A: partitions}, {})
        sharing = -(-members // partitions)
        assert set(holders(target).values()) == {sharing}
        assert counts(target)[-1] - counts(target)[0] <= 1
        assert all(t for t in target.values())       # nobody left without a partition


def test_a_joining_member_moves_as_little_as_it_can():
    subs = {"m1": frozenset({A}), "m2": frozenset({A})}
    first = assign(subs, {A: 6}, {})
    grown = assign({**subs, "m3": frozenset({A})}, {A: 6}, first)
    assert counts(grown) == [2, 2, 2]
    for member in ("m1", "m2"):
        assert grown[member][A] <= first[member][A]     # they only gave partitions up


def test_unsubscribed_topics_are_dropped_and_others_assigned_among_their_members():
    subs = {"m1": frozenset({A, B}), "m2": frozenset({A}), "m3": frozenset()}
    target = assign(subs, {A: 2, B: 3}, {"m2": {B: frozenset({0})}})
    assert target["m3"] == {}
    assert B not in target["m2"]
    assert target["m1"][B] == frozenset({0, 1, 2})
    assert holders(target) == {0: 1, 1: 1}


def test_no_members_no_topics():
    assert assign({}, {A: 3}, {}) == {}
    assert assign({"m1": frozenset()}, {}, {}) == {"m1": {}}
