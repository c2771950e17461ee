"""The coordinator's timers: the initial rebalance delay, the join-phase
deadline, new-member and session expiry, pending ids, and pending-sync expiry, as Kafka's
classic group coordinator schedules them."""
from roster.coordinator.messages import JoinMember, JoinReply, SyncReply
from roster.coordinator.classic.states import GroupState
from roster.coordinator.classic.timers import (
    JoinDeadline,
    SyncDeadline,
    heartbeat_key,
    join_key,
    sync_key,
)
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import GroupKey, GroupValue, Record
from tests.unit.coordinator.harness import Harness

S = GroupState
E = ErrorCode


# -- the initial rebalance delay -------------------------------------------------------------------

def test_delay_initial_rebalance_by_group_initial_rebalance_delay_on_empty_group():
    """The first join phase of an Empty group lasts group.initial.rebalance.delay.ms."""
    h = Harness(initial_rebalance_delay_ms=3000)
    token = h.join_dynamic()
    assert h.timers[join_key("g")] == (3000, JoinDeadline("g", 3000, 27_000))
    h.advance(1500)
    assert not h.answered(token)
    h.advance(1499)
    assert not h.answered(token)
    h.advance(1)
    assert h.reply(token).error is E.none and h.reply(token).generation == 1


def test_reset_rebalance_delay_when_new_member_joins_group_during_initial_rebalance():
    """A member arriving during the delay extends it by one more delay."""
    h = Harness(initial_rebalance_delay_ms=3000)
    first = h.join_dynamic(rebalance_ms=9000)
    assert h.timers[join_key("g")] == (3000, JoinDeadline("g", 3000, 6000))
    h.advance(2999)
    second = h.join_dynamic(rebalance_ms=9000)
    h.advance(1)
    assert h.timers[join_key("g")] == (6000, JoinDeadline("g", 3000, 3000))
    h.advance(2999)
    assert not h.answered(first, second)
    h.advance(1)
    assert h.reply(first).generation == h.reply(second).generation == 1
    assert len(h.reply(first).members) == 2


def test_delay_rebalance_upto_rebalance_timeout():
    """Extensions stop at the rebalance timeout however many members keep arriving."""
    h = Harness(initial_rebalance_delay_ms=3000)
    first = h.join_dynamic(rebalance_ms=6000)
    second = h.join_dynamic(rebalance_ms=6000)
    h.advance(3001)
    assert h.timers[join_key("g")] == (6000, JoinDeadline("g", 3000, 0))
    third = h.join_dynamic(rebalance_ms=6000)
    h.advance(2998)
    assert not h.answered(first) and not h.answered(second) and not h.answered(third)
    h.advance(1)
    assert [h.reply(t).generation for t in (first, second, third)] == [1, 1, 1]


def test_initial_rebalance_waits_for_its_delay_even_when_everyone_has_joined():
    """JoinGroup never completes an initial rebalance early: only the delay timer does."""
    h = Harness(initial_rebalance_delay_ms=3000)
    token = h.join(instance="i-a")
    assert h.group().all_joined() and not h.answered(token)
    h.advance(3000)
    assert h.answered(token)


# -- the new-member join timeout -------------------------------------------------------------------

def test_new_member_join_expiration():
    """A new member stuck in a long rebalance is dropped after 5 minutes with UNKNOWN_MEMBER_ID."""
    h = Harness()
    first = h.join_dynamic(session_ms=305_000, rebalance_ms=600_000)
    h.advance(0)
    leader = h.reply(first).member_id
    assert not h.group().new_members
    second = h.join_dynamic(session_ms=6000, rebalance_ms=6000)
    group = h.group()
    [newcomer] = [m for m in group.members.values() if group.is_new(m)]
    assert h.session_deadline(newcomer.member_id) == 300_000
    assert h.deadline(join_key("g")) == 600_000
    h.advance(299_999)
    assert not h.answered(second)
    h.advance(1)
    assert h.reply(second) == JoinReply(error=E.unknown_member_id)
    assert list(group.members) == [leader] and group.state is S.PREPARING_REBALANCE
    assert not group.new_members


# -- completing the join phase ---------------------------------------------------------------------

