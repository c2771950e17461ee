"""Partition assignors: the properties every built-in assignor keeps, Kafka's documented
examples, and the registry. Sticky-specific behaviour is in test_assignors_sticky.py, which
reuses the strategies and checks defined here."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roster.client import assignors
from roster.client.assignors import (
    AssignmentError,
    CooperativeStickyAssignor,
    MemberSubscription,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    UnknownAssignorError,
)

TOPICS = ("a", "b", "c", "d")  # "d" often does not exist: subscriptions may name missing topics
ALL = [RangeAssignor(), RoundRobinAssignor(), StickyAssignor(), CooperativeStickyAssignor()]
by_name = pytest.mark.parametrize("assignor", ALL, ids=lambda a: a.name)
quick = settings(max_examples=100, deadline=None)

# ---- strategies --------------------------------------------------------------------------


@st.composite
def groups(draw, homogeneous: bool | None = None, owned: bool = True, max_members: int = 8):
    """(partitions_per_topic, members): random topics, subscriptions, static and dynamic
    members, and ownedPartitions as a group sends them (KIP-792): members of the newest
    generation claim disjoint partitions (plus some of deleted topics or out of range), members
    of older generations claim anything, overlapping freely. The bulk comes from one seeded
    Random, which keeps generation cheap."""
    existing = draw(st.lists(st.sampled_from(TOPICS[:3]), min_size=1, unique=True))
    partitions_per_topic = {t: draw(st.integers(0, 12)) for t in existing}
    count = draw(st.integers(1, max_members))
    if homogeneous is None:
        homogeneous = draw(st.booleans())
    newest = draw(st.integers(-1, 4))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    member_ids = rnd.sample([f"{c}{n}" for c in "mxz" for n in range(max_members)], count)
    instance_names = rnd.sample([f"i{n}" for n in range(count)], count)
    common = tuple(rnd.sample(TOPICS, rnd.randint(1, len(TOPICS))))
    older = [g for g in (newest - 1, newest - 2) if g >= -1]  # -1: never in a generation
    generations = [rnd.choice([newest, newest] + older) for _ in range(count)]
    generations[rnd.randrange(count)] = newest  # the newest generation is the one present
    everything = [(t, p) for t, n in sorted(partitions_per_topic.items()) for p in range(n)]
    claims: list[list] = [[] for _ in range(count)]
    if owned:
        current = [i for i, g in enumerate(generations) if g == newest]
        for tp in everything + [("gone", 0), (existing[0], 99)]:
            holder = rnd.choice([None] + current)
            if holder is not None:
                claims[holder].append(tp)
        for i, generation in enumerate(generations):
            if generation != newest:
                claims[i] = rnd.sample(everything, rnd.randint(0, len(everything)))
    members = []
    for i in range(count):
        topics = common if homogeneous else tuple(rnd.sample(TOPICS, rnd.randint(0, len(TOPICS))))
        rnd.shuffle(claims[i])
        members.append(MemberSubscription(
            member_id=member_ids[i],
            group_instance_id=instance_names[i] if rnd.random() < 0.5 else None,
            topics=topics, owned_partitions=tuple(claims[i]), generation=generations[i]))
    return partitions_per_topic, members


# ---- checks ------------------------------------------------------------------------------


def existing_subscription(member, partitions_per_topic):
    return {t for t in member.topics if partitions_per_topic.get(t, 0) > 0}


def subscribed_partitions(partitions_per_topic, members):
    topics = set().union(*(existing_subscription(m, partitions_per_topic) for m in members))
    return {(t, p) for t in topics for p in range(partitions_per_topic[t])}


def is_homogeneous(partitions_per_topic, members):
    return len({frozenset(existing_subscription(m, partitions_per_topic))
                for m in members}) == 1


def check_well_formed(partitions_per_topic, members, assignment, complete=True):
    """Every member present; lists sorted and free of repeats; each partition only to a member
    subscribed to its topic, at most once, and (when complete) every subscribed partition."""
    assert set(assignment) == {m.member_id for m in members}
    topics_of = {m.member_id: existing_subscription(m, partitions_per_topic) for m in members}
    handed_out = Counter()
    for member_id, partitions in assignment.items():
        assert partitions == sorted(set(partitions))
        for topic, partition in partitions:
            assert topic in topics_of[member_id]
            assert 0 <= partition < partitions_per_topic[topic]
        handed_out.update(partitions)
    assert all(n == 1 for n in handed_out.values())
    if complete:
        assert set(handed_out) == subscribed_partitions(partitions_per_topic, members)


def check_as_balanced_as_subscriptions_allow(partitions_per_topic, members, assignment):
    """No member can pass load, directly or along a chain of members, to a member holding two
    fewer (u -> v when u holds a partition of a topic v subscribes to). With identical
    subscriptions this is exactly "counts differ by at most one"."""
    topics_of = {m.member_id: existing_subscription(m, partitions_per_topic) for m in members}
    count = {m: len(ps) for m, ps in assignment.items()}
    for source in assignment:
        reached, frontier = {source}, [source]
        while frontier:
            giver = frontier.pop()
            held = {t for t, _ in assignment[giver]}
            for receiver, topics in topics_of.items():
                if receiver not in reached and held & topics:
                    assert count[receiver] >= count[source] - 1, (source, receiver, assignment)
                    reached.add(receiver)
                    frontier.append(receiver)
    if is_homogeneous(partitions_per_topic, members):
        assert max(count.values()) - min(count.values()) <= 1


def restarted(members, rename):
    """The same group after every static member restarted (new member ids)."""
    return [MemberSubscription(rename(m.member_id), m.group_instance_id, m.topics,
                               m.owned_partitions, m.generation)
            if m.group_instance_id is not None else m for m in members]


# ---- every assignor ----------------------------------------------------------------------


@by_name
@quick
@given(group=groups())
def test_each_subscribed_partition_goes_to_one_subscriber(assignor, group):
    partitions_per_topic, members = group
    try:
        assignment = assignor.assign(partitions_per_topic, members)
    except AssignmentError:
        assert assignor.name in ("sticky", "cooperative-sticky")  # only they read ownership
        return
    cooperative = assignor.rebalance_protocol == "cooperative"
    check_well_formed(partitions_per_topic, members, assignment, complete=not cooperative)


@by_name
@quick
@given(group=groups(), data=st.data())
def test_result_does_not_depend_on_member_order(assignor, group, data):
    partitions_per_topic, members = group
    shuffled = data.draw(st.permutations(members))
    try:
        expected = assignor.assign(partitions_per_topic, members)
    except AssignmentError:
        with pytest.raises(AssignmentError):
            assignor.assign(partitions_per_topic, shuffled)
        return
    assert assignor.assign(partitions_per_topic, shuffled) == expected


@quick
@given(group=groups(owned=False))
def test_range_balances_each_topic_over_its_subscribers(group):
    partitions_per_topic, members = group
    assignment = RangeAssignor().assign(partitions_per_topic, members)
    for topic, n in partitions_per_topic.items():
        subscribers = [m.member_id for m in members
                       if topic in existing_subscription(m, partitions_per_topic)]
        counts = [sum(1 for t, _ in assignment[m] if t == topic) for m in subscribers]
        if counts:
            assert max(counts) - min(counts) <= 1
            # contiguous ranges
            for m in subscribers:
                ps = [p for t, p in assignment[m] if t == topic]
                assert ps == list(range(ps[0], ps[0] + len(ps))) if ps else True


@pytest.mark.parametrize("assignor", [RoundRobinAssignor(), StickyAssignor()],
                         ids=lambda a: a.name)
@quick
@given(group=groups(homogeneous=True))
def test_identical_subscriptions_give_counts_within_one(assignor, group):
    partitions_per_topic, members = group
    try:
        assignment = assignor.assign(partitions_per_topic, members)
    except AssignmentError:
        return
    counts = [len(ps) for ps in assignment.values()]
    assert max(counts) - min(counts) <= 1


@quick
@given(group=groups())
def test_sticky_is_as_balanced_as_subscriptions_allow(group):
    partitions_per_topic, members = group
    try:
        assignment = StickyAssignor().assign(partitions_per_topic, members)
    except AssignmentError:
        return
    check_as_balanced_as_subscriptions_allow(partitions_per_topic, members, assignment)


@pytest.mark.parametrize("assignor", [RangeAssignor(), RoundRobinAssignor()],
                         ids=lambda a: a.name)
@quick
@given(group=groups(owned=False), suffix=st.text("pq", min_size=1, max_size=3))
def test_static_members_keep_their_partitions_across_restarts(assignor, group, suffix):
    """KIP-345: members are ordered by group.instance.id first, so new member ids for the same
    instances change nothing, whatever ids the dynamic members have."""
    partitions_per_topic, members = group
    before = assignor.assign(partitions_per_topic, members)
    after = assignor.assign(partitions_per_topic, restarted(members, lambda m: f"new-{m}{suffix}"))
    by_instance = {m.group_instance_id: m.member_id for m in members if m.group_instance_id}
    for instance, old_id in by_instance.items():
        assert after[f"new-{old_id}{suffix}"] == before[old_id]


def test_range_kip_345_example_survives_a_rolling_restart():
    # KIP-345: instances A, B, C with member ids 1, 2, 3; A restarts and becomes 4.
    members = [MemberSubscription(str(i), instance, ("t",))
               for i, instance in ((1, "A"), (2, "B"), (3, "C"))]
    before = RangeAssignor().assign({"t": 9}, members)
    members[0] = MemberSubscription("4", "A", ("t",))
    after = RangeAssignor().assign({"t": 9}, members)
    assert before["1"] == after["4"] == [("t", 0), ("t", 1), ("t", 2)]
    assert before["2"] == after["2"] == [("t", 3), ("t", 4), ("t", 5)]
    assert before["3"] == after["3"] == [("t", 6), ("t", 7), ("t", 8)]


def test_static_members_sort_before_dynamic_ones():
    members = [MemberSubscription("a-dynamic", None, ("t",)),
               MemberSubscription("z-static", "instance-1", ("t",))]
    assert RangeAssignor().assign({"t": 3}, members) == {
        "z-static": [("t", 0), ("t", 1)], "a-dynamic": [("t", 2)]}


@by_name
def test_a_member_id_listed_twice_is_refused(assignor):
    members = [MemberSubscription("m", None, ("t",)), MemberSubscription("m", "i", ("t",))]
    with pytest.raises(AssignmentError, match="more than once"):
        assignor.assign({"t": 2}, members)


@by_name
def test_members_without_existing_topics_get_empty_lists(assignor):
    members = [MemberSubscription("m1", None, ("missing",)), MemberSubscription("m2", None, ())]
    assert assignor.assign({"t": 2, "empty": 0}, members) == {"m1": [], "m2": []}
    assert assignor.assign({"t": 2}, []) == {}


def test_results_do_not_depend_on_the_hash_seed():
    """Leaders in different processes (different string hash seeds) compute the same thing."""
    script = (
        "import json\n"
        "from roster.client.assignors import ASSIGNORS, MemberSubscription as M\n"
        "ppt = {f't{i}': 7 + i for i in range(5)}\n"
        "ms = [M(f'm{i}', None, tuple(f't{j}' for j in range(5) if (i + j) % 3),\n"
        "        tuple((f't{j}', p) for j in range(5) for p in range(7) if (p + j) % 6 == i), 3)\n"
        "      for i in range(6)]\n"
        "print(json.dumps({n: a.assign(ppt, ms) for n, a in sorted(ASSIGNORS.items())}))\n")
    outputs = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
               for seed in ("1", "2", "3")}
    assert len(outputs) == 1
    assert json.loads(outputs.pop())


# ---- Kafka's documented examples ---------------------------------------------------------


def tp(names: str):
    """"t0p0 t1p1" -> [("t0", 0), ("t1", 1)]"""
    return [(name.split("p")[0], int(name.split("p")[1])) for name in names.split()]


two_topics_three_partitions = ({"t0": 3, "t1": 3},
                               [MemberSubscription("C0", None, ("t0", "t1")),
                                MemberSubscription("C1", None, ("t0", "t1"))])


def test_kafka_range_example():
    # RangeAssignor javadoc: C0 [t0p0, t0p1, t1p0, t1p1], C1 [t0p2, t1p2]
    assert RangeAssignor().assign(*two_topics_three_partitions) == {
        "C0": tp("t0p0 t0p1 t1p0 t1p1"), "C1": tp("t0p2 t1p2")}


def test_kafka_roundrobin_examples():
    # RoundRobinAssignor javadoc, identical subscriptions:
    # C0 [t0p0, t0p2, t1p1], C1 [t0p1, t1p0, t1p2]
    assert RoundRobinAssignor().assign(*two_topics_three_partitions) == {
        "C0": tp("t0p0 t0p2 t1p1"), "C1": tp("t0p1 t1p0 t1p2")}
    # ... and different ones: C0 [t0p0], C1 [t1p0], C2 [t1p1, t2p0, t2p1, t2p2]
    assert RoundRobinAssignor().assign(*nested_subscriptions()) == {
        "C0": tp("t0p0"), "C1": tp("t1p0"), "C2": tp("t1p1 t2p0 t2p1 t2p2")}


def nested_subscriptions(owned=None, generation=-1, without=()):
    owned = owned or {}
    members = [MemberSubscription(m, None, topics, tuple(owned.get(m, ())), generation)
               for m, topics in (("C0", ("t0",)), ("C1", ("t0", "t1")),
                                 ("C2", ("t0", "t1", "t2")))]
    return {"t0": 1, "t1": 2, "t2": 3}, [m for m in members if m.member_id not in without]


@pytest.mark.parametrize("assignor", [StickyAssignor(), CooperativeStickyAssignor()],
                         ids=lambda a: a.name)
def test_kafka_sticky_examples(assignor):
    # StickyAssignor javadoc, example 1: 3 consumers, t0..t3 with 2 partitions each ...
    partitions = {f"t{i}": 2 for i in range(4)}
    members = [MemberSubscription(f"C{i}", None, tuple(partitions)) for i in range(3)]
    first = assignor.assign(partitions, members)
    assert first == {"C0": tp("t0p0 t1p1 t3p0"), "C1": tp("t0p1 t2p0 t3p1"),
                     "C2": tp("t1p0 t2p1")}
    # ... C1 leaves: the others keep theirs and split C1's.
    survivors = [MemberSubscription(m, None, tuple(partitions), tuple(first[m]), 1)
                 for m in ("C0", "C2")]
    assert assignor.assign(partitions, survivors) == {
        "C0": tp("t0p0 t1p1 t2p0 t3p0"), "C2": tp("t0p1 t1p0 t2p1 t3p1")}

    # Example 2: nested subscriptions. Round robin would give C2 four partitions; sticky does not.
    first = assignor.assign(*nested_subscriptions())
    assert first == {"C0": tp("t0p0"), "C1": tp("t1p0 t1p1"), "C2": tp("t2p0 t2p1 t2p2")}
    # ... C0 leaves: only its partition moves.
    assert assignor.assign(*nested_subscriptions(first, 1, without=("C0",))) == {
        "C1": tp("t0p0 t1p0 t1p1"), "C2": tp("t2p0 t2p1 t2p2")}


# ---- registry ----------------------------------------------------------------------------


def test_registry_names_and_protocols():
    assert {n: a.rebalance_protocol for n, a in assignors.ASSIGNORS.items()} == {
        "range": "eager", "roundrobin": "eager", "sticky": "eager",
        "cooperative-sticky": "cooperative"}
    for name, assignor in assignors.ASSIGNORS.items():
        assert assignors.get(name) is assignor and assignor.name == name


def test_unknown_assignor_name_is_a_clear_error():
    with pytest.raises(UnknownAssignorError, match="'uniform'.*known: cooperative-sticky, range"):
        assignors.get("uniform")
    with pytest.raises(LookupError):
        assignors.get("Range")


def test_assignors_are_pure():
    """No I/O, clock or randomness in the assignors (the leader must get the same answer from
    the same input, and they must stay cheap to test)."""
    import ast
    from pathlib import Path
    forbidden = {"asyncio", "socket", "time", "uuid", "random", "os", "threading", "selectors"}
    offenders = []
    for path in sorted(Path(assignors.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in forbidden]
    assert not offenders, offenders
