"""JoinGroup, SyncGroup and Heartbeat decision tables of Kafka's classic
group coordinator, and Kafka's scenarios for them."""
import logging

import pytest

from roster.broker.groups.group_log import CLIENT_WRITE_ERRORS
from roster.coordinator.classic.states import GroupState
from roster.coordinator.classic.timers import join_key, sync_key
from roster.coordinator.messages import JoinMember, JoinReply, JoinRequest, SyncReply
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import GroupKey
from tests.unit.coordinator.harness import PROTOCOLS, Harness

S = GroupState
E = ErrorCode


def current(member_id, leader, generation, members=(), name="range"):
    return JoinReply(generation=generation, protocol_type="consumer", protocol_name=name,
                     leader=leader, member_id=member_id, members=members)


# -- checks before the tables ----------------------------------------------------------------------

@pytest.mark.parametrize("session_ms, error", [
    (5999, E.invalid_session_timeout), (6000, E.member_id_required),
    (1_800_000, E.member_id_required), (1_800_001, E.invalid_session_timeout)])
def test_join_group_session_timeout_bounds(session_ms, error):
    """The session timeout must lie in [group.min, group.max] (6 s, 30 min by default)."""
    h = Harness()
    assert h.reply(h.join(session_ms=session_ms)).error is error


def test_join_group_invalid_group_id():
    """An empty group id is INVALID_GROUP_ID, and creates nothing."""
    h = Harness()
    assert h.reply(h.join(group="")) == JoinReply(error=E.invalid_group_id)
    assert h.coordinator.groups == {} and h.records == []


@pytest.mark.parametrize("protocol_type, protocols", [("", PROTOCOLS), ("consumer", ())])
def test_join_group_inconsistent_protocol_on_empty_group(protocol_type, protocols):
    """An Empty group refuses an empty protocol type or an empty protocol list."""
    h = Harness()
    reply = h.reply(h.join(protocol_type=protocol_type, protocols=protocols))
    assert reply == JoinReply(error=E.inconsistent_group_protocol)


def test_join_group_inconsistent_protocol_with_current_members():
    """A joiner of another type, or sharing no protocol with every member, is refused."""
    h = Harness()
    leader, _ = h.stable_group(None, None)
    assert h.reply(h.join(protocol_type="connect")).error is E.inconsistent_group_protocol
    assert h.reply(h.join(protocols=(("sticky", b"s"),))).error is E.inconsistent_group_protocol
    reply = h.reply(h.join(member_id=leader, protocols=(("sticky", b"s"),)))
    assert reply == JoinReply(error=E.inconsistent_group_protocol, member_id=leader)
    assert h.group().state is S.STABLE


# -- unknown member ids ----------------------------------------------------------------------------

def test_join_group_unknown_member_new_group():
    """A member id for a group that does not exist is UNKNOWN_MEMBER_ID (static too)."""
    h = Harness()
    assert h.reply(h.join(member_id="member-id")) == \
        JoinReply(error=E.unknown_member_id, member_id="member-id")
    assert h.reply(h.join(member_id="member-id", instance="i-a")) == \
        JoinReply(error=E.unknown_member_id, member_id="member-id")
    assert h.coordinator.groups == {} and h.records == []


def test_join_group_unknown_consumer_existing_group():
    """An unknown member id for an existing group is UNKNOWN_MEMBER_ID."""
    h = Harness()
    h.stable_group(None)
    assert h.reply(h.join(member_id="other-member-id")) == \
        JoinReply(error=E.unknown_member_id, member_id="other-member-id")


def test_existing_member_join_dead_group():
    """A Dead group answers COORDINATOR_NOT_AVAILABLE to new and known members."""
    h = Harness()
    [member] = h.stable_group(None)
    h.group().transition_to(S.DEAD, h.now)
    records_before = len(h.records)
    assert h.reply(h.join()) == JoinReply(error=E.coordinator_not_available)
    assert h.reply(h.join(member_id=member)) == \
        JoinReply(error=E.coordinator_not_available, member_id=member)
    assert len(h.records) == records_before


# -- group.max.size --------------------------------------------------------------------------------

