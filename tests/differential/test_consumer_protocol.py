"""KIP-848 (ConsumerGroupHeartbeat) group stories, Kafka beside roster. Where Kafka works
asynchronously (assignments after a metadata or regex change) the trace holds the converged
state, reached by heartbeats kept out of the trace."""
from __future__ import annotations

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.differential.members import Kip848Member


def describe(s, group: str) -> None:
    s.conn("admin").call(ApiKey.CONSUMER_GROUP_DESCRIBE, keep=("groups",), group_ids=[group])


@scenario(outcome="""the first member gets epoch 1 and every partition; a second member gets
the next epoch and nothing until the first acknowledges the revocation of its share on its
next heartbeats; then the second receives it; ConsumerGroupDescribe shows both at the group
epoch with their assignments""")
def test_kip848_joining(s):
    topic = s.topic("t", 4)
    group = s.name("g")
    a = Kip848Member(s, "a", group, (topic,))
    b = Kip848Member(s, "b", group, (topic,))
    a.heartbeat()
    b.heartbeat()
    a.heartbeat()    # revocation of b's share
    a.heartbeat()    # acknowledges it
    b.heartbeat()    # receives it
    a.heartbeat()
    describe(s, group)


@scenario(outcome="""a static member leaving with epoch -2 keeps its place; a new incarnation
with the same instance id and a new member id joins at epoch 0 and gets the same assignment
and epoch back with no new group epoch; the other member's heartbeat sees no change""")
def test_kip848_static_bounce(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = Kip848Member(s, "a", group, (topic,), instance_id="ia")
    b = Kip848Member(s, "b", group, (topic,), instance_id="ib")
    a.heartbeat()
    b.heartbeat()
    a.heartbeat()
    a.heartbeat()
    b.heartbeat()
    b.leave(static=True)
    a.heartbeat()
    again = Kip848Member(s, "b2", group, (topic,), instance_id="ib")
    again.heartbeat()
    a.heartbeat()
    describe(s, group)


@scenario(outcome="""a second member claiming an instance id still held by a live member gets
UNRELEASED_INSTANCE_ID; after the holder leaves for good (epoch -1) the claim succeeds""")
def test_kip848_unreleased_instance_id(s):
    topic = s.topic("t", 1)
    group = s.name("g")
    a = Kip848Member(s, "a", group, (topic,), instance_id="shared")
    a.heartbeat()
    rival = Kip848Member(s, "rival", group, (topic,), instance_id="shared")
    rival.heartbeat()
    a.leave()
    rival.heartbeat()


@scenario(outcome="""a heartbeat with an epoch ahead of the member's, or behind it without
the owned partitions that would show a lost answer, gets FENCED_MEMBER_EPOCH; an unknown member
id with a non-zero epoch gets UNKNOWN_MEMBER_ID; the member with its own epoch carries on""")
def test_kip848_fenced_member_epoch(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = Kip848Member(s, "a", group, (topic,))
    b = Kip848Member(s, "b", group, (topic,))
    a.heartbeat()
    b.heartbeat()
    a.heartbeat()    # revokes one partition
    a.heartbeat()    # acknowledges: the next epoch
    a.heartbeat(epoch=a.epoch + 5)
    a.heartbeat(epoch=a.epoch - 1)
    ghost = Kip848Member(s, "ghost", group, (topic,))
    ghost.heartbeat(epoch=3)
    a.heartbeat()
    b.heartbeat()


@scenario(outcome="""a member subscribed by regex gets the partitions of every matching topic
and none of the others; a matching topic created later is added to its assignment""")
def test_kip848_regex_subscription(s):
    r1, r2 = s.topic("r1", 2), s.topic("r2", 1)
    s.topic("other", 1)
    group = s.name("g")
    a = Kip848Member(s, "a", group, regex=s.name("r.*").replace(".", "\\.", 1))
    a.heartbeat(traced=False)
    a.converge(3)
    describe(s, group)
    s.topic("r3", 2)
    a.converge(5)
    describe(s, group)


@scenario(outcome="""after CreatePartitions grows a subscribed topic from 2 to 4 partitions the
member's assignment grows to 4 at a new group epoch""")
def test_kip848_create_partitions(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = Kip848Member(s, "a", group, (topic,))
    a.heartbeat()
    s.conn("admin").call(ApiKey.CREATE_PARTITIONS, keep=("results",), timeout=30000,
                         topics=[{"name": topic, "count": 4, "assignments": None}])
    a.converge(4)
    describe(s, group)
