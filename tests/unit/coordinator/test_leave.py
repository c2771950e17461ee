"""LeaveGroup: members leaving by id, static members removed by instance id (the
v3+ batch semantics of KIP-345), pending ids."""
from roster.coordinator.messages import JoinReply, LeaveMemberResult, LeaveReply
from roster.coordinator.classic.states import GroupState
from roster.coordinator.classic.timers import join_key
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import GroupKey, GroupValue, Record
from tests.unit.coordinator.harness import Harness

S = GroupState
E = ErrorCode


def outcome(member_id, instance, error=E.none):
    return LeaveMemberResult(member_id, instance, error)


def test_leave_group_unknown_group():
    """Every identity leaving a missing group gets UNKNOWN_MEMBER_ID; nothing is created."""
    h = Harness()
    assert h.leave(("m-1", None), ("", "i-a")) == LeaveReply(members=(
        outcome("m-1", None, E.unknown_member_id), outcome("", "i-a", E.unknown_member_id)))
    assert h.coordinator.groups == {}


def test_leave_group_invalid_group_id():
    """An empty group id is INVALID_GROUP_ID at the top level."""
    h = Harness()
    assert h.leave(("m-1", None), group="") == LeaveReply(error=E.invalid_group_id)


def test_leave_group_dead_group():
    """A Dead group answers COORDINATOR_NOT_AVAILABLE at the top level."""
    h = Harness()
    [member] = h.stable_group(None)
    h.group().transition_to(S.DEAD, h.now)
    assert h.leave((member, None)) == LeaveReply(error=E.coordinator_not_available)


def test_leave_group_unknown_consumer_existing_group():
    """An unknown member id is UNKNOWN_MEMBER_ID and changes nothing."""
    h = Harness()
    h.stable_group(None)
    assert h.leave(("unknown", None)) == LeaveReply(members=(
        outcome("unknown", None, E.unknown_member_id),))
    assert h.group().state is S.STABLE


def test_leave_group_dynamic_member_rebalances_and_cancels_its_session():
    """A dynamic member leaving a Stable group: its timer is cancelled and the group
    rebalances without it."""
    h = Harness()
    leader, follower = h.stable_group(None, None)
    assert h.leave((leader, None)) == LeaveReply(members=(outcome(leader, None),))
    group = h.group()
    assert list(group.members) == [follower] and group.leader_id == follower
    assert group.state is S.PREPARING_REBALANCE
    assert h.session_deadline(leader) is None


def test_leave_group_static_member_with_unknown_member_id():
    """Member id "" with a known instance id removes that static member (the admin path)."""
    h = Harness()
    token = h.join(instance="i-a")
    h.advance(0)
    member = h.reply(token).member_id
    assert h.leave(("", "i-a")) == LeaveReply(members=(outcome("", "i-a"),))
    group = h.group()
    # the last member left during CompletingRebalance: the group empties at once
    assert group.members == {} and group.static_members == {} and group.state is S.EMPTY
    assert group.generation == 2 and h.session_deadline(member) is None
    assert h.records[-1] == Record(GroupKey("g"), GroupValue("consumer", 2, None, None, 0, ()))


def test_static_members_valid_batch_leave_group():
    """A batch naming two known instance ids removes both."""
    h = Harness()
    h.stable_group("i-leader", "i-follower")
    assert h.leave(("", "i-leader"), ("", "i-follower")) == LeaveReply(members=(
        outcome("", "i-leader"), outcome("", "i-follower")))
    assert h.group().members == {} and h.group().state is S.EMPTY


def test_static_members_fenced_instance_batch_leave_group():
    """In a batch, an instance id paired with another member id is FENCED_INSTANCE_ID; the
    valid identities are still removed."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    assert h.leave(("", "i-leader"), ("invalid-member-id", "i-follower")) == LeaveReply(
        members=(outcome("", "i-leader"),
                 outcome("invalid-member-id", "i-follower", E.fenced_instance_id)))
    group = h.group()
    assert list(group.members) == [follower] and group.state is S.PREPARING_REBALANCE


def test_static_members_unknown_instance_batch_leave_group():
    """In a batch, an unknown instance id is UNKNOWN_MEMBER_ID; the known one is removed."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    records_before = len(h.records)
    assert h.leave(("", "unknown-instance"), ("", "i-follower")) == LeaveReply(members=(
        outcome("", "unknown-instance", E.unknown_member_id), outcome("", "i-follower")))
    assert list(h.group().members) == [leader] and len(h.records) == records_before


def test_leave_group_with_neither_member_id_nor_instance_id():
    """An identity with member id "" and no instance id is UNKNOWN_MEMBER_ID."""
    h = Harness()
    h.stable_group(None)
    assert h.leave(("", None)) == LeaveReply(members=(outcome("", None, E.unknown_member_id),))
    assert h.group().state is S.STABLE


def test_pending_members_leave_group():
    """A pending id may leave; the join phase then completes for the members that rejoined."""
    h = Harness()
    leader, follower, pending, leader_join, _ = h.group_with_pending_member()
    records_before = len(h.records)
    assert h.leave((pending, None)) == LeaveReply(members=(outcome(pending, None),))
    group = h.group()
    assert group.state is S.COMPLETING_REBALANCE and list(group.members) == [leader, follower]
    assert group.pending_members.keys() == set() and len(h.records) == records_before
    assert h.session_deadline(pending) is None
    assert h.reply(leader_join).generation == 2


def test_leave_group_answers_the_leavers_parked_join_with_unknown_member_id():
    """A member removed while its JoinGroup is parked gets UNKNOWN_MEMBER_ID; the others'
    join phase completes without it."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    leader_join = h.join(member_id=leader, instance="i-leader")
    assert h.leave(("", "i-leader")) == LeaveReply(members=(outcome("", "i-leader"),))
    assert h.reply(leader_join) == JoinReply(error=E.unknown_member_id)
    assert list(h.group().members) == [follower] and h.group().state is S.PREPARING_REBALANCE
    rejoin = h.join(member_id=follower, instance="i-follower")
    assert h.reply(rejoin).generation == 2 and h.reply(rejoin).leader == follower


def test_leave_during_initial_rebalance_waits_for_the_delay():
    """LeaveGroup does not complete an initial rebalance early (only its timer does)."""
    h = Harness(initial_rebalance_delay_ms=3000)
    ta, tb = h.join(instance="i-a"), h.join(instance="i-b")
    assert h.leave(("", "i-b")) == LeaveReply(members=(outcome("", "i-b"),))
    assert h.group().all_joined() and not h.answered(ta)
    assert h.deadline(join_key("g")) == 3000
    h.advance(3000)  # i-b joined during the delay (and left): the delay is extended once
    assert not h.answered(ta) and h.deadline(join_key("g")) == 6000
    h.advance(3000)
    assert h.reply(ta).generation == 1 and h.reply(tb) == JoinReply(error=E.unknown_member_id)
