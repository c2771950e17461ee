"""roster's coordinator watches what classic consumer groups subscribe to (issue 17, part 1):
a subscribed topic that gains partitions, appears, disappears or is recreated starts a rebalance
("metadata changed") on the next member heartbeat, leader or not; a static leader rejoining with
a new id (KIP-814) is not told to keep an outdated assignment. group.coordinator.metadata.watch
off: Kafka's behaviour, nothing happens."""
from roster.coordinator.consumer.model import DictTopicImage
from roster.coordinator.classic.metadata_watch import CHECK_INTERVAL_MS
from roster.coordinator.classic.states import GroupState
from roster.coordinator.classic.timers import join_key
from roster.protocol.consumer_protocol import Subscription, encode_subscription
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.harness import Harness

S = GroupState
E = ErrorCode
ID_A, ID_B, ID_A2 = b"a" * 16, b"b" * 16, b"A" * 16


def subscribing(*topics: str):
    return (("range", encode_subscription(Subscription(topics=topics))),)


def watched_group(*instances, topics=("orders",), catalog=None, session_ms=10_000, **config):
    h = Harness(**config)
    image = DictTopicImage(catalog if catalog is not None else {"orders": (ID_A, 3)})
    h.coordinator.topics = image
    ids = h.stable_group(*instances, protocols=subscribing(*topics), session_ms=session_ms)
    return h, image, ids


def test_a_topic_that_gains_partitions_rebalances_the_group_on_a_follower_heartbeat():
    # the leader's session outlasts the rebalance timeout: it is away, not gone
    h, image, (leader, follower) = watched_group("i-a", "i-b", session_ms=60_000)
    assert h.group().watched == {"orders": (ID_A, 3)}
    image.topics["orders"] = (ID_A, 6)
    # the note is compared at most once a second per group
    assert h.heartbeat(follower, 1, "i-b") is E.none
    h.advance(CHECK_INTERVAL_MS)
    assert h.heartbeat(follower, 1, "i-b") is E.rebalance_in_progress
    group = h.group()
    assert group.state is S.PREPARING_REBALANCE
    # the leader is away: the join phase waits for it as for any rebalance (static: kept)
    assert h.deadline(join_key("g")) == h.now + 30_000
    rejoin = h.join(member_id=follower, instance="i-b", protocols=subscribing("orders"),
                    session_ms=60_000)
    h.advance(30_000)
    reply = h.replies[rejoin]
    assert reply.generation == 2 and reply.leader == follower   # the follower now leads
    assert set(group.members) == {leader, follower}                # the static leader kept
    assert group.watched == {"orders": (ID_A, 6)}                  # noted for generation 2


def test_a_subscribed_topic_that_appears_is_deleted_or_recreated_rebalances():
    for change, after in (("appears", {"orders": (ID_A, 3), "audit": (ID_B, 1)}),
                          ("deleted", {}),
                          ("recreated", {"orders": (ID_A2, 3)})):
        h, image, (leader, follower) = watched_group(None, None, topics=("orders", "audit"))
        image.topics.clear()
        image.topics.update(after)
        h.advance(CHECK_INTERVAL_MS)
        assert h.heartbeat(follower, 1) is E.rebalance_in_progress, change


def test_unchanged_or_unsubscribed_topics_do_not_rebalance():
    h, image, (leader, follower) = watched_group(None, None)
    image.topics["other"] = (ID_B, 5)   # nobody subscribes to it
    for _ in range(3):
        h.advance(CHECK_INTERVAL_MS)
        assert h.heartbeat(follower, 1) is E.none
        assert h.heartbeat(leader, 1) is E.none
    assert h.group().state is S.STABLE


def test_the_setting_off_is_kafkas_behaviour():
    h, image, (leader, follower) = watched_group(None, None, metadata_watch=False)
    assert h.group().watched is None
    image.topics["orders"] = (ID_A, 6)
    h.advance(CHECK_INTERVAL_MS)
    assert h.heartbeat(follower, 1) is E.none
    assert h.group().state is S.STABLE


def test_other_protocol_types_are_not_watched():
    h = Harness()
    h.coordinator.topics = DictTopicImage({"orders": (ID_A, 3)})
    token = h.join(instance="i-a", protocol_type="connect", protocols=subscribing("orders"))
    h.advance(0)
    assert h.replies[token].error is E.none and h.group().watched is None


def test_a_static_leader_rejoining_after_a_change_gets_a_rebalance_not_skip_assignment():
    h, image, (leader, follower) = watched_group("i-a", "i-b")
    image.topics["orders"] = (ID_A, 6)   # before any heartbeat noticed it
    token = h.join(instance="i-a", protocols=subscribing("orders"))   # restarted: no member id
    group = h.group()
    assert group.state is S.PREPARING_REBALANCE and not h.answered(token)
    follower_join = h.join(member_id=follower, instance="i-b", protocols=subscribing("orders"))
    reply = h.replies[token]
    assert reply.generation == 2 and not reply.skip_assignment and reply.members
    assert h.replies[follower_join].generation == 2


def test_a_static_leader_rejoining_without_a_change_keeps_the_generation():
    h, image, (leader, follower) = watched_group("i-a", "i-b")
    token = h.join(instance="i-a", protocols=subscribing("orders"))
    assert h.replies[token].skip_assignment and h.replies[token].generation == 1


def test_a_loaded_group_is_noted_at_load():
    h, image, (leader, follower) = watched_group("i-a", "i-b")
    fresh = h.restarted()
    fresh.coordinator.topics = image
    fresh.apply(fresh.coordinator.groups_loaded(["g"], fresh.now))
    assert fresh.group().watched == {"orders": (ID_A, 3)}
    image.topics["orders"] = (ID_A, 4)
    fresh.advance(CHECK_INTERVAL_MS)
    assert fresh.heartbeat(follower, 1, "i-b") is E.rebalance_in_progress


def test_an_emptied_group_forgets_its_note():
    h, image, (leader, follower) = watched_group(None, None)
    h.leave((leader, None), (follower, None))
    assert h.group().state is S.EMPTY and h.group().watched is None