def _joined(h, tokens, generation=1):
    replies = [h.reply(t) for t in tokens]
    ok = [r for r in replies if r.error is E.none]
    rejected = [r for r in replies if r.error is E.group_max_size_reached]
    assert all(r.generation == generation for r in ok)
    assert all(r == JoinReply(error=E.group_max_size_reached) for r in rejected)
    return ok, rejected


def test_dynamic_members_join_group_with_max_size_and_required_known_member():
    """With KIP-394 ids, the 11th member of a group limited to 10 is refused when it joins with
    its id, and again when it rejoins during CompletingRebalance."""
    h = Harness(max_size=10, initial_rebalance_delay_ms=50)
    ids = [h.reply(h.join()).member_id for _ in range(11)]
    group = h.group()
    assert group.state is S.EMPTY and len(group.pending_members) == 11 and group.members == {}
    second = [h.join(member_id=m) for m in ids]
    assert h.reply(second[10]) == JoinReply(error=E.group_max_size_reached)
    assert len(group.members) == 10 and group.pending_members.keys() == set()
    h.advance(50)  # members arrived during the delay: it is extended once
    assert not h.answered(second[0]) and h.deadline(join_key("g")) == 100
    h.advance(50)
    ok, rejected = _joined(h, second)
    assert (len(ok), len(rejected)) == (10, 1) and group.state is S.COMPLETING_REBALANCE
    third = [h.join(member_id=m) for m in ids]
    ok, rejected = _joined(h, third)
    assert (len(ok), len(rejected)) == (10, 1) and h.reply(third[10]).error is \
        E.group_max_size_reached


def test_dynamic_members_join_group_with_max_size_and_not_required_known_member():
    """Without KIP-394 (JoinGroup v3) the 11th joiner is refused at once."""
    h = Harness(max_size=10, initial_rebalance_delay_ms=50)
    first = [h.join(version=3) for _ in range(11)]
    group = h.group()
    assert len(group.members) == 10 and group.awaiting_join_count() == 10
    assert group.state is S.PREPARING_REBALANCE
    h.advance(100)
    ok, rejected = _joined(h, first)
    assert (len(ok), len(rejected)) == (10, 1)
    second = [h.join(member_id=h.reply(t).member_id, version=3) for t in first]
    ok, rejected = _joined(h, second)
    assert (len(ok), len(rejected)) == (10, 1)
    assert len(group.members) == 10 and group.awaiting_join_count() == 0
    assert group.state is S.COMPLETING_REBALANCE


def test_static_members_join_group_with_max_size():
    """Static joiners are counted the same way: the 11th instance is refused, then and later."""
    h = Harness(max_size=10, initial_rebalance_delay_ms=50)
    instances = [f"instance-{i}" for i in range(11)]
    first = [h.join(instance=i) for i in instances]
    group = h.group()
    assert len(group.members) == 10 and "instance-10" not in group.static_members
    h.advance(100)
    ok, rejected = _joined(h, first)
    assert (len(ok), len(rejected)) == (10, 1)
    second = [h.join(member_id=h.reply(t).member_id, instance=i)
              for t, i in zip(first, instances)]
    ok, rejected = _joined(h, second)
    assert (len(ok), len(rejected)) == (10, 1) and h.reply(second[10]).error is \
        E.group_max_size_reached
    assert group.state is S.COMPLETING_REBALANCE and len(group.members) == 10


def test_last_joining_members_are_kicked_out_when_rejoining_group_with_max_size():
    """A group above its limit rebalances down to it: the last members to rejoin are refused
    and removed."""
    h = Harness(max_size=10, initial_rebalance_delay_ms=50)
    ids = [f"member-{i:02}" for i in range(12)]
    for member_id in ids:
        h.add_member(member_id, session_ms=6000, rebalance_ms=10_000)
    h.force_rebalance()
    tokens = [h.join(member_id=m, rebalance_ms=10_000) for m in ids]
    group = h.group()
    assert len(group.members) == 10 and group.awaiting_join_count() == 10
    assert group.state is S.PREPARING_REBALANCE
    assert [h.reply(t) for t in tokens[10:]] == [JoinReply(error=E.group_max_size_reached)] * 2
    h.advance(50)
    ok, _ = _joined(h, tokens[:10])
    assert len(ok) == 10 and group.state is S.COMPLETING_REBALANCE
    assert list(group.members) == ids[:10]


