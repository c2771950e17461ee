"""Classic-protocol group stories (docs/groups.md) against Kafka and roster, driven by raw
JoinGroup/SyncGroup/Heartbeat/LeaveGroup requests as a Java consumer sends them."""
from __future__ import annotations

import time

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.differential.members import ClassicMember, form_pair, split


@scenario(outcome="""first join answered MEMBER_ID_REQUIRED then generation 1 as leader; a second
member's join parks the group in PreparingRebalance, the first sees REBALANCE_IN_PROGRESS on
its heartbeat, both rejoin into generation 2 with the first as leader, and sync their plan""")
def test_classic_eager_formation(s):
    topic = s.topic("t", 4)
    group = s.name("g")
    a = ClassicMember(s, "a", group, (topic,))
    b = ClassicMember(s, "b", group, (topic,))
    form_pair(a, b, topic, 4, heartbeat_first=True)
    a.heartbeat()
    b.heartbeat()


@scenario(outcome="""cooperative rebalance in two rounds: the owner rejoins with its owned
partitions and generation (KIP-792 subscription v3), gives up the revoked half in generation 2,
and the newcomer receives it in generation 3; nobody else sees an error""")
def test_classic_cooperative_formation(s):
    topic = s.topic("t", 4)
    group = s.name("g")
    coop = ("cooperative-sticky",)
    a = ClassicMember(s, "a", group, (topic,), protocols=coop)
    b = ClassicMember(s, "b", group, (topic,), protocols=coop)
    a.join()
    a.sync({a: {topic: (0, 1, 2, 3)}})
    b.join_until_parked(s)
    a.heartbeat()
    a.send_join()            # carries owned partitions and generation 1
    a.finish_join()
    b.finish_join()
    b.send_sync()
    a.sync({a: {topic: (0, 2)}, b: {topic: ()}})   # revoke 1, 3 first
    b.finish_sync()
    a.send_join()            # the revoking member asks for the second round at once
    a.finish_join()
    b.heartbeat()            # REBALANCE_IN_PROGRESS
    b.send_join()
    b.finish_join()
    b.send_sync()
    a.sync({a: {topic: (0, 2)}, b: {topic: (1, 3)}})
    b.finish_sync()
    s.describe(group)


def static_group(s, count: int, topic: str, session_ms: int = 10000):
    group = s.name("g")
    members = [ClassicMember(s, f"s{i}", group, (topic,), instance_id=f"instance-{i}",
                             session_ms=session_ms) for i in range(count)]
    members[0].join()
    members[0].sync(split(members[:1], topic, 4))
    for newcomer in members[1:]:
        newcomer.send_join()
        s.wait_state(group, "PreparingRebalance")
        joined = [m for m in members if m.member_id and m is not newcomer]
        for m in joined:
            m.send_join()
        for m in [*joined, newcomer]:
            m.finish_join()
        ready = [*joined, newcomer]
        for m in ready[1:]:
            m.send_sync()
        ready[0].sync(split(ready, topic, 4))
        for m in ready[1:]:
            m.finish_sync()
    return group, members


@scenario(outcome="""three static members; each is restarted in turn with only its
group.instance.id: a follower gets the current generation back without a rebalance and syncs
its old assignment; the leader gets its member list with skip_assignment (KIP-814); the others'
heartbeats see no error throughout""")
def test_classic_static_rolling_bounce(s):
    topic = s.topic("t", 4)
    group, members = static_group(s, 3, topic)
    for bounced in reversed(members):   # followers first, the leader last
        bounced.reconnect()
        bounced.join()
        bounced.sync(split(members, topic, 4) if bounced.leader else None)
        for other in members:
            if other is not bounced:
                other.heartbeat()
    s.describe(group)


