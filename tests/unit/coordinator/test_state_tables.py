"""Every cell of the (state x API) answer tables in states.py, driven through the harness.

Each API has a driver that puts a group in a state, sends the request from a caller that is
valid there (a member of the current generation, where the state has one) and reports which
cell the coordinator acted on: the error it answered, or the Action its effects show. Three
checks per cell:

- what the coordinator does is what the cell says (so the tables, and docs/groups.md generated
  from them, describe the behaviour);
- changing the cell to another error changes the answer (so the handler consults the table);
- a Refuse cell answers any caller the same, however wrong its member id and generation.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from roster.coordinator.classic import states
from roster.coordinator.classic.group import Group
from roster.coordinator.classic.states import (
    ANSWER_TABLES,
    Action,
    GroupState,
    IllegalTransition,
    Refuse,
)
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.harness import Harness

S = GroupState
E = ErrorCode
CHANGED = (("range", b"changed-meta"),)


@dataclass
class Setup:
    h: Harness
    leader: str
    follower: str   # the caller, where the group has more than one member
    generation: int


# (api, state, original cell, changed cell): the changed cell goes into the table only once a
# driver's group is set up (setting it up must not meet it); test_the_handler_consults_the_cell
# fills this.
_CHANGE: list = []


def in_state(state: GroupState, protocol_type: str = "consumer", static: bool = False,
             forced: bool = False) -> Setup:
    """Group "g" in `state`, with an offset for ("t", 0) where the state allows one; its
    members are static (instance ids "i-leader" and "i-follower") when `static`. An Empty
    group has no members; with `forced` it holds one, "m", put in directly (as Kafka's own
    tests do): the only way to reach the cells a member is asked about only once it is found,
    which in production it never is in an Empty group."""
    for api, changed_state, original, _ in _CHANGE:
        ANSWER_TABLES[api][changed_state] = original
    setup = _in_state(state, protocol_type, static, forced)
    for api, changed_state, _, changed in _CHANGE:
        ANSWER_TABLES[api][changed_state] = changed
    return setup


def _in_state(state: GroupState, protocol_type: str, static: bool, forced: bool) -> Setup:
    h = Harness()
    instances = ("i-leader", "i-follower") if static else (None, None)
    if state is S.EMPTY:
        h.commit({("t", 0): 1})   # a simple group: Empty, with an offset
        if forced:
            h.add_member("m", instance=instances[1])
        return Setup(h, "m", "m", 0)
    if state is S.DEAD:
        h.commit({("t", 0): 1})
        h.hold_next_write = True
        assert h.delete("g") is None   # Dead while its tombstones are written
        return Setup(h, "m", "m", 0)
    if state is S.COMPLETING_REBALANCE:
        tokens = [h.join(instance=i, protocol_type=protocol_type) if static else
                  h.join_dynamic(protocol_type=protocol_type) for i in instances]
        h.advance(0)
        leader, follower = (h.reply(t).member_id for t in tokens)
    else:
        leader, follower = h.stable_group(*instances, protocol_type=protocol_type)
        if state is S.PREPARING_REBALANCE:   # a third member joins: a rebalance starts
            if static:
                h.join(instance="i-third", protocol_type=protocol_type)
            else:
                h.join_dynamic(protocol_type=protocol_type)
    assert h.group().state is state and h.group().leader_id == leader
    return Setup(h, leader, follower, 1)


# -- one driver per table: the cell the coordinator acted on --------------------------------

def heartbeat(state: GroupState, caller=None):
    s = in_state(state, forced=True)
    member_id, generation = caller or (s.follower, s.generation)
    return s.h.heartbeat(member_id, generation)


def sync_group(state: GroupState, caller=None):
    s = in_state(state)
    member_id, generation = caller or (s.follower, s.generation)
    token = s.h.sync(member_id, generation)
    group = s.h.group()
    if not s.h.answered(token):
        assert group.is_syncing(group.members[member_id])
        return Action.PARK_SYNC
    reply = s.h.reply(token)
    if reply.error is E.none:
        assert reply.assignment == f"assignment-of-{member_id}".encode()
        return Action.GIVE_STORED_ASSIGNMENT
    return reply.error


def offset_commit(state: GroupState, caller=None):
    """From a member of the current generation; to an Empty group (which has none) the
    generation -1 commit of an admin tool or assign() user."""
    s = in_state(state)
    member_id, generation = caller or (("", -1) if state is S.EMPTY else
                                       (s.follower, s.generation))
    reply = s.h.commit({("t", 1): 5}, member_id=member_id, generation=generation)
    [(_, _, error)] = reply.errors
    return error


def join_group_known_member(state: GroupState, caller=None):
    """Three rejoins, each from a fresh group: the follower unchanged, the follower with
    changed protocols, the leader unchanged. Each is answered at once, or parked in a join
    phase (the one under way, or a rebalance it started)."""
    if caller is not None:
        s = in_state(state)
        return s.h.reply(s.h.join(member_id=caller[0])).error
    outcomes = []
    for who, protocols in (("follower", None), ("follower", CHANGED), ("leader", None)):
        s = in_state(state, forced=True)
        member_id = getattr(s, who)
        kwargs = {"protocols": protocols} if protocols else {}
        token = s.h.join(member_id=member_id, **kwargs)
        group = s.h.group()
        if not s.h.answered(token):
            assert group.state is S.PREPARING_REBALANCE
            assert group.is_joining(group.members[member_id])
            outcomes.append("parked")
            continue
        reply = s.h.reply(token)
        if reply.error is not E.none:
            return reply.error
        assert (reply.generation, group.state) == (s.generation, state)
        outcomes.append("answered")
    return {
        ("parked", "parked", "parked"): Action.UPDATE_AND_WAIT,
        ("answered", "parked", "answered"): Action.ANSWER_OR_REBALANCE_IF_CHANGED,
        ("answered", "parked", "parked"): Action.REBALANCE_FOR_LEADER_OR_CHANGE,
    }[tuple(outcomes)]


def join_group_new_member(state: GroupState, caller=None):
    """The follower's instance rejoins with no member id (a static member restarting); where
    that cannot be (an Empty group maps no instance ids), a new static member joins."""
    s = in_state(state, static=True, forced=True)
    group = s.h.group()
    instance = "i-nobody" if caller is not None else "i-follower"
    try:
        token = s.h.join(instance=instance)
    except IllegalTransition:
        assert state is S.EMPTY and caller is None
        s.h.join(instance="i-new")
        assert group.state is S.PREPARING_REBALANCE and "i-new" in group.static_members
        return Action.ADD_FIRST_MEMBER
    if s.h.answered(token) and s.h.reply(token).error is not E.none:
        return s.h.reply(token).error
    assert group.static_members["i-follower"] not in (s.follower, None)   # a new id
    if s.h.answered(token):
        assert (s.h.reply(token).generation, group.state) == (s.generation, S.STABLE)
        return Action.ADD_OR_REPLACE_KEEPING_GENERATION
    assert group.state is S.PREPARING_REBALANCE
    return {S.PREPARING_REBALANCE: Action.ADD_OR_REPLACE_AND_WAIT,
            S.COMPLETING_REBALANCE: Action.ADD_OR_REPLACE_AND_REBALANCE}[state]


def leave_group(state: GroupState, caller=None):
    """The follower leaves; in a join phase the leader has rejoined first (the newcomer that
    started it waits already), so the phase can complete without the follower. An Empty group
    has no members: a pending member id (KIP-394) leaves it."""
    s = in_state(state)
    if state is S.PREPARING_REBALANCE:
        s.h.join(member_id=s.leader)
    if state is S.EMPTY and caller is None:
        s.follower = s.h.reply(s.h.join()).member_id
        assert s.follower in s.h.group().pending_members
    member_id = caller[0] if caller else s.follower
    reply = s.h.leave((member_id, None))
    if reply.error is not E.none:
        return reply.error
    assert [m.error for m in reply.members] == [E.none]
    group = s.h.group()
    assert member_id not in group.members
    return {S.EMPTY: Action.REMOVE_MEMBERS,
            S.COMPLETING_REBALANCE: Action.REMOVE_AND_COMPLETE_JOIN,
            S.PREPARING_REBALANCE: Action.REMOVE_AND_REBALANCE}[group.state]


def delete_groups(state: GroupState, caller=None):
    s = in_state(state)
    outcome = s.h.delete("g")
    if outcome == {"g": E.none}:
        assert s.h.group() is None and s.h.records[-1].value is None
        return Action.DELETE_GROUP
    return outcome["g"]


def offset_delete(state: GroupState, caller=None):
    """A consumer group's members subscribe (as far as anyone can tell: the harness's
    subscriptions are not decodable, so every topic counts) to "t"; a group of another
    protocol type is asked too."""
    s = in_state(state)
    reply = s.h.delete_offsets([("t", 0)])
    if reply.error is not E.none:
        return reply.error
    if reply.partitions == (("t", 0, E.none),):
        assert ("t", 0) not in s.h.offsets()
        return Action.DELETE_OFFSETS
    assert reply.partitions == (("t", 0, E.group_subscribed_to_topic),)
    other = in_state(state, protocol_type="connect").h.delete_offsets([("t", 0)])
    assert other.error is E.non_empty_group
    return Action.KEEP_SUBSCRIBED_OFFSETS


DRIVERS = {
    "Heartbeat": heartbeat,
    "SyncGroup": sync_group,
    "OffsetCommit": offset_commit,
    "JoinGroup (known member id)": join_group_known_member,
    "JoinGroup (no member id)": join_group_new_member,
    "LeaveGroup": leave_group,
    "DeleteGroups": delete_groups,
    "OffsetDelete": offset_delete,
}
CELLS = [(api, state) for api in ANSWER_TABLES for state in GroupState]


def test_every_table_has_a_driver():
    assert DRIVERS.keys() == ANSWER_TABLES.keys()


def _as_acted(cell):
    return cell.error if isinstance(cell, Refuse) else cell


@pytest.mark.parametrize("api, state", CELLS, ids=[f"{a}-{s.value}" for a, s in CELLS])
def test_the_coordinator_does_what_the_cell_says(api, state):
    assert DRIVERS[api](state) == _as_acted(ANSWER_TABLES[api][state])


@pytest.mark.parametrize("api, state", CELLS, ids=[f"{a}-{s.value}" for a, s in CELLS])
def test_the_handler_consults_the_cell(api, state, monkeypatch):
    """Make the cell answer UNKNOWN_SERVER_ERROR (to anyone, if it was a Refuse): the handler
    answers that, so the decision is the table's, not a copy of it in the code."""
    cell = ANSWER_TABLES[api][state]
    changed = Refuse(E.unknown_server_error) if isinstance(cell, Refuse) else \
        E.unknown_server_error
    monkeypatch.setitem(ANSWER_TABLES[api], state, cell)   # put back afterwards
    monkeypatch.setattr(f"{__name__}._CHANGE", [(api, state, cell, changed)])
    assert DRIVERS[api](state) is E.unknown_server_error


REFUSALS = [(api, state) for api, state in CELLS
            if isinstance(ANSWER_TABLES[api][state], Refuse)]


@pytest.mark.parametrize("api, state", REFUSALS, ids=[f"{a}-{s.value}" for a, s in REFUSALS])
def test_a_refusal_is_answered_to_anyone(api, state):
    assert DRIVERS[api](state, caller=("nobody-1", 99)) is ANSWER_TABLES[api][state].error


def test_the_only_undo_is_a_failed_deletion():
    """Dead goes back to Empty when a deletion's tombstones were not written (keeping the
    timestamp of the step undone); no other state change can be undone."""
    for current in GroupState:
        for target in GroupState:
            group = Group("g", state=current, state_timestamp=5)
            if (current, target) == (S.DEAD, S.EMPTY):
                group.transition_to(target, 42, undo=True)
                assert (group.state, group.previous_state, group.state_timestamp) == \
                    (S.EMPTY, S.DEAD, 5)
            else:
                with pytest.raises(IllegalTransition):
                    group.transition_to(target, 42, undo=True)
    assert states.UNDOABLE == {S.DEAD: {S.EMPTY}}
