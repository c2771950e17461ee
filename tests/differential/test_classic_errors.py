"""The classic protocol's refusals, Kafka beside roster: group.max.size, session timeouts out
of bounds, unknown members, illegal generations, protocol mismatches."""
from __future__ import annotations

from tests.differential.harness import scenario
from tests.differential.members import ClassicMember, form_alone, split


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