def test_complete_join_remove_not_yet_rejoined_dynamic_members():
    """At the join deadline, dynamic members that did not rejoin are removed and their
    session timers cancelled; a joined member is elected leader."""
    h = Harness()
    [leader] = h.stable_group(None, rebalance_ms=6000)
    newcomer = h.join_dynamic(rebalance_ms=6000)
    assert h.deadline(join_key("g")) == 6000
    h.advance(6000)
    reply = h.reply(newcomer)
    assert reply == JoinReply(generation=2, protocol_type="consumer", protocol_name="range",
                              leader=reply.member_id, member_id=reply.member_id,
                              members=(JoinMember(reply.member_id, None, b"range-meta"),))
    assert list(h.group().members) == [reply.member_id]
    assert h.session_deadline(leader) is None


def test_complete_join_phase_no_members_rejoined_extends_join_phase():
    """If nobody rejoined by the deadline, the join phase waits another rebalance timeout."""
    h = Harness()
    first, second = h.stable_group("i-1", "i-2", session_ms=30_000, rebalance_ms=10_000)
    h.force_rebalance()
    group = h.group()
    assert group.state is S.PREPARING_REBALANCE and group.awaiting_join_count() == 0
    assert h.deadline(join_key("g")) == 10_000
    h.advance(10_000)
    assert h.deadline(join_key("g")) == 20_000
    h.advance(10_000)
    assert h.deadline(join_key("g")) == 30_000
    assert group.state is S.PREPARING_REBALANCE and group.generation == 1
    assert list(group.members) == [first, second]
    t1 = h.join(member_id=first, instance="i-1", session_ms=30_000, rebalance_ms=10_000)
    assert not h.answered(t1)
    t2 = h.join(member_id=second, instance="i-2", session_ms=30_000, rebalance_ms=10_000)
    assert h.reply(t1).generation == h.reply(t2).generation == 2
    assert group.state is S.COMPLETING_REBALANCE and h.deadline(join_key("g")) is None


def test_join_phase_completes_at_once_when_the_last_member_rejoins():
    """A non-initial rebalance completes as soon as everyone has rejoined, cancelling its
    deadline, and re-arms every session and the pending-sync timer."""
    h = Harness()
    a, b = h.stable_group(None, None)
    h.advance(1000)
    ta = h.join(member_id=a)
    assert h.deadline(join_key("g")) == 31_000
    tb = h.join(member_id=b)
    assert h.answered(ta, tb) and h.deadline(join_key("g")) is None
    assert h.timers[sync_key("g")] == (31_000, SyncDeadline("g", 2))
    assert h.session_deadline(a) == h.session_deadline(b) == 11_000
    assert h.group().pending_sync.keys() == {a, b}


# -- pending (KIP-394) ids -------------------------------------------------------------------------

def test_join_group_completion_when_pending_member_times_out():
    """A pending id that never comes back no longer holds up the join phase once it expires."""
    h = Harness()
    leader, follower, pending, leader_join, follower_join = h.group_with_pending_member()
    assert h.session_deadline(pending) == 6000
    h.advance(5999)
    assert not h.answered(leader_join)
    h.advance(1)
    group = h.group()
    assert group.state is S.COMPLETING_REBALANCE and group.pending_members.keys() == set()
    assert list(group.members) == [leader, follower]
    assert h.reply(follower_join).generation == 2


def test_heartbeat_expiration_should_remove_pending_member():
    """A pending id is forgotten after its session timeout."""
    h = Harness()
    pending = h.reply(h.join(session_ms=6000)).member_id
    assert h.group().pending_members.keys() == {pending}
    h.advance(6000)
    assert h.group().pending_members.keys() == set() and h.group().state is S.EMPTY
    assert h.reply(h.join(member_id=pending)) == \
        JoinReply(error=E.unknown_member_id, member_id=pending)


def test_pending_member_expiry_completes_an_initial_rebalance_once_everyone_joined():
    """As in Kafka's new coordinator, a pending id expiring completes the join phase when all
    members have joined, even during the initial delay (JoinGroup and LeaveGroup do not)."""
    h = Harness(initial_rebalance_delay_ms=20_000)
    member = h.join_dynamic()
    pending = h.reply(h.join(session_ms=6000)).member_id
    h.advance(6000)
    assert h.reply(member).generation == 1 and h.group().state is S.COMPLETING_REBALANCE
    assert h.deadline(join_key("g")) is None and pending not in h.group().pending_members


# -- pending-sync expiry (KAFKA-12890) -------------------------------------------------------------

def _three_completing(h):
    tokens = [h.join_dynamic(session_ms=6000, rebalance_ms=6000) for _ in range(3)]
    h.advance(0)
    return [h.reply(t).member_id for t in tokens]


