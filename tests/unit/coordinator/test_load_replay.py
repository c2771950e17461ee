"""Loading `__consumer_offsets` (Kafka's GroupMetadataManager load): replaying the written records into a
fresh coordinator rebuilds the groups; groups_loaded (Kafka's onLoaded) then starts every
member's session and rebalances groups above group.max.size."""
import pytest

from roster.coordinator.messages import JoinReply, SyncReply
from roster.coordinator.classic.states import GroupState
from roster.coordinator.classic.timers import join_key
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    Record,
    UnknownRecord,
)
from tests.unit.coordinator.harness import Harness

S = GroupState
E = ErrorCode


def group_record(members=2, rebalance_timeout=9000, session_timeout=6000, leader="member-0"):
    return Record(GroupKey("g"), GroupValue(
        "consumer", 1, "range", leader, 1234, tuple(
            MemberValue(f"member-{i}", f"instance-{i}", f"client-{i}", f"/host-{i}",
                        rebalance_timeout, session_timeout, b"subscription", b"\x02")
            for i in range(members))))


def loaded(*records, **config) -> Harness:
    h = Harness(**config)
    for record in records:
        h.shard.replay(record, h.now)
    return h


@pytest.mark.parametrize("rebalance_timeout, expected", [(-1, 6000), (9000, 9000)])
def test_replay_group_metadata_records(rebalance_timeout, expected):
    """A group record becomes a Stable group with its generation, protocol, leader, members,
    static map and assignments; a rebalance timeout of -1 means the session timeout."""
    h = loaded(group_record(rebalance_timeout=rebalance_timeout))
    group = h.group()
    assert (group.state, group.previous_state, group.generation) == (S.STABLE, S.DEAD, 1)
    assert (group.protocol_type, group.protocol_name, group.leader_id) == \
        ("consumer", "range", "member-0")
    assert group.state_timestamp == 1234
    assert group.static_members == {"instance-0": "member-0", "instance-1": "member-1"}
    for i, member in enumerate(group.members.values()):
        assert (member.member_id, member.group_instance_id, member.client_id,
                member.client_host) == (f"member-{i}", f"instance-{i}", f"client-{i}",
                                        f"/host-{i}")
        assert (member.rebalance_timeout_ms, member.session_timeout_ms) == (expected, 6000)
        assert member.protocols == (("range", b"subscription"),)
        assert member.assignment == b"\x02" and not h.group().joining
    assert h.timers == {}


def test_replayed_records_rebuild_stable_groups_with_same_members_assignments_and_static_map():
    """Whatever a live coordinator wrote, a restarted one rebuilds: same generation, leader,
    protocol, members (with instance ids and timeouts), assignments and offsets."""
    h = Harness()
    a, b, c = h.stable_group("i-a", None, "i-b", session_ms=7000, rebalance_ms=8000)
    h.reply(h.join(instance="i-b"))  # a static replacement in Stable writes a record too
    h.commit({("t", 0): 42}, member_id=a, generation=1)
    h.stable_group(None, group="other")
    live = h.coordinator.groups
    restarted = h.restarted().coordinator.groups
    assert set(restarted) == {"g", "other"}
    for group_id, before in live.items():
        after = restarted[group_id]
        assert after.state is S.STABLE and before.state is S.STABLE
        assert (after.generation, after.leader_id, after.protocol_type, after.protocol_name) == \
            (before.generation, before.leader_id, before.protocol_type, before.protocol_name)
        assert after.static_members == before.static_members
        assert list(after.members) == list(before.members)
        for member_id, member in before.members.items():
            again = after.members[member_id]
            assert (again.group_instance_id, again.assignment, again.session_timeout_ms,
                    again.rebalance_timeout_ms, again.client_id, again.client_host) == \
                (member.group_instance_id, member.assignment, member.session_timeout_ms,
                 member.rebalance_timeout_ms, member.client_id, member.client_host)
            assert again.protocols == ((before.protocol_name,
                                        member.metadata(before.protocol_name)),)
    assert restarted["g"].static_members == {"i-a": a, "i-b": live["g"].static_members["i-b"]}
    assert h.restarted().offsets() == h.offsets() and h.offsets()[("t", 0)].offset == 42


def test_replay_creation_record_gives_an_empty_group_without_protocol_type():
    """The record written when a group is created loads as an Empty group with no type."""
    h = Harness()
    h.join(instance="i-a")  # creates the group; the join phase has not completed
    group = h.restarted().group()
    assert (group.state, group.generation, group.protocol_type, group.members) == \
        (S.EMPTY, 0, None, {})


