"""Static membership (KIP-345) as released Kafka decides it (the static-member cases of
Kafka's GroupMetadataManagerTest), plus the six member-id x group-instance-id JoinGroup cases
from the KIP-345 discussion."""
import pytest

from roster.coordinator.messages import JoinMember, JoinReply, SyncReply
from roster.coordinator.classic.states import GroupState, IllegalTransition
from roster.coordinator.classic.timers import join_key, sync_key
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import GroupKey, GroupValue, MemberValue, Record
from tests.unit.coordinator.harness import PROTOCOLS, Harness

S = GroupState


def fenced(member_id: str) -> JoinReply:
    """What a parked or stale JoinGroup of a fenced static member gets."""
    return JoinReply(error=ErrorCode.fenced_instance_id, member_id=member_id)


def stable_reply(member_id, leader, generation=1, members=(), skip=False, name="range"):
    return JoinReply(generation=generation, protocol_type="consumer", protocol_name=name,
                     leader=leader, skip_assignment=skip, member_id=member_id, members=members)


# -- joining and replacing -------------------------------------------------------------------------

@pytest.mark.parametrize("version", [1, 4, 5, 9])
def test_static_member_join_as_first_member(version):
    """A static member creates the group and enters at once: no MEMBER_ID_REQUIRED round trip."""
    h = Harness()
    token = h.join(instance="i-a", version=version)
    group = h.group()
    assert not h.answered(token)
    assert list(group.members) == ["i-a-1"] and group.static_members == {"i-a": "i-a-1"}
    assert group.state is S.PREPARING_REBALANCE and group.pending_members.keys() == set()
    # the creation record says only that the group exists: no type, generation 0, no members
    assert h.records == [Record(GroupKey("g"), GroupValue("", 0, None, None, 0, ()))]
    assert h.session_deadline("i-a-1") == 300_000  # the new-member join timeout
    assert h.deadline(join_key("g")) == 0                        # initial delay (0 here)
    h.advance(0)
    assert h.reply(token) == stable_reply(
        "i-a-1", "i-a-1", members=(JoinMember("i-a-1", "i-a", b"range-meta"),))


def test_join_group_replace_static_member():
    """An instance id rejoining with "" gets a new id; the old id's parked JoinGroup is fenced."""
    h = Harness(initial_rebalance_delay_ms=3000)
    old = h.join(instance="i-a", session_ms=6000)
    new = h.join(instance="i-a", session_ms=7000)
    assert h.reply(old) == fenced("i-a-1")
    group = h.group()
    assert list(group.members) == ["i-a-2"] and group.static_members == {"i-a": "i-a-2"}
    assert group.awaiting_join_count() == 1 and len(h.records) == 1  # only the creation record
    # re-armed for the new id with the session timeout it had before this request updated it
    assert h.session_deadline("i-a-2") == 6000
    assert group.members["i-a-2"].session_timeout_ms == 7000
    h.advance(3000)
    assert h.reply(new) == stable_reply(
        "i-a-2", "i-a-2", members=(JoinMember("i-a-2", "i-a", b"range-meta"),))


def test_replaced_static_member_is_not_new_so_its_parked_join_outlives_its_session():
    """Kafka builds a fresh, not-new member on replacement: a session expiry while its JoinGroup
    is parked in a long initial rebalance does not evict it (a new member's would)."""
    h = Harness(initial_rebalance_delay_ms=10_000)
    h.join(instance="i-a", session_ms=6000)
    new = h.join(instance="i-a", session_ms=6000)
    h.advance(6000)  # the new id's session timer fires while its JoinGroup is parked
    assert "i-a-2" in h.group().members and not h.answered(new)
    h.advance(4000)
    assert h.reply(new).error is ErrorCode.none and h.reply(new).generation == 1