def test_rebalance_times_out_when_sync_request_is_not_received():
    """Nobody syncs: at the rebalance timeout everyone is removed and the group empties, with
    an empty group record."""
    h = Harness()
    members = _three_completing(h)
    assert h.timers[sync_key("g")] == (6000, SyncDeadline("g", 1))
    h.advance(3000)
    assert [h.heartbeat(m, 1) for m in members] == [E.none] * 3
    h.advance(3000)
    group = h.group()
    assert group.state is S.EMPTY and group.generation == 2 and group.members == {}
    assert h.records[-1] == Record(GroupKey("g"), GroupValue("consumer", 2, None, None, 6000, ()))
    assert [h.heartbeat(m, 1) for m in members] == [E.unknown_member_id] * 3
    assert all(h.session_deadline(m) is None for m in members)


def test_rebalance_times_out_when_sync_request_is_not_received_from_followers():
    """Only the leader syncs: the followers are removed and the group rebalances."""
    h = Harness()
    leader, *followers = _three_completing(h)
    h.advance(3000)
    assert [h.heartbeat(m, 1) for m in (leader, *followers)] == [E.none] * 3
    assert h.reply(h.sync(leader, 1)).error is E.none and h.group().state is S.STABLE
    assert h.heartbeat(leader, 1) is E.none
    h.advance(3000)
    assert h.heartbeat(leader, 1) is E.rebalance_in_progress
    assert [h.heartbeat(m, 1) for m in followers] == [E.unknown_member_id] * 2
    assert h.group().state is S.PREPARING_REBALANCE and list(h.group().members) == [leader]


def test_rebalance_times_out_when_sync_request_is_not_received_from_leaders():
    """The leader never syncs: it is removed and the parked followers are told to rejoin."""
    h = Harness()
    leader, *followers = _three_completing(h)
    h.advance(3000)
    parked = [h.sync(m, 1) for m in followers]
    assert not any(h.answered(t) for t in parked)
    h.advance(3000)
    assert [h.reply(t) for t in parked] == [SyncReply(error=E.rebalance_in_progress)] * 2
    assert h.heartbeat(leader, 1) is E.unknown_member_id
    assert [h.heartbeat(m, 1) for m in followers] == [E.rebalance_in_progress] * 2
    assert h.group().state is S.PREPARING_REBALANCE and h.group().leader_id == followers[0]


def test_rebalance_does_not_time_out_when_all_sync_are_received():
    """Once everyone has synced, the pending-sync timer is cancelled and nobody is removed."""
    h = Harness()
    members = _three_completing(h)
    h.advance(3000)
    assert [h.heartbeat(m, 1) for m in members] == [E.none] * 3
    replies = [h.reply(h.sync(m, 1)) for m in members]
    assert [r.error for r in replies] == [E.none] * 3
    assert h.deadline(sync_key("g")) is None
    h.advance(3000)
    assert [h.heartbeat(m, 1) for m in members] == [E.none] * 3
    h.advance(3000)
    assert [h.heartbeat(m, 1) for m in members] == [E.none] * 3
    assert h.group().state is S.STABLE


def test_stale_pending_sync_deadline_is_ignored():
    """A pending-sync deadline of an older generation does nothing."""
    h = Harness()
    [member] = h.stable_group(None)
    h.join(member_id=member)  # generation 2, CompletingRebalance
    result = h.coordinator.expire(SyncDeadline("g", 1), h.now)
    assert result.records == result.replies == result.timers == []
    assert h.group().state is S.COMPLETING_REBALANCE and member in h.group().members


# -- session timeouts ------------------------------------------------------------------------------

def test_classic_group_member_session_timeout():
    """A silent member is removed when its session ends; the group rebalances (here: empties)."""
    h = Harness()
    [member] = h.stable_group(None, session_ms=6000)
    assert h.session_deadline(member) == 6000
    h.advance(5999)
    assert member in h.group().members
    h.advance(1)
    assert h.group().members == {} and h.group().state is S.EMPTY
    assert h.heartbeat(member, 1) is E.unknown_member_id


def test_classic_group_member_heartbeat_maintains_session():
    """Each heartbeat pushes the session deadline one session timeout ahead."""
    h = Harness()
    [member] = h.stable_group(None, session_ms=6000)
    h.advance(3000)
    assert h.heartbeat(member, 1) is E.none
    assert h.session_deadline(member) == 9000
    h.advance(3000)
    assert h.heartbeat(member, 1) is E.none
    assert h.session_deadline(member) == 12_000
    assert h.group().state is S.STABLE


