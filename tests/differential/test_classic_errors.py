"""The classic protocol's refusals, Kafka beside roster: group.max.size, session timeouts out
of bounds, unknown members, illegal generations, protocol mismatches."""
from __future__ import annotations

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.differential.members import ClassicMember, form_alone, form_pair, split


@scenario(outcome="""with group.max.size=16, a group of sixteen forms in one rebalance; a
seventeenth member's joins get GROUP_MAX_SIZE_REACHED (no member id handed out) while the
sixteen stay stable""")
def test_classic_group_max_size(s):
    topic = s.topic("t", 1)
    group = s.name("g")
    members = [ClassicMember(s, f"m{i:02}", group, (topic,)) for i in range(17)]
    first, late = members[0], members[16]
    form_alone(first, topic, 1)
    for member in members[1:16]:
        member.send_join()
        member.finish_join()
        member.send_join()
    s.wait_state(group, "PreparingRebalance")
    first.send_join()
    for member in members[:16]:
        member.finish_join()
    late.send_join()
    late.finish_join()
    late.send_join()
    late.finish_join()
    first.sync(split([first], topic, 1))
    first.heartbeat()


@scenario(outcome="""JoinGroup with a session timeout below group.min.session.timeout.ms (1000)
or above group.max.session.timeout.ms (300000) gets INVALID_SESSION_TIMEOUT; the bounds
themselves are accepted""")
def test_classic_invalid_session_timeouts(s):
    topic = s.topic("t", 1)
    for who, session_ms in (("low", 999), ("high", 300001), ("min", 1000), ("max", 300000)):
        member = ClassicMember(s, who, s.name(who), (topic,), session_ms=session_ms)
        member.send_join()
        member.finish_join()


@scenario(outcome="""Heartbeat, SyncGroup, LeaveGroup and OffsetCommit from a member id the
group does not know get UNKNOWN_MEMBER_ID; a Heartbeat to a group that does not exist gets
UNKNOWN_MEMBER_ID too""")
def test_classic_unknown_member(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = ClassicMember(s, "a", group, (topic,))
    form_alone(a, topic, 2)
    stranger = ClassicMember(s, "stranger", group, (topic,))
    stranger.member_id, stranger.generation = "stranger-0000", a.generation
    stranger.heartbeat()
    stranger.sync()
    stranger.commit(topic, {0: 1})
    stranger.leave()
    nowhere = ClassicMember(s, "nowhere", s.name("missing"), (topic,))
    nowhere.member_id, nowhere.generation = "nowhere-0000", 1
    nowhere.heartbeat()
    a.heartbeat()


@scenario(outcome="""a member sending a generation other than the group's gets
ILLEGAL_GENERATION on Heartbeat, SyncGroup and OffsetCommit; with the right one, NONE""")
def test_classic_illegal_generation(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = ClassicMember(s, "a", group, (topic,))
    form_alone(a, topic, 2)
    right = a.generation
    a.generation = right + 1
    a.heartbeat()
    a.sync()
    a.commit(topic, {0: 3})
    a.generation = right
    a.commit(topic, {0: 3})
    a.heartbeat()


@scenario(outcome="""a member whose protocol type or protocols match none of the group's gets
INCONSISTENT_GROUP_PROTOCOL; an empty group id gets INVALID_GROUP_ID""")
def test_classic_inconsistent_protocol(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = ClassicMember(s, "a", group, (topic,))
    form_alone(a, topic, 2)
    other_type = ClassicMember(s, "connect", group, (topic,), protocol_type="connect")
    other_type.send_join()
    other_type.finish_join()
    other_assignor = ClassicMember(s, "rr", group, (topic,), protocols=("roundrobin",))
    other_assignor.send_join()
    other_assignor.finish_join()
    if other_assignor.member_id:
        other_assignor.send_join()
        other_assignor.finish_join()
    unnamed = ClassicMember(s, "unnamed", "", (topic,))
    unnamed.send_join()
    unnamed.finish_join()
    a.heartbeat()


@scenario(outcome="""the classic requests' member checks on a Stable group of a static leader
and a dynamic follower: SyncGroup naming another protocol type or protocol name, or the
other's instance id; Heartbeat naming an instance id the group does not know, or another
member's; JoinGroup with a member id the group never gave out, or a known member id with
another instance id; LeaveGroup v0 of a member the group does not know; DescribeGroups while
the group waits for its SyncGroups (CompletingRebalance): each answered with Kafka's errors,
and the group unharmed""")
def test_classic_member_checks(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    leader = ClassicMember(s, "leader", group, (topic,), instance_id="leader-1")
    follower = ClassicMember(s, "follower", group, (topic,))
    form_pair(leader, follower, topic, 2)
    conn = s.conn("checks")

    def sync(label, **fields):
        request = {"group_id": group, "generation_id": follower.generation,
                   "member_id": follower.member_id, "group_instance_id": None,
                   "protocol_type": "consumer", "protocol_name": "range", "assignments": []}
        request.update(fields)
        conn.call(ApiKey.SYNC_GROUP, 5, keep=("assignment",), **request)
        s.note(label)

    sync("another protocol type", protocol_type="connect")
    sync("another protocol name", protocol_name="roundrobin")
    sync("the leader's instance id", group_instance_id="leader-1")
    sync("an unknown instance id", group_instance_id="nobody-1")
    for label, member_id, instance_id in (
            ("heartbeat with an unknown instance id", follower.member_id, "nobody-1"),
            ("heartbeat with the leader's instance id", follower.member_id, "leader-1"),
            ("heartbeat of the leader without its instance id", leader.member_id, None)):
        conn.call(ApiKey.HEARTBEAT, 4, group_id=group, generation_id=leader.generation,
                  member_id=member_id, group_instance_id=instance_id)
        s.note(label)
    stranger = ClassicMember(s, "stranger", group, (topic,))
    stranger.member_id = "never-given-out"
    stranger.send_join()
    stranger.finish_join()
    impostor = ClassicMember(s, "impostor", group, (topic,), instance_id="other-1")
    impostor.member_id = leader.member_id
    impostor.send_join()
    impostor.finish_join()
    conn.call(ApiKey.LEAVE_GROUP, 0, group_id=group, member_id="never-given-out")
    leader.heartbeat()
    follower.heartbeat()
    # a rebalance: both rejoin; the group waits for SyncGroup while it is described
    leader.send_join("checks")
    s.wait_state(group, "PreparingRebalance")
    follower.heartbeat()
    follower.send_join()
    leader.finish_join()
    follower.finish_join()
    conn.call(ApiKey.DESCRIBE_GROUPS, 5, keep=("groups",), groups=[group],
              include_authorized_operations=False)
    follower.send_sync()
    leader.sync(split([leader, follower], topic, 2))
    follower.finish_sync()
    conn.call(ApiKey.DESCRIBE_GROUPS, 5, keep=("groups",), groups=[group],
              include_authorized_operations=False)