@pytest.mark.parametrize("version", [5, 9])
def test_replace_static_member_in_stable_state_no_error(version):
    """No rebalance; one group record with the new id, timeouts and metadata; v9 hands the
    leader SkipAssignment with the member list, older versions name the old leader id."""
    h = Harness()
    [old] = h.stable_group("i-a", protocols=(("range", b"r1"),))
    records_before = len(h.records)
    token = h.join(instance="i-a", version=version,
                   protocols=(("range", b"r2"), ("roundrobin", b"rr2")),
                   session_ms=7000, rebalance_ms=8000)
    new = h.group().static_members["i-a"]
    assert new != old
    assert h.records[records_before:] == [Record(GroupKey("g"), GroupValue(
        "consumer", 1, "range", new, 0, (MemberValue(
            new, "i-a", "client", "/127.0.0.1", 8000, 7000, b"r2",
            f"assignment-of-{old}".encode()),)))]
    if version >= 9:
        expected = stable_reply(new, new, skip=True, members=(JoinMember(new, "i-a", b"r2"),))
    else:
        expected = stable_reply(new, old)
    assert h.reply(token) == expected
    member = h.group().members[new]
    assert (member.rebalance_timeout_ms, member.session_timeout_ms) == (8000, 7000)
    assert member.protocols == (("range", b"r2"), ("roundrobin", b"rr2"))
    assert h.group().state is S.STABLE and h.group().generation == 1
    sync = h.reply(h.sync(new, 1, instance="i-a"))
    assert sync == SyncReply(protocol_type="consumer", protocol_name="range",
                             assignment=f"assignment-of-{old}".encode())


def test_replace_static_member_in_stable_state_with_updated_protocol_triggers_rebalance():
    """If the replacement changes the protocol the group would select, a new generation follows."""
    h = Harness()
    h.stable_group("i-a")
    records_before = len(h.records)
    token = h.join(instance="i-a", protocols=(("roundrobin", b"rr2"),))
    new = h.group().static_members["i-a"]
    assert h.records[records_before:] == []
    assert h.reply(token) == stable_reply(new, new, generation=2, name="roundrobin",
                                          members=(JoinMember(new, "i-a", b"rr2"),))
    assert h.group().state is S.COMPLETING_REBALANCE and list(h.group().members) == [new]
    assert h.deadline(sync_key("g")) == 30_000


def test_replace_static_member_in_stable_state_errors():
    """When the write fails the replacement is undone and the write's error is returned."""
    h = Harness()
    [old] = h.stable_group("i-a", session_ms=6000, rebalance_ms=7000)
    records_before = len(h.records)
    h.now = 1000
    h.fail_next_write = ErrorCode.not_coordinator
    token = h.join(instance="i-a", protocols=PROTOCOLS + (("sticky", b"s"),),
                   session_ms=8000, rebalance_ms=9000)
    assert h.reply(token) == JoinReply(
        error=ErrorCode.not_coordinator, generation=1, protocol_type="consumer",
        protocol_name="range", leader=old, member_id="")
    group = h.group()
    assert list(group.members) == [old] and group.static_members == {"i-a": old}
    member = group.members[old]
    assert (member.session_timeout_ms, member.rebalance_timeout_ms) == (6000, 7000)
    assert member.protocols == PROTOCOLS
    assert group.state is S.STABLE and group.generation == 1 and group.leader_id == old
    assert h.records[records_before:] == []
    assert h.session_deadline(old) == 1000 + 6000  # the restored id is watched again
    assert h.heartbeat(old, 1, instance="i-a") is ErrorCode.none


def test_replace_static_member_in_completing_rebalance_state_triggers_rebalance():
    """A replacement during CompletingRebalance always starts a new generation."""
    h = Harness()
    first = h.join(instance="i-a")
    h.advance(0)
    assert h.reply(first).generation == 1 and h.group().state is S.COMPLETING_REBALANCE
    token = h.join(instance="i-a")
    new = h.group().static_members["i-a"]
    assert h.reply(token) == stable_reply(new, new, generation=2,
                                          members=(JoinMember(new, "i-a", b"range-meta"),))
    assert h.group().state is S.COMPLETING_REBALANCE and len(h.records) == 1


def test_replace_static_member_in_completing_rebalance_fences_parked_sync():
    """The replaced id's parked SyncGroup is fenced; the rest are told to rejoin."""
    h = Harness()
    ta, tb = h.join(instance="i-a"), h.join(instance="i-b")
    h.advance(0)
    a, b = h.reply(ta).member_id, h.reply(tb).member_id
    parked = h.sync(b, 1, instance="i-b")
    assert not h.answered(parked)
    rejoin = h.join(instance="i-b")
    assert h.reply(parked) == SyncReply(error=ErrorCode.fenced_instance_id)
    group = h.group()
    assert group.state is S.PREPARING_REBALANCE and group.pending_sync.keys() == set()
    assert h.deadline(sync_key("g")) is None and h.deadline(join_key("g")) == 30_000
    h.join(member_id=a, instance="i-a")
    assert h.reply(rejoin).generation == 2 and h.reply(rejoin).leader == a


# -- rejoining with known, unknown and mismatched ids ----------------------------------------------