def test_classic_group_member_session_timeout_during_rebalance():
    """A member that keeps heartbeating but never rejoins is removed when its session ends,
    which completes the join phase for the others."""
    h = Harness()
    [leader] = h.stable_group(None, session_ms=6000)
    other = h.join_dynamic(session_ms=6000, rebalance_ms=10_000)
    h.advance(3000)
    assert h.heartbeat(leader, 1) is E.rebalance_in_progress
    h.advance(5999)
    assert not h.answered(other)
    h.advance(1)
    assert h.heartbeat(leader, 1) is E.unknown_member_id
    reply = h.reply(other)
    assert (reply.error, reply.generation, reply.leader) == (E.none, 2, reply.member_id)
    assert h.group().state is S.COMPLETING_REBALANCE and len(h.group().members) == 1


def test_static_member_session_timeout_removes_it_like_a_dynamic_one():
    """Session expiry applies to static members exactly as to dynamic ones."""
    h = Harness()
    leader, follower = h.stable_group("i-a", "i-b", session_ms=6000)
    h.advance(3000)
    h.heartbeat(leader, 1, instance="i-a")
    h.advance(3000)
    group = h.group()
    assert list(group.members) == [leader] and group.static_members == {"i-a": leader}
    assert group.state is S.PREPARING_REBALANCE


def test_members_parked_in_join_or_sync_are_not_expired():
    """A member waiting in JoinGroup or SyncGroup counts as alive when its session ends."""
    h = Harness()
    leader, follower = h.stable_group(None, None, session_ms=6000, rebalance_ms=60_000)
    join = h.join(member_id=leader, session_ms=6000, rebalance_ms=60_000)
    h.advance(6000)  # both sessions end: the leader waiting in JoinGroup stays, the follower goes
    assert h.reply(join).generation == 2 and list(h.group().members) == [leader]

    ta = h.join(instance="i-a", group="g2", session_ms=6000, rebalance_ms=60_000)
    tb = h.join(instance="i-b", group="g2", session_ms=6000, rebalance_ms=60_000)
    h.advance(0)
    a, b = h.reply(ta).member_id, h.reply(tb).member_id
    parked = h.sync(b, 1, group="g2")
    h.advance(3000)
    assert h.heartbeat(a, 1, group="g2") is E.none
    h.advance(3000)  # b's session ends while it waits in SyncGroup
    g2 = h.group("g2")
    assert list(g2.members) == [a, b] and g2.state is S.COMPLETING_REBALANCE
    assert not h.answered(parked)


# -- one session timer per group ------------------------------------------------------------------

def test_each_member_expires_at_its_own_deadline_under_the_groups_one_timer():
    """The group's timer is armed for the earliest member deadline and re-armed for the next,
    so members heard from at different times expire each exactly one session after."""
    h = Harness()
    a, b, c = h.stable_group("i-a", "i-b", "i-c", session_ms=6000, rebalance_ms=60_000)
    h.advance(2000)
    h.heartbeat(b, 1, instance="i-b")
    h.advance(2000)
    h.heartbeat(c, 1, instance="i-c")
    assert [h.session_deadline(m) for m in (a, b, c)] == [6000, 8000, 10_000]
    assert h.deadline(heartbeat_key("g")) == 6000  # one timer, for the earliest
    group = h.group()
    for member, deadline, left in ((a, 6000, [b, c]), (b, 8000, [c]), (c, 10_000, [])):
        h.advance(deadline - 1 - h.now)
        assert member in group.members
        h.advance(1)
        assert list(group.members) == left
    assert h.deadline(heartbeat_key("g")) is None


def test_a_member_answered_by_an_earlier_expiry_is_not_expired_in_the_same_round():
    """Two sessions end at once. The first member's removal completes the join phase, which
    answers the second (parked) member and restarts its session: it must stay."""
    h = Harness()
    leader, follower = h.stable_group(None, None, session_ms=6000, rebalance_ms=60_000)
    assert leader < follower  # the leader's lapse is handled first
    join = h.join(member_id=follower, session_ms=6000, rebalance_ms=60_000,
                  protocols=(("range", b"changed"),))  # parks it: the group rebalances
    assert not h.answered(join) and h.group().state is S.PREPARING_REBALANCE
    h.advance(6000)
    assert list(h.group().members) == [follower]
    assert h.reply(join).generation == 2 and h.group().state is S.COMPLETING_REBALANCE
    assert h.session_deadline(follower) == 12_000