@scenario(outcome="""a static member restarted elsewhere takes over its instance id; the old
incarnation's Heartbeat, SyncGroup, OffsetCommit and JoinGroup get FENCED_INSTANCE_ID""")
def test_classic_fencing(s):
    topic = s.topic("t", 4)
    group, (a, b) = static_group(s, 2, topic)
    old_id, generation = b.member_id, b.generation
    b.reconnect()
    b.join()
    b.sync()
    zombie = ClassicMember(s, "zombie", group, (topic,), instance_id=b.instance_id)
    zombie.member_id, zombie.generation = old_id, generation
    zombie.heartbeat()
    zombie.sync()
    zombie.commit(topic, {0: 5})
    zombie.send_join()
    zombie.finish_join()
    a.heartbeat()
    b.heartbeat()


@scenario(outcome="""a member that stops heartbeating is removed after its session timeout
(2 s, within [1750, 4500] ms); the survivor's heartbeat then sees REBALANCE_IN_PROGRESS and it
rejoins alone into the next generation""")
def test_classic_session_expiry(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = ClassicMember(s, "a", group, (topic,), session_ms=10000)
    b = ClassicMember(s, "b", group, (topic,), session_ms=2000)
    form_pair(a, b, topic, 2)
    b.heartbeat()
    silent_since = time.monotonic()
    quiet = ClassicMember(s, "a-quiet", group, (topic,))   # a's heartbeats, kept out of the trace
    quiet.conn = s.conn("a", traced=False)
    quiet.member_id, quiet.generation = a.member_id, a.generation
    s.wait(lambda: quiet.heartbeat() == 27, "the survivor sees REBALANCE_IN_PROGRESS", 15)
    s.timed("b expired", time.monotonic() - silent_since, 1750, 4500)
    a.heartbeat()
    a.send_join()
    a.finish_join()
    a.sync(split([a], topic, 2))
    s.describe(group)


@scenario(outcome="""a member that keeps heartbeating but does not rejoin during a rebalance is
dropped when the rebalance timeout (2 s, within [1500, 4500] ms of the newcomer joining) ends;
the others' parked joins complete into the next generation and the late member's heartbeat
gets UNKNOWN_MEMBER_ID""")
def test_classic_rebalance_timeout(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = ClassicMember(s, "a", group, (topic,), rebalance_ms=2000)
    b = ClassicMember(s, "b", group, (topic,), rebalance_ms=2000)
    c = ClassicMember(s, "c", group, (topic,), rebalance_ms=2000)
    form_pair(a, b, topic, 2)
    c.join_until_parked(s)
    started = time.monotonic()
    a.send_join()
    b.heartbeat()            # REBALANCE_IN_PROGRESS, and b never rejoins
    a.finish_join()
    c.finish_join()
    s.timed("rebalance completed without b", time.monotonic() - started, 1500, 4500)
    b.heartbeat()
    s.describe(group)


@scenario(outcome="""an admin LeaveGroup naming a static member by group.instance.id (no member
id) removes it and starts a rebalance; an unknown instance id gets UNKNOWN_MEMBER_ID in its
member entry""")
def test_classic_remove_by_instance_id(s):
    topic = s.topic("t", 4)
    group, (a, b) = static_group(s, 2, topic)
    admin = s.conn("admin")
    admin.call(ApiKey.LEAVE_GROUP, keep=("members",), group_id=group, members=[
        {"member_id": "", "group_instance_id": b.instance_id, "reason": "admin removal"},
        {"member_id": "", "group_instance_id": "instance-unknown"}])
    a.heartbeat()
    b.heartbeat()
    s.describe(group)


@scenario(outcome="""KIP-814: a static leader restarted with the same subscription gets the
member list back with skip_assignment and the same generation, and its followers keep
heartbeating without error; restarted again with a changed subscription it gets the same
answer, and the group stays in its generation""")
def test_classic_kip814_leader_restart(s):
    topic, other = s.topic("t", 4), s.topic("u", 2)
    group, members = static_group(s, 2, topic)
    leader, follower = members
    leader.reconnect()
    leader.join()
    leader.sync(split(members, topic, 4))
    follower.heartbeat()
    leader.reconnect()
    leader.topics = (topic, other)
    leader.join()
    leader.sync(split(members, topic, 4))
    follower.heartbeat()
    leader.heartbeat()
    s.describe(group)