@pytest.mark.parametrize("version", [5, 9])
def test_static_member_rejoin_with_leader_id_and_unknown_member_id(version):
    """A static leader rejoining with "" causes no rebalance; the old leader id is then fenced on
    JoinGroup and SyncGroup, and unknown without its instance id."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    records_before = len(h.records)
    token = h.join(instance="i-leader", version=version)
    new = h.group().static_members["i-leader"]
    [record] = h.records[records_before:]
    assert record.value.leader == new and record.value.generation == 1
    assert [m.member_id for m in record.value.members] == [follower, new]
    if version >= 9:
        expected = stable_reply(new, new, skip=True, members=(
            JoinMember(follower, "i-follower", b"range-meta"),
            JoinMember(new, "i-leader", b"range-meta")))
    else:
        expected = stable_reply(new, leader)
    assert h.reply(token) == expected
    assert h.group().state is S.STABLE and h.group().leader_id == new
    assert h.reply(h.join(member_id=leader, instance="i-leader")) == fenced(leader)
    assert h.reply(h.sync(leader, 1, instance="i-leader")).error is ErrorCode.fenced_instance_id
    assert h.reply(h.sync(leader, 1)).error is ErrorCode.unknown_member_id
    assert h.group().state is S.STABLE and h.group().generation == 1


def test_static_member_rejoin_with_leader_id_and_known_member_id():
    """A known static leader rejoining a Stable group forces a rebalance."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    token = h.join(member_id=leader, instance="i-leader")
    assert h.group().state is S.PREPARING_REBALANCE and h.deadline(join_key("g")) == 30_000
    h.advance(10_000)  # the follower never rejoins; its session ends and the phase completes
    assert follower not in h.group().members
    assert h.reply(token) == stable_reply(leader, leader, generation=2, members=(
        JoinMember(leader, "i-leader", b"range-meta"),))
    assert h.group().static_members == {"i-leader": leader}
    assert h.group().state is S.COMPLETING_REBALANCE


def test_static_member_fence_duplicate_rejoined_follower():
    """A duplicate joining with "" fences the follower's parked JoinGroup."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    h.join(version=3)  # a new dynamic member: rebalance
    assert h.group().state is S.PREPARING_REBALANCE
    old = h.join(member_id=follower, instance="i-follower")
    assert not h.answered(old)
    duplicate = h.join(instance="i-follower")
    assert h.reply(old) == fenced(follower)
    assert not h.answered(duplicate) and h.group().state is S.PREPARING_REBALANCE


def test_static_member_fence_duplicate_syncing_follower_after_member_id_changed():
    """A duplicate joining during CompletingRebalance fences the parked SyncGroup of the old id
    and restarts the rebalance, which completes without the silent leader."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    leader_join = h.join(member_id=leader, instance="i-leader")
    follower_join = h.join(member_id=follower, instance="i-follower")
    members = (JoinMember(leader, "i-leader", b"range-meta"),
               JoinMember(follower, "i-follower", b"range-meta"))
    assert h.reply(leader_join) == stable_reply(leader, leader, generation=2, members=members)
    assert h.reply(follower_join) == stable_reply(follower, leader, generation=2)
    old_sync = h.sync(follower, 2, instance="i-follower")
    assert not h.answered(old_sync)
    duplicate = h.join(instance="i-follower")
    assert h.reply(old_sync) == SyncReply(error=ErrorCode.fenced_instance_id)
    assert h.group().state is S.PREPARING_REBALANCE and not h.answered(duplicate)
    h.advance(10_000)  # the leader's session ends (it never rejoined); the duplicate's does not
    new = h.group().static_members["i-follower"]
    assert h.reply(duplicate) == stable_reply(new, new, generation=3, members=(
        JoinMember(new, "i-follower", b"range-meta"),))
    assert list(h.group().members) == [new] and h.group().state is S.COMPLETING_REBALANCE