# -- known members in Stable / CompletingRebalance -------------------------------------------------

def test_join_group_existing_member_updated_metadata_triggers_rebalance():
    """During CompletingRebalance, changed metadata starts a new generation."""
    h = Harness()
    first = h.join_dynamic(protocols=(("range", b"r"),))
    h.advance(0)
    member = h.reply(first).member_id
    token = h.join(member_id=member, protocols=PROTOCOLS)
    assert h.reply(token) == current(member, member, 2,
                                     members=(JoinMember(member, None, b"range-meta"),))
    assert h.group().members[member].protocols == PROTOCOLS


def test_join_group_existing_member_same_metadata_in_completing_rebalance_gets_same_generation():
    """During CompletingRebalance, unchanged metadata (a lost JoinGroup answer) is answered
    again with the current generation; only the leader gets the member list."""
    h = Harness()
    ta, tb = h.join_dynamic(), h.join_dynamic()
    h.advance(0)
    a, b = h.reply(ta).member_id, h.reply(tb).member_id
    members = (JoinMember(a, None, b"range-meta"), JoinMember(b, None, b"range-meta"))
    assert h.reply(h.join(member_id=a)) == current(a, a, 1, members=members)
    assert h.reply(h.join(member_id=b)) == current(b, a, 1)
    assert h.group().state is S.COMPLETING_REBALANCE


def test_join_group_as_existing_leader_triggers_rebalance_in_stable_state():
    """A Stable group's leader rejoining with the same metadata forces a rebalance."""
    h = Harness()
    [leader] = h.stable_group(None)
    token = h.join(member_id=leader)
    assert h.reply(token) == current(leader, leader, 2,
                                     members=(JoinMember(leader, None, b"range-meta"),))
    assert h.group().state is S.COMPLETING_REBALANCE


def test_join_group_as_existing_member_with_updated_metadata_triggers_rebalance_in_stable_state():
    """A follower with changed metadata rebalances a Stable group."""
    h = Harness()
    leader, follower = h.stable_group(None, None)
    token = h.join(member_id=follower, protocols=(("range", b"new"),))
    assert not h.answered(token) and h.group().state is S.PREPARING_REBALANCE
    leader_join = h.join(member_id=leader)
    assert h.reply(token) == current(follower, leader, 2)
    assert h.reply(leader_join).members == (JoinMember(leader, None, b"range-meta"),
                                            JoinMember(follower, None, b"new"))


def test_join_group_existing_member_does_not_trigger_rebalance_in_stable_state():
    """A follower with unchanged metadata gets the current generation; no rebalance."""
    h = Harness()
    leader, follower = h.stable_group(None, None)
    records_before = len(h.records)
    assert h.reply(h.join(member_id=follower)) == current(follower, leader, 1)
    assert h.group().state is S.STABLE and len(h.records) == records_before


# -- pending (KIP-394) members ---------------------------------------------------------------------

def test_join_group_completion_when_pending_member_joins():
    """The pending member's join, the last one missing, completes the join phase at once."""
    h = Harness()
    leader, follower, pending, leader_join, _ = h.group_with_pending_member()
    token = h.join(member_id=pending)
    reply = h.reply(token)
    assert (reply.error, reply.generation, reply.leader) == (E.none, 2, leader)
    group = h.group()
    assert group.state is S.COMPLETING_REBALANCE and group.pending_members.keys() == set()
    assert list(group.members) == [leader, follower, pending]
    assert [m.member_id for m in h.reply(leader_join).members] == [leader, follower, pending]


# -- SyncGroup -------------------------------------------------------------------------------------

def test_sync_group_from_unknown_group():
    """SyncGroup for a missing group is UNKNOWN_MEMBER_ID and creates nothing."""
    h = Harness()
    assert h.reply(h.sync("member-id", 1)) == SyncReply(error=E.unknown_member_id)
    assert h.coordinator.groups == {}


