"""The classic group state machine and the group's own questions (the cases of
Kafka's ClassicGroupTest)."""
import itertools

import pytest

from roster.coordinator.classic import rebalance
from roster.coordinator.classic.group import Group, Member
from roster.coordinator.results import Parked, Result
from roster.coordinator.classic.states import (
    ALL_STATES,
    CAN_REBALANCE,
    LEGAL_PREVIOUS,
    GroupState,
    IllegalTransition,
)
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.harness import Harness

S = GroupState
EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    S.EMPTY, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE, S.DEAD)

# Kafka's ClassicGroupState transitions, written out apart from states.py: the legal (from, to)
LEGAL = {
    (STABLE, PREPARING), (COMPLETING, PREPARING), (EMPTY, PREPARING),
    (PREPARING, COMPLETING),
    (COMPLETING, STABLE),
    (PREPARING, EMPTY),
    (EMPTY, DEAD), (PREPARING, DEAD), (COMPLETING, DEAD), (STABLE, DEAD), (DEAD, DEAD),
}


def member(member_id, protocols=(("roundrobin", b""),), instance=None):
    return Member(member_id, instance, "client", "/127.0.0.1", 30_000, 10_000, tuple(protocols))


def add(group, member_id, protocols=(("roundrobin", b""),), instance=None, joined=False):
    """Add a member to `group`, with a parked JoinGroup when `joined`; returns the member."""
    added = member(member_id, protocols, instance)
    group.add(added, "consumer")
    if joined:
        group.park_join(added, Parked(member_id, 9))
    return added


def test_legal_previous_states_are_the_released_table():
    """states.LEGAL_PREVIOUS is exactly Kafka's ClassicGroupState table."""
    assert set(LEGAL_PREVIOUS) == ALL_STATES == set(GroupState)
    assert {(f, t) for t, sources in LEGAL_PREVIOUS.items() for f in sources} == LEGAL
    assert CAN_REBALANCE == {STABLE, COMPLETING, EMPTY}


@pytest.mark.parametrize("current, target", list(itertools.product(GroupState, GroupState)),
                         ids=lambda s: s.value)
def test_transition(current, target):
    """Every pair: a legal transition records the previous state and the time; an illegal one
    raises and changes nothing."""
    group = Group("g", state=current, previous_state=DEAD, state_timestamp=5)
    if (current, target) in LEGAL:
        group.transition_to(target, 42)
        assert (group.state, group.previous_state, group.state_timestamp) == \
            (target, current, 42)
    else:
        with pytest.raises(IllegalTransition):
            group.transition_to(target, 42)
        assert (group.state, group.previous_state, group.state_timestamp) == (current, DEAD, 5)


# -- protocol selection ---------------------------------------------------------------------------

def test_select_protocol():
    """Each member votes for its first protocol that everyone supports; most votes wins, and a
    tie goes to the name that sorts first (deliberate: Kafka breaks ties arbitrarily)."""
    group = Group("g")
    group.add(member("m1", [("range", b""), ("roundrobin", b"")]), "consumer")
    group.add(member("m2", [("roundrobin", b""), ("range", b"")]), "consumer")
    assert group.select_protocol() == "range"
    group.add(member("m3", [("roundrobin", b""), ("range", b"")]), "consumer")
    assert group.select_protocol() == "roundrobin"


@pytest.mark.parametrize("order", [("z", "a"), ("a", "z")])
def test_select_protocol_tie_goes_to_the_name_that_sorts_first(order):
    """Deliberate: a tie is broken by name, whatever order the members joined in."""
    preferences = {"z": [("zeta", b""), ("alpha", b"")], "a": [("alpha", b""), ("zeta", b"")]}
    group = Group("g")
    for member_id in order:
        group.add(member(member_id, preferences[member_id]), "consumer")
    assert group.select_protocol() == "alpha"


def test_select_protocol_raises_if_no_members():
    """Selecting a protocol for an empty group is a coordinator bug."""
    with pytest.raises(ValueError):
        Group("g").select_protocol()


def test_select_protocol_chooses_compatible_protocol():
    """Only protocols every member supports are candidates, whatever the preferences."""
    group = Group("g")
    group.add(member("m1", [("range", b""), ("roundrobin", b"")]), "consumer")
    group.add(member("m2", [("roundrobin", b""), ("foo", b"")]), "consumer")
    assert group.select_protocol() == "roundrobin"