def test_static_member_fence_duplicate_rejoining_follower_after_member_id_changed():
    """After a duplicate took the instance id, the old follower id's JoinGroup is fenced."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    leader_join = h.join(member_id=leader, instance="i-leader")
    duplicate = h.join(instance="i-follower")  # everyone has joined: the phase completes
    new = h.group().static_members["i-follower"]
    old = h.join(member_id=follower, instance="i-follower")
    assert h.reply(leader_join) == stable_reply(leader, leader, generation=2, members=(
        JoinMember(leader, "i-leader", b"range-meta"),
        JoinMember(new, "i-follower", b"range-meta")))
    assert h.reply(duplicate) == stable_reply(new, leader, generation=2)
    assert h.reply(old) == fenced(follower)
    assert h.group().state is S.COMPLETING_REBALANCE


def test_static_member_rejoin_as_follower_with_unknown_member_id():
    """A static follower rejoining with "" keeps the generation and gets its old assignment."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    records_before = len(h.records)
    token = h.join(instance="i-follower")
    new = h.group().static_members["i-follower"]
    assert new != follower and len(h.records) == records_before + 1
    assert h.reply(token) == stable_reply(new, leader)
    assert h.group().static_members == {"i-leader": leader, "i-follower": new}
    sync = h.reply(h.sync(new, 1, instance="i-follower"))
    assert sync.error is ErrorCode.none
    assert sync.assignment == f"assignment-of-{follower}".encode()


def test_static_member_rejoin_as_follower_with_known_member_id_and_no_protocol_change():
    """A known static follower with unchanged metadata is answered at once; nothing is written."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    records_before = len(h.records)
    token = h.join(member_id=follower, instance="i-follower")
    assert h.reply(token) == stable_reply(follower, leader)
    assert len(h.records) == records_before and h.group().state is S.STABLE


def test_static_member_rejoin_as_follower_with_mismatched_instance_id():
    """The follower's id with the leader's instance id is fenced."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    assert h.reply(h.join(member_id=follower, instance="i-leader")) == fenced(follower)
    assert h.group().state is S.STABLE


def test_static_member_rejoin_as_leader_with_mismatched_instance_id():
    """The leader's id with the follower's instance id is fenced."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    assert h.reply(h.join(member_id=leader, instance="i-follower")) == fenced(leader)
    assert h.group().state is S.STABLE


def test_static_member_join_with_unknown_instance_id_and_known_member_id():
    """A known member id under an unknown instance id is UNKNOWN_MEMBER_ID."""
    h = Harness()
    leader, _ = h.stable_group("i-leader", "i-follower")
    reply = h.reply(h.join(member_id=leader, instance="unknown-instance"))
    assert reply == JoinReply(error=ErrorCode.unknown_member_id, member_id=leader)


def test_static_member_sync_as_leader_with_invalid_member_id():
    """SyncGroup with a known instance id and another member id is fenced."""
    h = Harness()
    h.stable_group("i-leader", "i-follower")
    reply = h.reply(h.sync("invalid-member-id", 1, instance="i-follower"))
    assert reply == SyncReply(error=ErrorCode.fenced_instance_id)


def test_static_member_heartbeat_leader_with_invalid_member_id():
    """Heartbeat with a known instance id and another member id is fenced."""
    h = Harness()
    leader, _ = h.stable_group("i-leader", "i-follower")
    assert h.heartbeat(leader, 1) is ErrorCode.none
    assert h.heartbeat("invalid-member-id", 1, instance="i-leader") is \
        ErrorCode.fenced_instance_id


# -- static members across rebalances --------------------------------------------------------------

def test_static_member_follower_fail_to_rejoin_before_rebalance_timeout():
    """A static follower that does not rejoin stays in the group and in the leader's list."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower", rebalance_ms=10_000,
                                      session_ms=15_000)
    newcomer = h.join(instance="i-new", rebalance_ms=10_000, session_ms=15_000)
    leader_join = h.join(member_id=leader, instance="i-leader", rebalance_ms=10_000,
                         session_ms=15_000)
    assert h.deadline(join_key("g")) == 10_000
    h.advance(10_000)
    new = h.group().static_members["i-new"]
    assert h.reply(leader_join) == stable_reply(leader, leader, generation=2, members=(
        JoinMember(leader, "i-leader", b"range-meta"),
        JoinMember(follower, "i-follower", b"range-meta"),
        JoinMember(new, "i-new", b"range-meta")))
    assert h.reply(newcomer) == stable_reply(new, leader, generation=2)
    group = h.group()
    assert group.state is S.COMPLETING_REBALANCE and group.pending_sync.keys() == {leader, follower, new}
    # every member, the absent one too, is watched with its session timeout from now on
    assert h.session_deadline(follower) == 10_000 + 15_000


