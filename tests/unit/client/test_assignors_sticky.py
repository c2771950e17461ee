"""The sticky and cooperative-sticky assignors: which ownedPartitions count (KIP-792), fewest
moves, stability, and KIP-429's revoke-first rule."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roster.client.assignors import (
    AssignmentError,
    CooperativeStickyAssignor,
    MemberSubscription,
    StickyAssignor,
)
from roster.client.assignors.ownership import resolve_owners
from roster.client.assignors.sticky import plan_sticky
from tests.unit.client.test_assignors import (
    check_as_balanced_as_subscriptions_allow,
    check_well_formed,
    existing_subscription,
    groups,
    quick,
    subscribed_partitions,
    tp,
)

sticky, cooperative = StickyAssignor(), CooperativeStickyAssignor()
both = pytest.mark.parametrize("assignor", [sticky, cooperative], ids=lambda a: a.name)


def reference_owners(partitions_per_topic, members):
    """The KIP-792 rules restated naively (the implementation is in ownership.py)."""
    if not members:
        return {}
    newest = max(m.generation for m in members)

    def valid(member_id, topic, partition):
        member = next(m for m in members if m.member_id == member_id)
        return (topic in existing_subscription(member, partitions_per_topic)
                and 0 <= partition < partitions_per_topic[topic])

    claimants: dict = {}
    for m in members:
        for claim in set(m.owned_partitions):
            claimants.setdefault(claim, []).append((m.generation, m.member_id))
    owners = {}
    for claim, who in claimants.items():
        in_newest = [m for g, m in who if g == newest]
        if len(in_newest) > 1:
            raise AssignmentError("overlap")
        if in_newest:
            winners = in_newest
        else:
            best = max(g for g, _ in who)
            winners = [m for g, m in who if g == best]
        if len(winners) == 1 and valid(winners[0], *claim):
            owners[claim] = winners[0]
    return owners


def moved(assignment, owners):
    return {p for m, ps in assignment.items() for p in ps if owners.get(p, m) != m}


def fewest_moves_for_balance(partitions_per_topic, members, owners):
    """Identical subscriptions: r members end with q + 1 partitions and the rest with q, and a
    member keeps at most its final count of what it owns; give the q + 1 places to owners of
    more than q and count what cannot be kept."""
    q, r = divmod(len(subscribed_partitions(partitions_per_topic, members)), len(members))
    owned = Counter(owners.values())
    counts = [owned[m.member_id] for m in members]
    kept = sum(min(o, q) for o in counts) + min(r, sum(1 for o in counts if o > q))
    return sum(counts) - kept


def next_generation(members, assignment, generation):
    return [MemberSubscription(m.member_id, m.group_instance_id, m.topics,
                               tuple(assignment[m.member_id]), generation) for m in members]


def newest(members):
    return max(m.generation for m in members)


# ---- which ownedPartitions count ---------------------------------------------------------


@quick
@given(group=groups())
def test_owner_resolution_follows_the_kip_792_rules(group):
    assert resolve_owners(*group) == reference_owners(*group)


@quick
@given(group=groups())
def test_stale_claims_never_win_over_current_ones(group):
    """Cooperative: a partition claimed in the newest generation goes to nobody but its
    claimant this round, whoever else claims it from an older generation."""
    partitions_per_topic, members = group
    assignment = cooperative.assign(partitions_per_topic, members)
    current = {p: m.member_id for m in members if m.generation == newest(members)
               for p in m.owned_partitions  # (claims of an unsubscribed topic are released)
               if p[0] in existing_subscription(m, partitions_per_topic)}
    for member, partitions in assignment.items():
        for p in partitions:
            assert current.get(p, member) == member


def test_stale_owner_keeps_only_what_nobody_current_owns():
    members = [MemberSubscription("A", None, ("t",), tp("tp0 tp1"), 7),
               MemberSubscription("B", None, ("t",), tp("tp2 tp3"), 7),
               # missed generation 7: claims A's and B's partitions and the unclaimed tp4
               MemberSubscription("C", None, ("t",), tp("tp0 tp2 tp4"), 6)]
    assert resolve_owners({"t": 6}, members) == {
        ("t", 0): "A", ("t", 1): "A", ("t", 2): "B", ("t", 3): "B", ("t", 4): "C"}
    assert sticky.assign({"t": 6}, members) == {
        "A": tp("tp0 tp1"), "B": tp("tp2 tp3"), "C": tp("tp4 tp5")}


def test_tied_stale_claims_cancel_and_newer_stale_claims_win():
    members = [MemberSubscription("A", None, ("t",), (), 9),
               MemberSubscription("B", None, ("t",), tp("tp0 tp1"), 5),
               MemberSubscription("C", None, ("t",), tp("tp0"), 5),
               MemberSubscription("D", None, ("t",), tp("tp1"), 8)]
    assert resolve_owners({"t": 2}, members) == {("t", 1): "D"}


@both
@pytest.mark.parametrize("generation", [-1, 0, 12])
def test_overlapping_claims_in_one_generation_are_refused(assignor, generation):
    members = [MemberSubscription("A", None, ("t",), tp("tp0 tp1"), generation),
               MemberSubscription("B", None, ("t",), tp("tp1 tp2"), generation)]
    with pytest.raises(AssignmentError, match=r"t-1 is claimed by both 'A' and 'B' in generation"):
        assignor.assign({"t": 3}, members)


@both
def test_overlap_across_generations_is_not_an_error(assignor):
    members = [MemberSubscription("A", None, ("t",), tp("tp0 tp1"), 3),
               MemberSubscription("B", None, ("t",), tp("tp1 tp2"), 2),
               MemberSubscription("C", None, ("t",), tp("tp1 tp2"), 2)]
    # tp1: A's current claim wins; tp2: B and C tie in generation 2, so nobody owns it.
    assert assignor.assign({"t": 3}, members) == {
        "A": tp("tp0"), "B": tp("tp2"), "C": tp("tp1") if assignor is sticky else []}


@both
def test_unsubscribed_and_deleted_topics_are_released(assignor):
    # A dropped topic u from its subscription and topic gone was deleted; both had partitions
    # of them. Nothing of gone is assigned; A's u partitions go to the others without being
    # withheld (a cooperative member revokes unsubscribed partitions before it rejoins).
    members = [MemberSubscription("A", None, ("t",), tp("tp0 up0 up1 gonep0"), 4),
               MemberSubscription("B", None, ("t", "u", "gone"), tp("tp1 gonep1"), 4),
               MemberSubscription("C", None, ("t", "u"), tp("tp2"), 4)]
    assert assignor.assign({"t": 3, "u": 2}, members) == {
        "A": tp("tp0"), "B": tp("tp1 up0"), "C": tp("tp2 up1")}


# ---- fewest moves and stability ----------------------------------------------------------


@both
@quick
@given(group=groups(homogeneous=True))
def test_identical_subscriptions_move_the_fewest_partitions_balance_allows(assignor, group):
    partitions_per_topic, members = group
    owners = reference_owners(partitions_per_topic, members)
    plan = plan_sticky(partitions_per_topic, members)
    expected = fewest_moves_for_balance(partitions_per_topic, members, owners)
    assert len(moved(plan.assignment, owners)) == len(plan.transfers()) == expected
    withheld = subscribed_partitions(partitions_per_topic, members) - {
        p for ps in assignor.assign(partitions_per_topic, members).values() for p in ps}
    assert len(withheld) == (expected if assignor is cooperative else 0)


@both
@quick
@given(group=groups(homogeneous=True, owned=False), joins=st.booleans(), data=st.data())
def test_a_single_join_or_leave_moves_the_minimum(assignor, group, joins, data):
    partitions_per_topic, members = group
    before = sticky.assign(partitions_per_topic, members)
    after = next_generation(members, before, 1)
    if joins:
        after.append(MemberSubscription("newcomer", None, members[0].topics))
        # each old member keeps q (or q + 1 for as many as there are remainders) and the
        # newcomer gets the rest: exactly what the old members hold above their new share
        q, r = divmod(len(subscribed_partitions(partitions_per_topic, members)), len(after))
        counts = sorted((len(ps) for ps in before.values()), reverse=True)
        expected = sum(c - (q + 1 if i < r else q) for i, c in enumerate(counts) if c > q)
    else:
        if len(after) == 1:
            return
        after.remove(data.draw(st.sampled_from(after)))
        expected = 0  # the others only gain
    plan = plan_sticky(partitions_per_topic, after)
    assert len(plan.transfers()) == expected
    check_as_balanced_as_subscriptions_allow(partitions_per_topic, after, plan.assignment)
    result = assignor.assign(partitions_per_topic, after)
    withheld = subscribed_partitions(partitions_per_topic, after) - {
        p for ps in result.values() for p in ps}
    assert len(withheld) == (expected if assignor is cooperative else 0)


@quick
@given(group=groups())
def test_a_second_run_on_the_result_moves_nothing(group):
    partitions_per_topic, members = group
    first = sticky.assign(partitions_per_topic, members)
    again = next_generation(members, first, newest(members) + 1)
    plan = plan_sticky(partitions_per_topic, again)
    assert plan.transfers() == {}
    assert plan.assignment == first


def test_balance_may_need_a_chain_of_moves():
    # A can only take x, C only gives y, B takes and gives both: C -y-> B -x-> A evens 0/1/2.
    members = [MemberSubscription("A", None, ("x",), (), 1),
               MemberSubscription("B", None, ("x", "y"), tp("xp0"), 1),
               MemberSubscription("C", None, ("y",), tp("yp0 yp1"), 1)]
    plan = plan_sticky({"x": 1, "y": 2}, members)
    assert plan.assignment == {"A": tp("xp0"), "B": tp("yp1"), "C": tp("yp0")}
    assert plan.transfers() == {("x", 0): ("B", "A"), ("y", 1): ("C", "B")}


# ---- cooperative-sticky ------------------------------------------------------------------


@quick
@given(group=groups())
def test_cooperative_withholds_exactly_the_partitions_changing_owner(group):
    partitions_per_topic, members = group
    owners = reference_owners(partitions_per_topic, members)
    full = sticky.assign(partitions_per_topic, members)
    assert cooperative.assign(partitions_per_topic, members) == {
        m: [p for p in ps if owners.get(p, m) == m] for m, ps in full.items()}


@quick
@given(group=groups())
def test_cooperative_rebalance_completes_in_a_second_round(group):
    partitions_per_topic, members = group
    first = cooperative.assign(partitions_per_topic, members)
    # every member revoked what it lost and rejoined with what it kept
    members = next_generation(members, first, newest(members) + 1)
    second = cooperative.assign(partitions_per_topic, members)
    check_well_formed(partitions_per_topic, members, second)
    check_as_balanced_as_subscriptions_allow(partitions_per_topic, members, second)
    for member, partitions in first.items():
        assert set(partitions) <= set(second[member])  # nothing kept in round one moves
    third = cooperative.assign(partitions_per_topic,
                               next_generation(members, second, newest(members) + 1))
    assert third == second


def test_cooperative_join_revokes_first_then_assigns():
    topics = ("t0", "t1")
    partitions = {"t0": 3, "t1": 3}
    old = {"C0": tp("t0p0 t0p2 t1p1"), "C1": tp("t0p1 t1p0 t1p2")}
    members = [MemberSubscription(m, None, topics, tuple(ps), 5) for m, ps in old.items()]
    members.append(MemberSubscription("C2", None, topics))
    first = cooperative.assign(partitions, members)
    # each old member gives up one partition, which nobody gets in this round
    assert first == {"C0": tp("t0p0 t1p1"), "C1": tp("t1p0 t1p2"), "C2": []}
    rejoined = [MemberSubscription(m, None, topics, tuple(first[m]), 6) for m in first]
    assert cooperative.assign(partitions, rejoined) == {
        "C0": tp("t0p0 t1p1"), "C1": tp("t1p0 t1p2"), "C2": tp("t0p1 t0p2")}