# -- supportsProtocols ----------------------------------------------------------------------------

def test_supports_protocols():
    """An Empty group accepts any non-empty type and list; otherwise the type must match and
    one name must be supported by every member."""
    group = Group("g")
    assert group.supports("consumer", (("range", b""), ("roundrobin", b"")))
    assert not group.supports("", (("range", b""),))
    assert not group.supports("consumer", ())
    group.add(member("m1", [("range", b""), ("roundrobin", b"")]), "consumer")
    group.transition_to(PREPARING, 0)
    assert group.supports("consumer", (("roundrobin", b""), ("foo", b"")))
    assert group.supports("consumer", (("range", b""), ("bar", b"")))
    assert not group.supports("consumer", (("foo", b""), ("bar", b"")))
    assert not group.supports("connect", (("range", b""),))


def test_supports_protocols_of_a_rebalancing_group_with_no_members_left():
    """A group is judged by its state, not its size: after every member left during a join
    phase, the protocol type must still match (only Empty accepts any type)."""
    h = Harness(initial_rebalance_delay_ms=3000)
    h.join(instance="i-a")
    h.leave(("", "i-a"))
    group = h.group()
    assert group.state is PREPARING and group.members == {}
    assert not group.supports("connect", (("range", b""),))
    assert group.supports("consumer", (("anything", b""),))
    assert h.reply(h.join(instance="i-b", protocol_type="connect")).error is \
        ErrorCode.inconsistent_group_protocol


# -- generations and leaders ----------------------------------------------------------------------

def test_init_next_generation():
    """Completing a join phase with members bumps the generation and selects the protocol."""
    h = Harness()
    group = h.coordinator.create_group("g", 0)
    group.transition_to(PREPARING, 0)
    add(group, "m1", joined=True)
    assert (group.generation, group.protocol_name) == (0, None)
    rebalance.complete_join(h.coordinator, group, 0, Result())
    assert (group.generation, group.protocol_name, group.state) == (1, "roundrobin", COMPLETING)


def test_init_next_generation_empty_group():
    """Completing a join phase with no members bumps the generation and clears the protocol."""
    h = Harness()
    group = h.coordinator.create_group("g", 0)
    group.transition_to(PREPARING, 0)
    result = Result()
    rebalance.complete_join(h.coordinator, group, 0, result)
    assert (group.generation, group.protocol_name, group.state) == (1, None, EMPTY)
    assert [r.value.generation for r in result.records] == [1]


def test_replace_group_instance():
    """Replacing a static member moves the leader and the instance mapping to the new id."""
    group = Group("g")
    add(group, "old", instance="i-a", joined=True)
    group.new_members["old"] = None
    assert group.is_leader("old") and group.static_member_id("i-a") == "old"
    replaced = group.replace_static("old", "new")
    assert group.is_leader("new") and group.static_member_id("i-a") == "new"
    assert list(group.members) == ["new"] and replaced.member_id == "new"
    assert not group.is_new(replaced) and group.is_joining(replaced)
    assert list(group.joining) == ["new"]


def test_elect_new_joined_leader():
    """If the leader has not rejoined, the first member that did becomes leader."""
    h = Harness()
    group = h.coordinator.create_group("g", 0)
    group.transition_to(PREPARING, 0)
    add(group, "leader")
    add(group, "new-leader", joined=True)
    add(group, "new-member")
    rebalance.complete_join(h.coordinator, group, 0, Result())
    assert group.leader_id == "new-leader" and list(group.members) == ["new-leader"]


def test_maybe_elect_new_joined_leader_choose_existing():
    """A leader that rejoined stays leader."""
    h = Harness()
    group = h.coordinator.create_group("g", 0)
    group.transition_to(PREPARING, 0)
    add(group, "leader", joined=True)
    add(group, "new-member", joined=True)
    rebalance.complete_join(h.coordinator, group, 0, Result())
    assert group.leader_id == "leader"


def test_leader_is_handed_to_a_remaining_member_on_removal():
    """Removing the leader hands leadership to a remaining member, or to nobody."""
    group = Group("g")
    group.add(member("a", instance="i-a"), "consumer")
    group.add(member("b"), "consumer")
    group.remove("a")
    assert group.leader_id == "b" and group.static_members == {}
    group.remove("b")
    assert group.leader_id is None