def test_static_member_leader_fail_to_rejoin_before_rebalance_timeout():
    """When the static leader does not rejoin, a member that did becomes leader; the absent
    leader stays a member."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower", rebalance_ms=10_000,
                                      session_ms=15_000)
    newcomer = h.join(instance="i-new", rebalance_ms=10_000, session_ms=15_000)
    follower_join = h.join(member_id=follower, instance="i-follower", rebalance_ms=10_000,
                           session_ms=15_000)
    h.advance(10_000)
    new = h.group().static_members["i-new"]
    assert h.reply(follower_join) == stable_reply(follower, follower, generation=2, members=(
        JoinMember(leader, "i-leader", b"range-meta"),
        JoinMember(follower, "i-follower", b"range-meta"),
        JoinMember(new, "i-new", b"range-meta")))
    assert h.reply(newcomer) == stable_reply(new, follower, generation=2)
    assert h.group().leader_id == follower and leader in h.group().members


def test_group_stuck_in_rebalance_timeout_due_to_nonjoined_static_member():
    """Only dynamic non-rejoiners are removed: a group left with a silent static member waits in
    PreparingRebalance until that member's session ends."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower", rebalance_ms=6000,
                                      session_ms=12_000)
    dynamic = h.join_dynamic(rebalance_ms=6000, session_ms=12_000)
    h.advance(6000)
    reply = h.reply(dynamic)
    assert (reply.error, reply.generation, reply.leader, len(reply.members)) == \
        (ErrorCode.none, 2, reply.member_id, 3)
    group = h.group()
    assert set(group.members) == {leader, follower, reply.member_id}
    assert group.static_members == {"i-leader": leader, "i-follower": follower}
    answer = h.leave((follower, "i-follower"))
    assert [(m.member_id, m.group_instance_id, m.error) for m in answer.members] == \
        [(follower, "i-follower", ErrorCode.none)]
    assert group.state is S.PREPARING_REBALANCE and h.deadline(join_key("g")) == 12_000
    h.advance(6000)  # nobody rejoined: the dynamic member goes, the static leader stays
    assert list(group.members) == [leader] and group.generation == 2
    assert group.state is S.PREPARING_REBALANCE and h.deadline(join_key("g")) == 18_000
    h.advance(6000)  # the leader's session (re-armed at t=6000) ends: the group empties
    assert group.state is S.EMPTY and group.generation == 3 and group.members == {}
    assert h.records[-1] == Record(GroupKey("g"), GroupValue("consumer", 3, None, None,
                                                             18_000, ()))