def test_sync_group_from_unknown_member():
    """SyncGroup from an id the group does not know is UNKNOWN_MEMBER_ID, empty assignment."""
    h = Harness()
    h.stable_group(None)
    assert h.reply(h.sync("unknown-member-id", 1)) == SyncReply(error=E.unknown_member_id)


def test_sync_group_from_illegal_generation():
    """SyncGroup for another generation is ILLEGAL_GENERATION."""
    h = Harness()
    token = h.join(instance="i-a")
    h.advance(0)
    member = h.reply(token).member_id
    assert h.reply(h.sync(member, 2)) == SyncReply(error=E.illegal_generation)
    assert h.group().state is S.COMPLETING_REBALANCE


def test_sync_group_in_empty_group_is_unknown_member():
    """An Empty group answers UNKNOWN_MEMBER_ID before looking at the member (as Kafka)."""
    h = Harness()
    h.add_member("member-id")  # forced: an Empty group holding a member
    assert h.group().state is S.EMPTY
    assert h.reply(h.sync("member-id", 0)) == SyncReply(error=E.unknown_member_id)


def test_sync_group_during_preparing_rebalance():
    """A valid member syncing while the group rebalances is told REBALANCE_IN_PROGRESS."""
    h = Harness()
    leader, follower = h.stable_group(None, None)
    h.join(member_id=leader)
    assert h.reply(h.sync(follower, 1)) == SyncReply(error=E.rebalance_in_progress)


def _two_members_completing(h, **join_kwargs):
    ta, tb = h.join(instance="i-leader", **join_kwargs), h.join(instance="i-follower",
                                                                 **join_kwargs)
    h.advance(0)
    return h.reply(ta).member_id, h.reply(tb).member_id


def _sync_with_protocol(h, protocol_type, protocol_name):
    leader, follower = _two_members_completing(h)
    kwargs = dict(protocol_type=protocol_type, protocol_name=protocol_name)
    leader_sync = h.reply(h.sync(leader, 1, assignments=[(leader, b"L")], **kwargs))
    return leader_sync, h.reply(h.sync(follower, 1, **kwargs))


def test_sync_group_returns_an_error_when_protocol_type_is_inconsistent():
    """A SyncGroup v5 protocol type other than the group's is INCONSISTENT_GROUP_PROTOCOL."""
    h = Harness()
    leader_sync, follower_sync = _sync_with_protocol(h, "other-type", "range")
    assert leader_sync == follower_sync == SyncReply(error=E.inconsistent_group_protocol)
    assert h.group().state is S.COMPLETING_REBALANCE


def test_sync_group_returns_an_error_when_protocol_name_is_inconsistent():
    """A SyncGroup v5 protocol name other than the group's is INCONSISTENT_GROUP_PROTOCOL."""
    h = Harness()
    leader_sync, follower_sync = _sync_with_protocol(h, "consumer", "other-name")
    assert leader_sync == follower_sync == SyncReply(error=E.inconsistent_group_protocol)
    assert h.group().state is S.COMPLETING_REBALANCE


def test_sync_group_succeed_when_protocol_type_and_name_are_not_provided():
    """Absent (null) protocol type and name count as consistent."""
    h = Harness()
    leader_sync, follower_sync = _sync_with_protocol(h, None, None)
    assert leader_sync == SyncReply(protocol_type="consumer", protocol_name="range",
                                    assignment=b"L")
    assert follower_sync == SyncReply(protocol_type="consumer", protocol_name="range")


def test_sync_group_succeed_when_protocol_type_and_name_are_consistent():
    """The group's own protocol type and name are accepted."""
    h = Harness()
    leader_sync, follower_sync = _sync_with_protocol(h, "consumer", "range")
    assert leader_sync == SyncReply(protocol_type="consumer", protocol_name="range",
                                    assignment=b"L")
    assert h.group().state is S.STABLE


def test_sync_group_follower_after_leader():
    """After the leader's assignment is written, a follower gets its bytes at once."""
    h = Harness()
    leader, follower = _two_members_completing(h)
    records_before = len(h.records)
    leader_sync = h.sync(leader, 1, assignments=[(leader, b"\x00"), (follower, b"\x01")])
    [record] = h.records[records_before:]
    assert record.key == GroupKey("g")
    assert [(m.member_id, m.assignment) for m in record.value.members] == \
        [(leader, b"\x00"), (follower, b"\x01")]
    assert h.reply(leader_sync).assignment == b"\x00" and h.group().state is S.STABLE
    assert h.reply(h.sync(follower, 1)) == SyncReply(
        protocol_type="consumer", protocol_name="range", assignment=b"\x01")
    assert len(h.records) == records_before + 1


