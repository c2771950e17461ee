"""The server-side assignors' properties, with hypothesis: every partition of a subscribed
topic owned by exactly one member that subscribes to it; with identical subscriptions, uniform
balances within one; a member joining or leaving moves only what it must; range gives
contiguous ranges per topic on a fresh assignment."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from roster.coordinator.consumer.assignors import MemberSpec, range_, uniform


def tid(i: int) -> bytes:
    return bytes([i]) * 16


def flat(plan) -> dict[tuple[bytes, int], str]:
    owners = {}
    for m, a in plan.items():
        for t, ps in a.items():
            for p in ps:
                assert (t, p) not in owners, f"{(t, p)} given twice"
                owners[(t, p)] = m
    return owners


def count(plan, m) -> int:
    return sum(len(ps) for ps in plan.get(m, {}).values())


def check_valid(members, partitions, plan):
    owners = flat(plan)
    for m, spec in members.items():
        for t in plan.get(m, {}):
            assert t in spec.topics, "a member got a topic it does not subscribe to"
    wanted = {(t, p) for spec in members.values() for t in spec.topics if t in partitions
              for p in range(partitions[t])}
    assert set(owners) == wanted


topic_sizes = st.lists(st.integers(0, 40), min_size=1, max_size=5)


@settings(max_examples=150, deadline=None)
@given(topic_sizes, st.integers(1, 30))
def test_uniform_homogeneous_is_complete_and_balanced(sizes, n):
    partitions = {tid(i): s for i, s in enumerate(sizes)}
    topics = frozenset(partitions)
    members = {f"m{i:02}": MemberSpec(topics) for i in range(n)}
    plan = uniform(members, partitions)
    check_valid(members, partitions, plan)
    counts = [count(plan, m) for m in members]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=150, deadline=None)
@given(topic_sizes, st.integers(1, 20), st.data())
def test_uniform_join_and_leave_move_only_what_they_must(sizes, n, data):
    partitions = {tid(i): s for i, s in enumerate(sizes)}
    topics = frozenset(partitions)
    members = {f"m{i:02}": MemberSpec(topics) for i in range(n)}
    plan = uniform(members, partitions)
    # join: nobody already there gains anything; everything that moves goes to the newcomer
    joined = {m: MemberSpec(topics, plan.get(m, {})) for m in members}
    joined["new"] = MemberSpec(topics)
    after = uniform(joined, partitions)
    check_valid(joined, partitions, after)
    before_owner, after_owner = flat(plan), flat(after)
    moved = {tp for tp, m in before_owner.items() if after_owner[tp] != m}
    assert all(after_owner[tp] == "new" for tp in moved)
    counts = [count(after, m) for m in joined]
    assert max(counts) - min(counts) <= 1
    # leave: only the leaver's partitions move
    leaver = data.draw(st.sampled_from(sorted(joined)))
    if len(joined) > 1:
        left = {m: MemberSpec(topics, after.get(m, {})) for m in joined if m != leaver}
        final = uniform(left, partitions)
        check_valid(left, partitions, final)
        final_owner = flat(final)
        for tp, m in after_owner.items():
            if m != leaver:
                assert final_owner[tp] == m
        counts = [count(final, m) for m in left]
        assert max(counts) - min(counts) <= 1


@settings(max_examples=150, deadline=None)
@given(topic_sizes, st.lists(st.sets(st.integers(0, 4), min_size=1), min_size=1, max_size=12),
       st.booleans())
def test_heterogeneous_subscriptions_are_complete(sizes, subs, use_range):
    partitions = {tid(i): s for i, s in enumerate(sizes)}
    members = {f"m{i:02}": MemberSpec(frozenset(tid(t) for t in s if t < len(sizes)))
               for i, s in enumerate(subs)}
    assignor = range_ if use_range else uniform
    plan = assignor(members, partitions)
    check_valid(members, partitions, plan)
    # sticky: assigning again from the result changes nothing
    again = assignor({m: MemberSpec(s.topics, plan.get(m, {})) for m, s in members.items()},
                     partitions)
    assert flat(again) == flat(plan)


@settings(max_examples=100, deadline=None)
@given(topic_sizes, st.integers(1, 12))
def test_range_gives_contiguous_balanced_ranges_per_topic(sizes, n):
    partitions = {tid(i): s for i, s in enumerate(sizes)}
    topics = frozenset(partitions)
    members = {f"m{i:02}": MemberSpec(topics) for i in range(n)}
    plan = range_(members, partitions)
    check_valid(members, partitions, plan)
    for t, size in partitions.items():
        counts = [len(plan.get(m, {}).get(t, ())) for m in sorted(members)]
        assert max(counts) - min(counts) <= 1
        start = 0
        for m in sorted(members):
            ps = sorted(plan.get(m, {}).get(t, ()))
            assert ps == list(range(start, start + len(ps)))
            start += len(ps)


def test_uniform_is_sticky_when_nothing_changes():
    partitions = {tid(0): 10, tid(1): 7}
    topics = frozenset(partitions)
    members = {f"m{i}": MemberSpec(topics) for i in range(4)}
    plan = uniform(members, partitions)
    again = uniform({m: MemberSpec(topics, plan[m]) for m in members}, partitions)
    assert again == plan
