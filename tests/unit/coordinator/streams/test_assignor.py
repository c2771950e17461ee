"""The sticky task assignor of streams groups: scenarios, then its properties over generated
groups (every active task once, no standby beside its active, balance within one, stickiness
and determinism), then the warm-up refinement."""
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from roster.coordinator.streams.assignor import MemberSpec, SubtopologySpec, assign, \
    refine_with_warmups
from roster.coordinator.streams.model import TaskSets, task_ids

STATEFUL = [SubtopologySpec("0", 6, True)]


def actives(plan) -> dict[str, list]:
    return {m: list(task_ids(t.active)) for m, t in plan.items()}


def test_one_member_gets_every_task():
    plan = assign({"a": MemberSpec("p1")}, [SubtopologySpec("0", 3, True),
                                            SubtopologySpec("1", 2, False)])
    assert actives(plan) == {"a": [("0", 0), ("0", 1), ("0", 2), ("1", 0), ("1", 1)]}
    assert plan["a"].standby == {} and plan["a"].warmup == {}


def test_a_new_group_is_spread_range_wise():
    plan = assign({"a": MemberSpec("p1"), "b": MemberSpec("p2"), "c": MemberSpec("p3")},
                  STATEFUL)
    assert actives(plan) == {"a": [("0", 0), ("0", 3)], "b": [("0", 1), ("0", 4)],
                             "c": [("0", 2), ("0", 5)]}


def test_a_joining_member_takes_only_what_balance_needs():
    first = assign({"a": MemberSpec("p1"), "b": MemberSpec("p2")}, STATEFUL)
    members = {m: MemberSpec(f"p{i}", first[m]) for i, m in enumerate(("a", "b"), 1)}
    members["c"] = MemberSpec("p3")
    second = assign(members, STATEFUL)
    moved = sum(1 for m in ("a", "b") for t in task_ids(first[m].active)
                if t not in set(task_ids(second[m].active)))
    assert moved == 2 and len(list(task_ids(second["c"].active))) == 2


def test_a_task_goes_back_to_where_its_state_is():
    # after a restart the member has a new id and no assignment, but reports offsets for the
    # state on its disk: the task goes back to it rather than to the least loaded
    members = {"a": MemberSpec("p1", task_offsets={("0", 5): 100, ("0", 4): 100,
                                                   ("0", 3): 100}),
               "b": MemberSpec("p2")}
    plan = assign(members, STATEFUL)
    assert set(task_ids(plan["a"].active)) == {("0", 3), ("0", 4), ("0", 5)}


def test_the_most_caught_up_standby_takes_over_a_lost_active():
    current = {"b": TaskSets(standby={"0": frozenset({0})}),
               "c": TaskSets(standby={"0": frozenset({0})})}
    members = {"b": MemberSpec("p2", current["b"], {("0", 0): 10}),
               "c": MemberSpec("p3", current["c"], {("0", 0): 90})}
    plan = assign(members, [SubtopologySpec("0", 1, True)], num_standby_replicas=1)
    assert plan["c"].active == {"0": frozenset({0})}
    assert plan["b"].standby == {"0": frozenset({0})}


def test_standbys_never_share_a_process_with_their_active():
    members = {"a1": MemberSpec("p1"), "a2": MemberSpec("p1"), "b1": MemberSpec("p2")}
    plan = assign(members, [SubtopologySpec("0", 4, True)], num_standby_replicas=1)
    for task in [("0", p) for p in range(4)]:
        holders = [m for m, t in plan.items() if t.holds(task)]
        assert len(holders) == 2
        assert len({members[m].process_id for m in holders}) == 2


def test_too_few_processes_for_the_standbys_asked_for():
    plan = assign({"a": MemberSpec("p1"), "b": MemberSpec("p2")},
                  [SubtopologySpec("0", 2, True)], num_standby_replicas=3)
    for task in [("0", 0), ("0", 1)]:
        assert sum(1 for t in plan.values() if t.holds(task)) == 2   # one active, one standby


def test_stateless_tasks_get_no_standbys():
    plan = assign({"a": MemberSpec("p1"), "b": MemberSpec("p2")},
                  [SubtopologySpec("0", 2, False)], num_standby_replicas=1)
    assert all(t.standby == {} for t in plan.values())


def test_no_members_no_assignment():
    assert assign({}, STATEFUL) == {}


# -- properties ------------------------------------------------------------------------------

@st.composite
def groups(draw):
    n_processes = draw(st.integers(1, 5))
    members = {}
    for p in range(n_processes):
        for t in range(draw(st.integers(1, 3))):
            members[f"m{p}-{t}"] = f"p{p}"
    subtopologies = [SubtopologySpec(str(i), draw(st.integers(0, 12)), draw(st.booleans()))
                     for i in range(draw(st.integers(1, 4)))]
    standbys = draw(st.integers(0, 2))
    return members, subtopologies, standbys


def specs(processes: dict[str, str], current=None) -> dict[str, MemberSpec]:
    current = current or {}
    return {m: MemberSpec(p, current.get(m, TaskSets())) for m, p in processes.items()}