def test_replay_emptied_group_record_keeps_generation_and_protocol_type():
    """A group that emptied loads as Empty, with its last generation and its protocol type."""
    h = Harness()
    [member] = h.stable_group(None)
    h.leave((member, None))
    assert h.group().state is S.EMPTY and h.group().generation == 2
    group = h.restarted().group()
    assert (group.state, group.generation, group.protocol_type, group.protocol_name,
            group.leader_id) == (S.EMPTY, 2, "consumer", None, None)


def test_replay_tombstones_and_offsets_without_a_group():
    """Offsets alone make a simple group; tombstones remove offsets and groups; unknown record
    types are skipped."""
    h = loaded(
        Record(OffsetKey("g", "t", 0), OffsetValue(5, 3, "m", 100)),
        Record(OffsetKey("g", "t", 1), OffsetValue(6, -1, "", 100)),
        Record(UnknownRecord(99), None),
        Record(OffsetKey("g", "t", 1), None))
    group = h.group()
    assert (group.state, group.protocol_type, group.members) == (S.EMPTY, None, {})
    assert list(h.offsets()) == [("t", 0)] and h.offsets()[("t", 0)].leader_epoch == 3
    h.shard.replay(group_record())
    assert list(h.offsets()) == [("t", 0)]  # a group record leaves the offsets alone
    # a group's tombstone takes the group, not its offsets (Kafka keeps them apart: a group
    # converted to a consumer group keeps its offsets)
    h.shard.replay(Record(GroupKey("g"), None))
    assert h.group() is None and list(h.offsets()) == [("t", 0)]
    h.shard.replay(Record(OffsetKey("g", "t", 0), None))
    assert h.offsets() == {}


def test_on_loaded_schedules_classic_group_member_heartbeats():
    """Replay arms nothing; groups_loaded (Kafka's onLoaded) starts every member's session
    now, so a member that never returns is removed one session later and one that heartbeats
    stays."""
    h = loaded(group_record(session_timeout=6000))
    h.now = 500
    assert h.timers == {}
    h.apply(h.coordinator.groups_loaded(["g", "not-loaded"], h.now))
    assert h.session_deadline("member-0") == \
        h.session_deadline("member-1") == 6500
    assert h.group().state is S.STABLE
    h.advance(3000)
    assert h.heartbeat("member-1", 1, instance="instance-1") is E.none
    h.advance(3000)
    group = h.group()
    assert list(group.members) == ["member-1"] and group.leader_id == "member-1"
    assert group.static_members == {"instance-1": "member-1"}
    assert group.state is S.PREPARING_REBALANCE  # not an initial rebalance: previous was Dead
    assert h.deadline(join_key("g")) == 6500 + 9000


def test_on_loaded_exceed_group_max_size_triggers_rebalance():
    """A loaded group above group.max.size rebalances at once, and that rebalance refuses the
    members beyond the limit when they rejoin."""
    h = loaded(group_record(members=2), max_size=1)
    group = h.group()
    assert group.state is S.STABLE and len(group.members) == 2
    h.apply(h.coordinator.groups_loaded(["g"], h.now))
    assert group.state is S.PREPARING_REBALANCE and len(group.members) == 2
    assert h.deadline(join_key("g")) == 9000
    first = h.join(member_id="member-0", instance="instance-0", session_ms=6000,
                   rebalance_ms=9000)
    second = h.join(member_id="member-1", instance="instance-1", session_ms=6000,
                    rebalance_ms=9000)
    assert h.reply(second) == JoinReply(error=E.group_max_size_reached)
    assert list(group.members) == ["member-0"] and group.static_members == \
        {"instance-0": "member-0"}
    h.advance(9000)
    assert h.reply(first).generation == 2 and len(h.reply(first).members) == 1


def test_loaded_group_within_max_size_stays_stable():
    """groups_loaded rebalances only groups above group.max.size."""
    h = loaded(group_record(members=2), max_size=2)
    h.apply(h.coordinator.groups_loaded(["g"], h.now))
    assert h.group().state is S.STABLE and h.deadline(join_key("g")) is None


def test_static_member_restarting_after_a_load_keeps_its_assignment():
    """A static member that rejoins with "" after a coordinator failover is replaced without a
    rebalance and gets the assignment stored in the log."""
    h = Harness()
    leader, follower = h.stable_group("i-a", "i-b")
    after = h.restarted()
    reply = after.reply(after.join(instance="i-b"))
    new = after.group().static_members["i-b"]
    assert (reply.error, reply.generation, reply.leader, reply.member_id) == \
        (E.none, 1, leader, new)
    assert after.group().state is S.STABLE
    assert after.reply(after.sync(new, 1, instance="i-b")) == SyncReply(
        protocol_type="consumer", protocol_name="range",
        assignment=f"assignment-of-{follower}".encode())
    assert after.heartbeat(leader, 1, instance="i-a") is E.none