def test_sync_group_leader_after_follower():
    """A follower that syncs first waits for the leader, then gets its bytes."""
    h = Harness()
    leader, follower = _two_members_completing(h)
    follower_sync = h.sync(follower, 1)
    assert not h.answered(follower_sync) and h.group().state is S.COMPLETING_REBALANCE
    leader_sync = h.sync(leader, 1, assignments=[(leader, b"\x00"), (follower, b"\x01")])
    assert h.reply(follower_sync) == SyncReply(
        protocol_type="consumer", protocol_name="range", assignment=b"\x01")
    assert h.reply(leader_sync).assignment == b"\x00" and h.group().state is S.STABLE


def test_sync_group_leader_assignment_ignores_non_members_and_fills_missing():
    """Assignments for non-members are dropped; members the leader left out get b""."""
    h = Harness()
    leader, follower = _two_members_completing(h)
    h.sync(leader, 1, assignments=[(leader, b"L"), ("stranger", b"X")])
    assert [(m.member_id, m.assignment) for m in h.records[-1].value.members] == \
        [(leader, b"L"), (follower, b"")]
    assert h.reply(h.sync(follower, 1)).assignment == b""


def test_leader_failure_in_sync_group():
    """If the leader dies before syncing, the parked followers are told to rejoin."""
    h = Harness()
    leader, follower = _two_members_completing(h, session_ms=6000, rebalance_ms=10_000)
    follower_sync = h.sync(follower, 1)
    assert not h.answered(follower_sync)
    h.advance(6000)  # the leader's session ends; the follower waits in SyncGroup, so stays
    assert h.reply(follower_sync) == SyncReply(error=E.rebalance_in_progress)
    group = h.group()
    assert list(group.members) == [follower] and group.state is S.PREPARING_REBALANCE
    assert h.session_deadline(follower) == 12_000  # re-armed when answered
    assert h.deadline(sync_key("g")) is None


# what the edge reports for a failed append (broker/groups/group_log.py maps storage errors to these)
@pytest.mark.parametrize("append_error", sorted(CLIENT_WRITE_ERRORS))
def test_sync_group_as_leader_append_failure(append_error):
    """A failed write of the leader's assignment answers the parked members with the write's
    error (no type or name), resets assignments and rebalances."""
    h = Harness()
    leader, follower = _two_members_completing(h)
    follower_sync = h.sync(follower, 1)
    records_before = len(h.records)
    h.fail_next_write = append_error
    leader_sync = h.sync(leader, 1, assignments=[(leader, b"L"), (follower, b"F")])
    assert h.reply(leader_sync) == h.reply(follower_sync) == SyncReply(error=append_error)
    group = h.group()
    assert len(h.records) == records_before
    assert group.state is S.PREPARING_REBALANCE and group.generation == 1
    assert all(m.assignment == b"" for m in group.members.values())
    assert h.deadline(join_key("g")) == 30_000


def test_rebalance_during_completing_rebalance_resets_assignments_and_answers_parked_syncs():
    """Leaving CompletingRebalance answers parked SyncGroups with REBALANCE_IN_PROGRESS and
    resets every member's assignment, including the previous generation's."""
    h = Harness()
    leader, follower = h.stable_group(None, None)
    h.join(member_id=leader)
    h.join(member_id=follower)
    group = h.group()
    assert group.state is S.COMPLETING_REBALANCE and group.generation == 2
    assert group.members[follower].assignment == f"assignment-of-{follower}".encode()
    parked = h.sync(follower, 2)
    h.join_dynamic()  # a newcomer: back to PreparingRebalance
    assert h.reply(parked) == SyncReply(error=E.rebalance_in_progress)
    assert [m.assignment for m in group.members.values()] == [b"", b"", b""]
    assert group.state is S.PREPARING_REBALANCE and group.pending_sync.keys() == set()