def test_static_member_rejoin_with_illegal_state_as_unknown_member():
    """A static member still mapped in a (forced) Empty group is a coordinator bug: the join is
    refused with an error and the group is left as it was."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    group = h.group()
    group.transition_to(S.PREPARING_REBALANCE, h.now)
    group.transition_to(S.EMPTY, h.now)
    with pytest.raises(IllegalTransition, match=r"group g .*i-follower"):
        h.join(instance="i-follower")
    assert list(group.members) == [leader, follower]
    assert group.static_members == {"i-leader": leader, "i-follower": follower}
    assert group.state is S.EMPTY and not group.is_joining(group.members[follower])


def test_get_different_static_member_id_after_each_rejoin():
    """Each rejoin with "" hands out a new member id and writes one record."""
    h = Harness()
    last, _ = h.stable_group("i-leader", "i-follower")
    for _ in range(5):
        records_before = len(h.records)
        reply = h.reply(h.join(instance="i-leader"))
        assert reply.error is ErrorCode.none
        assert reply.member_id == h.group().static_members["i-leader"] != last
        assert len(h.records) == records_before + 1
        last = reply.member_id


# -- deliberate choices -------------------------------------------------------------------------

def test_static_replacement_moves_pending_sync_to_the_new_member_id():
    """Deliberate: a pending-sync entry follows the replacement, so the new id syncing in time
    keeps the group Stable (Kafka keeps the old id pending and rebalances at the deadline)."""
    h = Harness()
    ta, tb = h.join(instance="i-a", session_ms=60_000), h.join(instance="i-b", session_ms=60_000)
    h.advance(0)
    a, b = h.reply(ta).member_id, h.reply(tb).member_id
    h.sync(a, 1, assignments=[(a, b"A"), (b, b"B")])
    group = h.group()
    assert group.state is S.STABLE and group.pending_sync.keys() == {b}
    assert h.deadline(sync_key("g")) == 30_000
    new = h.reply(h.join(instance="i-b", session_ms=60_000)).member_id
    assert group.pending_sync.keys() == {new}
    assert h.reply(h.sync(new, 1, instance="i-b")).assignment == b"B"
    assert group.pending_sync.keys() == set() and h.deadline(sync_key("g")) is None
    h.advance(30_000)
    assert group.state is S.STABLE and group.generation == 1 and list(group.members) == [a, new]


def test_static_replacement_that_never_syncs_is_evicted_at_the_sync_deadline():
    """Deliberate: the moved pending-sync entry is enforced against the new member id."""
    h = Harness()
    ta, tb = h.join(instance="i-a", session_ms=60_000), h.join(instance="i-b", session_ms=60_000)
    h.advance(0)
    a, b = h.reply(ta).member_id, h.reply(tb).member_id
    h.sync(a, 1, assignments=[(a, b"A"), (b, b"B")])
    new = h.reply(h.join(instance="i-b", session_ms=60_000)).member_id
    h.advance(30_000)
    group = h.group()
    assert new not in group.members and "i-b" not in group.static_members
    assert group.state is S.PREPARING_REBALANCE and list(group.members) == [a]


def test_pending_member_id_sent_with_an_instance_id_is_unknown_member():
    """Deliberate: a pending (KIP-394) id that also carries an instance id is answered
    UNKNOWN_MEMBER_ID (Kafka throws IllegalStateException); the id stays pending."""
    h = Harness()
    pending = h.reply(h.join()).member_id
    reply = h.reply(h.join(member_id=pending, instance="i-a"))
    assert reply == JoinReply(error=ErrorCode.unknown_member_id, member_id=pending)
    assert h.group().pending_members.keys() == {pending} and h.group().members == {}


# -- the six member id x group instance id cases (KIP-345 discussion, as released) --------------

def test_kip345_case1_known_member_id_without_instance_id():
    """Known member id, no instance id: a changed subscription rebalances; an unchanged follower
    is answered with the current generation."""
    h = Harness()
    leader, follower = h.stable_group(None, None)
    assert h.reply(h.join(member_id=follower)) == stable_reply(follower, leader)
    assert h.group().state is S.STABLE
    h.join(member_id=follower, protocols=(("range", b"changed"),))
    assert h.group().state is S.PREPARING_REBALANCE


def test_kip345_case2_unknown_member_id_without_instance_id():
    """Unknown member id, no instance id: UNKNOWN_MEMBER_ID, echoing the id."""
    h = Harness()
    h.stable_group(None, None)
    reply = h.reply(h.join(member_id="made-up"))
    assert reply == JoinReply(error=ErrorCode.unknown_member_id, member_id="made-up")


def test_kip345_case3_empty_member_id_without_instance_id():
    """Empty member id, no instance id (v4+): MEMBER_ID_REQUIRED with a pending id."""
    h = Harness()
    h.stable_group(None, None)
    reply = h.reply(h.join())
    assert reply == JoinReply(error=ErrorCode.member_id_required, member_id="client-3")
    assert h.group().pending_members.keys() == {"client-3"} and h.group().state is S.STABLE


def test_kip345_case4_known_member_id_with_instance_id():
    """Known member id with its instance id: answered at once; with another member's instance
    id: FENCED_INSTANCE_ID (82, not the draft's MEMBER_ID_MISMATCH)."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    assert h.reply(h.join(member_id=follower, instance="i-follower")) == \
        stable_reply(follower, leader)
    reply = h.reply(h.join(member_id=follower, instance="i-leader"))
    assert reply == fenced(follower) and reply.error.value == 82


def test_kip345_case5_unknown_member_id_with_instance_id():
    """Unknown member id with an unknown instance id: UNKNOWN_MEMBER_ID; with a known instance
    id: FENCED_INSTANCE_ID (released Kafka, unlike the comment's "same as 2")."""
    h = Harness()
    h.stable_group("i-leader", "i-follower")
    assert h.reply(h.join(member_id="made-up", instance="i-other")) == \
        JoinReply(error=ErrorCode.unknown_member_id, member_id="made-up")
    assert h.reply(h.join(member_id="made-up", instance="i-follower")) == fenced("made-up")
    assert h.group().state is S.STABLE


def test_kip345_case6_empty_member_id_with_instance_id():
    """Empty member id with an instance id: never MEMBER_ID_REQUIRED; a known instance is
    replaced without a rebalance, an unknown one is added and rebalances the group."""
    h = Harness()
    leader, follower = h.stable_group("i-leader", "i-follower")
    replaced = h.reply(h.join(instance="i-follower"))
    assert replaced == stable_reply(h.group().static_members["i-follower"], leader)
    assert h.group().state is S.STABLE
    added = h.join(instance="i-third")
    assert not h.answered(added) and h.group().pending_members.keys() == set()
    assert h.group().state is S.PREPARING_REBALANCE and "i-third" in h.group().static_members
