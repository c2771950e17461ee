"""Pre-registered static members (issue 17, part 2; KIP-345's future work): a group that
expects its static members forms in one generation as soon as the last one joins, waits no
fixed delay, proceeds at the rebalance timeout without the missing, and refuses (or, if told,
admits) members it does not expect."""
from roster.coordinator.classic.expectations import REFUSAL, Expected
from roster.coordinator.classic.states import GroupState
from roster.coordinator.classic.timers import join_key
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.harness import Harness

S = GroupState
E = ErrorCode


def expecting(wanted: Expected | None, **config) -> Harness:
    h = Harness(**config)
    h.coordinator.expected = lambda group_id: wanted if group_id == "g" else None
    return h


def test_the_group_forms_when_the_last_expected_member_joins_not_after_a_delay():
    h = expecting(Expected(frozenset({"a", "b", "c"})), initial_rebalance_delay_ms=3000)
    tokens = []
    for instance in ("a", "b"):
        tokens.append(h.join(instance=instance))
        h.advance(1000)   # a second apart: without expectations, the delay would be extended
    group = h.group()
    assert group.state is S.PREPARING_REBALANCE and not h.answered(*tokens)
    assert h.deadline(join_key("g")) == 30_000   # the rebalance timeout, not the 3 s delay
    tokens.append(h.join(instance="c"))
    assert h.answered(*tokens)                    # at once: no delay after the last one
    assert {h.replies[t].generation for t in tokens} == {1}
    assert group.state is S.COMPLETING_REBALANCE and h.deadline(join_key("g")) is None


def test_by_size():
    h = expecting(Expected(size=2))
    first = h.join(instance="x")
    h.advance(5000)
    assert not h.answered(first)
    second = h.join(instance="y")
    assert h.answered(first, second) and h.replies[second].generation == 1


def test_at_the_rebalance_timeout_the_group_forms_with_those_present(caplog):
    h = expecting(Expected(frozenset({"a", "b", "c"})))
    first, second = h.join(instance="a"), h.join(instance="b")
    with caplog.at_level("WARNING", "roster.coordinator"):
        h.advance(29_999)
        assert not h.answered(first, second)
        h.advance(1)
    assert h.replies[first].generation == 1 and len(h.group().members) == 2
    assert "missing c" in caplog.text


def test_unexpected_members_are_refused():
    h = expecting(Expected(frozenset({"a"})))
    refused = h.join(instance="z")
    assert h.replies[refused].error is REFUSAL
    dynamic = h.join()   # no instance id: not in the list either
    assert h.replies[dynamic].error is REFUSAL
    assert h.group() is None   # nothing was created for them
    ok = h.join(instance="a")
    assert h.replies[ok].error is E.none and h.replies[ok].generation == 1


def test_one_more_than_the_expected_size_is_refused():
    h = expecting(Expected(size=1))
    assert h.replies[h.join(instance="x")].error is E.none
    assert h.replies[h.join(instance="y")].error is REFUSAL
    # the expected member itself may come back (a restart: a new member id)
    assert h.replies[h.join(instance="x")].error is E.none


def test_unexpected_members_may_be_admitted_instead():
    h = expecting(Expected(frozenset({"a"}), refuse_unexpected=False))
    other = h.join(instance="z")
    assert not h.answered(other)                  # waits for "a" like everyone else
    mine = h.join(instance="a")
    assert h.answered(other, mine) and h.replies[mine].generation == 1


def test_without_expectations_nothing_changes():
    h = expecting(None, initial_rebalance_delay_ms=3000)
    token = h.join(instance="a")
    assert h.deadline(join_key("g")) == 3000
    h.advance(3000)
    assert h.answered(token)


def test_scale_down_is_explicit(caplog):
    """remove-members takes the ids out of the list, then out of the group: the rebalance
    completes at once. A member that just left while still expected is waited for, up to the
    rebalance timeout."""
    wanted = {"ids": frozenset({"a", "b"})}
    h = Harness()
    h.coordinator.expected = lambda group_id: Expected(wanted["ids"])
    a, b = h.join(instance="a", session_ms=60_000), h.join(instance="b", session_ms=60_000)
    a_id, b_id = h.replies[a].member_id, h.replies[b].member_id
    leader = h.replies[a].leader
    for member in (a_id, b_id):
        h.sync(member, 1, [(a_id, b"x"), (b_id, b"y")] if member == leader else ())
    assert h.group().state is S.STABLE

    h.leave((b_id, "b"))                     # still expected: "b" is waited for
    rejoin = h.join(member_id=a_id, instance="a", session_ms=60_000)
    assert not h.answered(rejoin)
    with caplog.at_level("WARNING", "roster.coordinator"):
        h.advance(30_000)
    assert h.replies[rejoin].generation == 2 and "missing b" in caplog.text
    h.sync(a_id, 2, [(a_id, b"x")])

    wanted["ids"] = frozenset({"a"})         # roster groups remove-members g --instance-ids b
    h.force_rebalance()
    rejoin = h.join(member_id=a_id, instance="a", session_ms=60_000)
    assert h.answered(rejoin) and h.replies[rejoin].generation == 3


def test_scale_up_rebalances_once_when_all_the_new_expected_members_are_in():
    """KIP-345's sketch: "when we scale up the fleet by defining 4 new client instance ids,
    the server shall wait until all 4 new members to join the group"."""
    wanted = {"ids": frozenset({"a"})}
    h = Harness()
    h.coordinator.expected = lambda group_id: Expected(wanted["ids"])
    a = h.join(instance="a", session_ms=60_000)
    a_id = h.replies[a].member_id
    h.sync(a_id, 1, [(a_id, b"x")])
    wanted["ids"] = frozenset({"a", "b", "c"})      # roster groups expect --instance-ids a,b,c
    b = h.join(instance="b", session_ms=60_000)     # the first new one starts a rebalance
    group = h.group()
    assert group.state is S.PREPARING_REBALANCE
    a_again = h.join(member_id=a_id, instance="a", session_ms=60_000)
    h.advance(5000)
    assert not h.answered(b, a_again)               # held for "c"
    c = h.join(instance="c", session_ms=60_000)
    assert h.answered(a_again, b, c)
    assert {h.replies[t].generation for t in (a_again, b, c)} == {2}