def all_tasks(subtopologies, stateful_only=False):
    return {(s.subtopology_id, p) for s in subtopologies for p in range(s.partitions)
            if s.stateful or not stateful_only}


@settings(max_examples=200, deadline=None)
@given(groups())
def test_every_active_task_is_assigned_exactly_once(group):
    processes, subtopologies, standbys = group
    plan = assign(specs(processes), subtopologies, standbys)
    assert set(plan) == set(processes)
    owners = Counter(t for sets in plan.values() for t in task_ids(sets.active))
    assert set(owners) == all_tasks(subtopologies) and set(owners.values()) <= {1}


@settings(max_examples=200, deadline=None)
@given(groups())
def test_a_process_holds_a_task_at_most_once(group):
    processes, subtopologies, standbys = group
    plan = assign(specs(processes), subtopologies, standbys)
    held = Counter((processes[m], t) for m, sets in plan.items()
                   for role in (sets.active, sets.standby) for t in task_ids(role))
    assert set(held.values()) <= {1}
    distinct = len(set(processes.values()))
    for task in all_tasks(subtopologies, stateful_only=True):
        standby_count = sum(1 for sets in plan.values() if task in set(task_ids(sets.standby)))
        assert standby_count == min(standbys, distinct - 1)


@settings(max_examples=200, deadline=None)
@given(groups())
def test_active_tasks_are_balanced_within_one(group):
    processes, subtopologies, standbys = group
    plan = assign(specs(processes), subtopologies, standbys)
    counts = [len(list(task_ids(sets.active))) for sets in plan.values()]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=200, deadline=None)
@given(groups())
def test_no_active_task_moves_when_nothing_changed(group):
    processes, subtopologies, standbys = group
    first = assign(specs(processes), subtopologies, standbys)
    again = assign(specs(processes, first), subtopologies, standbys)
    assert actives(again) == actives(first)
    assert assign(specs(processes), subtopologies, standbys) == first   # deterministic


@settings(max_examples=200, deadline=None)
@given(groups())
def test_nothing_moves_when_nothing_changed_one_member_a_process(group):
    processes, subtopologies, standbys = group
    processes = {m: m for m in processes}
    first = assign(specs(processes), subtopologies, standbys)
    assert assign(specs(processes, first), subtopologies, standbys) == first


@settings(max_examples=100, deadline=None)
@given(groups(), st.data())
def test_a_leaving_member_moves_only_its_own_active_tasks(group, data):
    processes, subtopologies, standbys = group
    if len(processes) < 2:
        return
    first = assign(specs(processes), subtopologies, standbys)
    gone = data.draw(st.sampled_from(sorted(processes)))
    rest = {m: p for m, p in processes.items() if m != gone}
    second = assign(specs(rest, first), subtopologies, standbys)
    # what a remaining member held it keeps, unless balance now asks it to give tasks up: a
    # member's quota only grows when one leaves
    for m in rest:
        assert set(task_ids(first[m].active)) <= set(task_ids(second[m].active))


# -- warm-ups --------------------------------------------------------------------------------

def test_no_warmups_hands_the_target_through():
    target = {"a": TaskSets({"0": frozenset({0})}), "b": TaskSets({"0": frozenset({1})})}
    current = {"a": TaskSets({"0": frozenset({0, 1})}), "b": TaskSets()}
    assert refine_with_warmups(current, {"a": "p1", "b": "p2"}, target, {"0"}, {}, 0,
                               10_000) == target


def test_a_stateful_task_waits_for_its_new_owner_to_warm_up():
    current = {"a": TaskSets({"0": frozenset({0, 1, 2, 3})}), "b": TaskSets()}
    target = {"a": TaskSets({"0": frozenset({0, 1})}), "b": TaskSets({"0": frozenset({2, 3})})}
    processes = {"a": "p1", "b": "p2"}
    refined = refine_with_warmups(current, processes, target, {"0"}, {}, 1, 10_000)
    # one warm-up allowed: task 2 warms up on b; both stay active on a until caught up
    assert refined["a"].active == {"0": frozenset({0, 1, 2, 3})}
    assert refined["b"] == TaskSets({}, {}, {"0": frozenset({2})})
    # b caught up on task 2 (lag within the acceptable recovery lag): 2 moves, 3 warms up
    lags = {("p2", ("0", 2)): 5_000}
    refined = refine_with_warmups(current, processes, target, {"0"}, lags, 1, 10_000)
    assert refined["a"].active == {"0": frozenset({0, 1, 3})}
    assert refined["b"] == TaskSets({"0": frozenset({2})}, {}, {"0": frozenset({3})})


def test_stateless_tasks_and_tasks_without_an_owner_move_at_once():
    current = {"a": TaskSets({"s": frozenset({0})}), "b": TaskSets()}
    target = {"a": TaskSets(), "b": TaskSets({"s": frozenset({0}), "0": frozenset({0})})}
    refined = refine_with_warmups(current, {"a": "p1", "b": "p2"}, target, {"0"}, {}, 2, 0)
    assert refined == target
