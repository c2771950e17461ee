"""Issue 22, part 1: a rebalance the metadata watch starts does not wait for static members that
are away (coordinator/classic/away.py). Three static members (session 20 s, rebalance timeout 5 min, as
with confluent-kafka's defaults); the leader dies at time 0 and the topic then grows. Kafka would
do nothing until the leader's session ends; the watch rebalances, and must not then hold every
survivor in the join phase for the rebalance timeout."""
from roster.coordinator.consumer.model import DictTopicImage
from roster.coordinator.classic.states import GroupState
from roster.coordinator.classic.timers import away_key
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.harness import Harness
from tests.unit.coordinator.test_metadata_watch import ID_A, subscribing

S = GroupState
E = ErrorCode
SESSION_MS = 20_000
REBALANCE_MS = 300_000
AWAY_MS = SESSION_MS // 3          # silent this long: away
JOIN = dict(protocols=subscribing("orders"), session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS)


def dead_leader_and_grown_topic(watch: bool = True, instances=("i-a", "i-b", "i-c")):
    """A Stable group of three (static unless `instances` says None) at time 0 whose leader
    then falls silent; at 3 s the followers heartbeat and the topic grows from 3 to 6
    partitions. Returns (harness, leader, followers)."""
    h = Harness(metadata_watch=watch)
    image = DictTopicImage({"orders": (ID_A, 3)})
    h.coordinator.topics = image
    leader, *followers = h.stable_group(*instances, **JOIN)
    h.advance(3000)
    for follower, instance in zip(followers, instances[1:]):
        assert h.heartbeat(follower, 1, instance) is E.none
    image.topics["orders"] = (ID_A, 6)
    return h, leader, followers


def rejoin(h: Harness, member_id: str, instance: str):
    assert h.heartbeat(member_id, 1, instance) is E.rebalance_in_progress
    return h.join(member_id=member_id, instance=instance, **JOIN)


def test_the_join_phase_completes_without_the_dead_static_leader_within_a_third_of_its_session():
    h, leader, (f1, f2) = dead_leader_and_grown_topic()
    h.advance(1000)                                   # 4 s: a follower's heartbeat notices
    joins = [rejoin(h, f1, "i-b"), rejoin(h, f2, "i-c")]
    group = h.group()
    assert group.state is S.PREPARING_REBALANCE and not h.answered(*joins)
    # the leader was last heard from at 0: away from a third of its session on
    assert h.deadline(away_key("g")) == AWAY_MS
    h.advance(AWAY_MS - h.now - 1)
    assert not h.answered(*joins)
    h.advance(1)
    replies = [h.replies[t] for t in joins]
    assert [r.generation for r in replies] == [2, 2]
    new_leader = replies[0].leader
    assert new_leader in (f1, f2)                          # a member that rejoined leads
    led = next(r for r in replies if r.member_id == new_leader)
    # the leader assigns around the away member: it is listed with the subscription it sent
    assert {m.member_id for m in led.members} == {leader, f1, f2}
    assert dict((m.member_id, m.metadata) for m in led.members)[leader] == \
        subscribing("orders")[0][1]
    # reserved, not expected: no SyncGroup awaited, its session still counts from 0
    assert leader not in group.pending_sync
    assert h.session_deadline(leader) == SESSION_MS
    assert h.deadline(away_key("g")) is None and group.away is None


def stable_without_the_leader():
    """The generation formed without the dead leader, synced by the two survivors."""
    h, leader, (f1, f2) = dead_leader_and_grown_topic()
    h.advance(1000)
    joins = [rejoin(h, f1, "i-b"), rejoin(h, f2, "i-c")]
    h.advance(AWAY_MS - h.now)
    new_leader = h.replies[joins[0]].leader
    plan = {leader: b"reserved-for-a", f1: b"for-b", f2: b"for-c"}
    for member_id in (f1, f2):
        token = h.sync(member_id, 2, plan.items() if member_id == new_leader else ())
        assert h.replies[token].error is E.none
    assert h.group().state is S.STABLE and h.group().generation == 2
    return h, leader, (f1, f2)


def test_the_away_member_back_within_its_session_gets_its_reserved_assignment_without_a_rebalance():
    for version in (9, 7):    # confluent-kafka (KIP-814) and kafka-python (JoinGroup v7)
        h, leader, _ = stable_without_the_leader()
        h.advance(5000)                                    # restarted, well within its session
        token = h.join(instance="i-a", version=version, **JOIN)
        reply = h.replies[token]
        assert reply.error is E.none and reply.generation == 2, version
        assert reply.leader != reply.member_id and not reply.skip_assignment
        sync = h.replies[h.sync(reply.member_id, 2, instance="i-a")]
        assert sync.error is E.none and sync.assignment == b"reserved-for-a"
        assert h.group().state is S.STABLE and h.group().generation == 2