def test_leader_assignment_written_after_a_new_rebalance_started_is_ignored():
    """If the group moved on while the leader's write was in flight, the write changes nothing."""
    h = Harness()
    leader, follower = _two_members_completing(h)
    h.hold_next_write = True
    leader_sync = h.sync(leader, 1, assignments=[(leader, b"L"), (follower, b"F")])
    rejoin = h.join(member_id=follower, protocols=(("range", b"changed"),))
    assert h.group().state is S.PREPARING_REBALANCE
    assert h.reply(leader_sync) == SyncReply(error=E.rebalance_in_progress)
    h.release_writes()
    group = h.group()
    assert group.state is S.PREPARING_REBALANCE and not h.answered(rejoin)
    assert all(m.assignment == b"" for m in group.members.values())


# -- the Heartbeat table ---------------------------------------------------------------------------

def test_heartbeat_unknown_group():
    """Heartbeat for a missing group is UNKNOWN_MEMBER_ID."""
    h = Harness()
    assert h.heartbeat("member-id", 1) is E.unknown_member_id


def test_heartbeat_invalid_group_id():
    """Heartbeat with an empty group id is INVALID_GROUP_ID."""
    h = Harness()
    assert h.heartbeat("member-id", 1, group="") is E.invalid_group_id


def test_heartbeat_dead_group():
    """Heartbeat to a Dead group is COORDINATOR_NOT_AVAILABLE."""
    h = Harness()
    [member] = h.stable_group(None)
    h.group().transition_to(S.DEAD, h.now)
    assert h.heartbeat(member, 1) is E.coordinator_not_available


def test_heartbeat_empty_group():
    """Heartbeat to an Empty group is UNKNOWN_MEMBER_ID, even from a (forced) member."""
    h = Harness()
    h.add_member("member-id")
    assert h.heartbeat("member-id", 0) is E.unknown_member_id
    assert h.session_deadline("member-id") is None


def test_heartbeat_unknown_member_existing_group():
    """Heartbeat from an unknown member id is UNKNOWN_MEMBER_ID."""
    h = Harness()
    h.stable_group(None)
    assert h.heartbeat("unknown-member", 1) is E.unknown_member_id


def test_heartbeat_during_preparing_rebalance():
    """During PreparingRebalance the answer is REBALANCE_IN_PROGRESS, and the session is kept."""
    h = Harness()
    leader, follower = h.stable_group(None, None)
    h.join(member_id=leader)
    h.advance(4000)
    assert h.heartbeat(follower, 1) is E.rebalance_in_progress
    assert h.session_deadline(follower) == 14_000


def test_heartbeat_during_completing_rebalance():
    """During CompletingRebalance a member of the generation gets NONE; the session is kept."""
    h = Harness()
    token = h.join_dynamic()
    h.advance(0)
    member = h.reply(token).member_id
    h.advance(3000)
    assert h.heartbeat(member, 1) is E.none
    assert h.session_deadline(member) == 13_000


def test_heartbeat_illegal_generation():
    """Heartbeat for another generation is ILLEGAL_GENERATION."""
    h = Harness()
    [member] = h.stable_group(None)
    assert h.heartbeat(member, 2) is E.illegal_generation
    assert h.heartbeat(member, 0) is E.illegal_generation


def test_a_rebalance_is_logged_with_the_clients_own_reason(caplog):
    """KIP-800: JoinGroup v8+ carries why the client rejoined; the rebalance log line says it
    next to the coordinator's reason, as Kafka's does."""
    h = Harness()
    leader, = h.stable_group(None)
    with caplog.at_level(logging.INFO, logger="roster.coordinator"):
        h.apply(h.coordinator.join(JoinRequest(
            group_id="g", member_id=leader, group_instance_id=None, protocol_type="consumer",
            protocols=PROTOCOLS, session_timeout_ms=10_000, rebalance_timeout_ms=30_000,
            reason="cached metadata has changed", api_version=9, token=h.token()), h.now))
    assert any("preparing to rebalance group g" in r.getMessage() and
               f"leader {leader} rejoins a Stable group (client reason: cached metadata has "
               "changed)" in r.getMessage() for r in caplog.records), caplog.text
