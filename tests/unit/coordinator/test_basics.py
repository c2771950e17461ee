"""First scenarios: a group forms, heartbeats keep it, a leave rebalances it."""
from roster.coordinator.classic.states import GroupState
from roster.coordinator.classic.timers import join_key, sync_key
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.harness import Harness


def test_dynamic_member_needs_a_member_id_first():
    h = Harness()
    first = h.join()
    reply = h.reply(first)
    assert reply.error is ErrorCode.member_id_required and reply.member_id.startswith("client-")
    assert h.session_deadline(reply.member_id) == 10_000  # pending-member expiry
    assert h.group().state is GroupState.EMPTY


def test_two_members_form_a_stable_group():
    h = Harness()
    a, b = h.stable_group(None, None)
    group = h.group()
    assert group.state is GroupState.STABLE and group.generation == 1
    assert group.leader_id == a
    assert group.members[b].assignment == f"assignment-of-{b}".encode()
    assert h.records[-1].value.generation == 1
    assert {m.member_id for m in h.records[-1].value.members} == {a, b}
    assert h.session_deadline(a) == 10_000
    assert h.deadline(sync_key("g")) is None  # everyone synced: the pending-sync timer is gone


def test_heartbeats_keep_a_member_and_silence_evicts_it():
    h = Harness()
    a, b = h.stable_group(None, None)
    h.advance(9_000)
    assert h.heartbeat(a, 1) is ErrorCode.none
    assert h.session_deadline(a) == 19_000  # re-armed by the heartbeat
    h.advance(1_000)  # b's session (10 s since the sync) lapses now
    group = h.group()
    assert b not in group.members and group.state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(a, 1) is ErrorCode.rebalance_in_progress
    reply = h.reply(h.join(member_id=a))
    assert (reply.generation, reply.leader, len(reply.members)) == (2, a, 1)


def test_leave_triggers_rebalance_and_remaining_member_rejoins():
    h = Harness()
    a, b = h.stable_group(None, None)
    answer = h.leave((b, None))
    assert answer.members[0].error is ErrorCode.none
    assert h.group().state is GroupState.PREPARING_REBALANCE
    assert h.deadline(join_key("g")) == 30_000
    assert h.heartbeat(a, 1) is ErrorCode.rebalance_in_progress
    token = h.join(member_id=a)
    reply = h.reply(token)  # everyone left has rejoined: completes at once
    assert reply.error is ErrorCode.none and reply.generation == 2 and reply.leader == a


def test_static_member_rejoin_in_stable_group_keeps_assignment_without_rebalance():
    h = Harness()
    a, b = h.stable_group("i-a", "i-b")
    token = h.join(instance="i-b")  # restarted: no member id
    reply = h.reply(token)
    assert reply.error is ErrorCode.none and reply.generation == 1
    assert reply.member_id != b and not reply.skip_assignment
    group = h.group()
    assert group.state is GroupState.STABLE and group.generation == 1
    sync = h.reply(h.sync(reply.member_id, 1, instance="i-b"))
    assert sync.assignment == f"assignment-of-{b}".encode()
    # the old id is fenced
    assert h.heartbeat(b, 1, instance="i-b") is ErrorCode.fenced_instance_id


def test_static_leader_rejoin_gets_skip_assignment_at_v9():
    h = Harness()
    a, b = h.stable_group("i-a", "i-b")
    reply = h.reply(h.join(instance="i-a", version=9))
    assert reply.skip_assignment and reply.leader == reply.member_id
    assert {m.group_instance_id for m in reply.members} == {"i-a", "i-b"}
    old = h.reply(h.join(instance="i-a", version=5))
    assert not old.skip_assignment and old.leader == reply.member_id and old.members == ()


def test_offsets_commit_and_fetch():
    h = Harness()
    assert h.commit({("t", 0): 42}).errors == (("t", 0, ErrorCode.none),)
    fetched = h.shard.fetch_offsets("g", [("t", 0), ("t", 1)])
    assert [(f.offset) for f in fetched] == [42, -1]


def test_a_protocol_named_twice_by_one_member_counts_once():
    """Kafka's JoinGroup protocols are a multi-collection, so a member may list a name twice;
    Kafka keeps a member's protocols as a set of names. Counting the name twice made the group
    find no protocol every member supports, and its join phase raised instead of completing
    (found by the live fuzzer)."""
    h = Harness()
    doubled = (("range", b"first"), ("range", b"second"))
    a, b = h.stable_group(None, None, protocols=doubled)
    group = h.group()
    assert group.state is GroupState.STABLE and group.protocol_name == "range"
    assert group.members[a].metadata("range") == b"first"  # the first listed wins, as in Kafka
    # one member changing to a plain list still finds "range" supported by everyone
    reply = h.reply(h.join(member_id=b, protocols=(("range", b"plain"),)))
    assert reply is None or reply.error is ErrorCode.none