def test_the_away_members_session_then_ends_and_the_group_rebalances_as_kafkas_would():
    h, leader, (f1, f2) = stable_without_the_leader()
    h.advance(SESSION_MS - h.now - 1)
    assert h.group().state is S.STABLE and leader in h.group().members
    h.advance(1)                                          # 20 s after it was last heard from
    group = h.group()
    assert leader not in group.members and group.state is S.PREPARING_REBALANCE
    joins = [h.join(member_id=m, instance=i, **JOIN) for m, i in ((f1, "i-b"), (f2, "i-c"))]
    assert [h.replies[t].generation for t in joins] == [3, 3]
    assert group.away is None


def test_a_live_member_that_was_heard_from_is_waited_for():
    h, leader, (f1, f2) = dead_leader_and_grown_topic()
    h.advance(1000)
    first = rejoin(h, f1, "i-b")
    h.advance(1500)                                       # 5.5 s: told, slow to rejoin
    assert h.heartbeat(f2, 1, "i-c") is E.rebalance_in_progress
    h.advance(AWAY_MS + 1000 - h.now)                     # the leader is away by now
    assert h.group().away == {leader: None} and not h.answered(first)
    second = h.join(member_id=f2, instance="i-c", **JOIN)
    assert h.replies[first].generation == h.replies[second].generation == 2


def test_an_away_member_that_rejoins_with_its_member_id_is_waited_for_again():
    h, leader, (f1, f2) = dead_leader_and_grown_topic()
    h.advance(1000)
    first = rejoin(h, f1, "i-b")
    assert h.heartbeat(f2, 1, "i-c") is E.rebalance_in_progress
    h.advance(AWAY_MS - h.now)
    assert h.group().away == {leader: None}
    back = h.join(member_id=leader, instance="i-a", **JOIN)   # only paused, not dead
    assert h.group().away == {} and not h.answered(first, back)
    second = h.join(member_id=f2, instance="i-c", **JOIN)
    replies = [h.replies[t] for t in (back, first, second)]
    assert [r.generation for r in replies] == [2, 2, 2] and replies[0].leader == leader
    assert leader in h.group().pending_sync               # joined: expected to sync


def test_other_rebalances_wait_for_an_away_static_member_as_kafkas_do():
    h, leader, (f1, f2) = dead_leader_and_grown_topic(watch=False)
    h.advance(1000)
    assert h.heartbeat(f1, 1, "i-b") is E.none            # nobody watches: Kafka
    h.force_rebalance()
    joins = [h.join(member_id=m, instance=i, **JOIN) for m, i in ((f1, "i-b"), (f2, "i-c"))]
    h.advance(SESSION_MS - 1 - h.now)
    assert not h.answered(*joins) and h.group().away is None
    h.advance(1)                                          # only its session's end frees them
    assert [h.replies[t].generation for t in joins] == [2, 2]
    assert leader not in h.group().members


def test_a_dead_dynamic_member_does_not_hold_the_watchs_rebalance_either():
    # Kafka's survivors keep consuming until a dead dynamic member's session ends; the watch's
    # rebalance must not stall them that long
    h, leader, (f1, f2) = dead_leader_and_grown_topic(instances=(None, None, None))
    h.advance(1000)
    joins = []
    for follower in (f1, f2):
        assert h.heartbeat(follower, 1) is E.rebalance_in_progress
        joins.append(h.join(member_id=follower, **JOIN))
    h.advance(AWAY_MS - h.now)
    replies = [h.replies[t] for t in joins]
    assert [r.generation for r in replies] == [2, 2]
    led = next(r for r in replies if r.member_id == r.leader)
    assert {m.member_id for m in led.members} == {leader, f1, f2}   # kept, as away
    group = h.group()
    assert leader not in group.pending_sync and h.session_deadline(leader) == SESSION_MS
    for follower in (f1, f2):
        h.sync(follower, 2, {leader: b"kept", f1: b"b", f2: b"c"}.items()
               if follower == led.member_id else ())
    h.advance(SESSION_MS - h.now)                        # its session ends: as in Kafka
    assert leader not in group.members and group.state is S.PREPARING_REBALANCE
