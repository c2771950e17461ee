"""KIP-848 (ConsumerGroupHeartbeat) group stories, Kafka beside roster. Where Kafka works
asynchronously (assignments after a metadata or regex change) the trace holds the converged
state, reached by heartbeats kept out of the trace."""
from __future__ import annotations

import time

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.differential.members import ClassicMember, Kip848Member, form_alone


def converge_pair(a: Kip848Member, b: Kip848Member) -> None:
    """a joins and takes everything; b joins and gets nothing yet; a is told to revoke b's share
    and acknowledges it on its next heartbeat; then b receives it."""
    a.heartbeat()
    b.heartbeat()
    a.heartbeat()
    a.heartbeat()
    b.heartbeat()


def a_group_of_each_protocol(s) -> tuple[str, str]:
    """A consumer group "modern" with one KIP-848 member and a classic group "classic" with one
    classic member, both Stable on one topic."""
    topic = s.topic("t", 1)
    modern, classic = s.name("modern"), s.name("classic")
    Kip848Member(s, "a", modern, (topic,)).heartbeat()
    form_alone(ClassicMember(s, "old", classic, (topic,)), topic, 1)
    return modern, classic


def converged_pair(s, partitions: int, static: bool = False):
    """A topic, a group and two members a and b that have split it (converge_pair)."""
    topic = s.topic("t", partitions)
    group = s.name("g")
    a = Kip848Member(s, "a", group, (topic,), instance_id="ia" if static else None)
    b = Kip848Member(s, "b", group, (topic,), instance_id="ib" if static else None)
    converge_pair(a, b)
    return topic, group, a, b


def describe(s, group: str) -> None:
    s.conn("admin").call(ApiKey.CONSUMER_GROUP_DESCRIBE, keep=("groups",), group_ids=[group])


@scenario(outcome="""the first member gets its first epoch and every partition; a second member gets
the next epoch and nothing until the first acknowledges the revocation of its share on its
next heartbeats; then the second receives it; ConsumerGroupDescribe shows both at the group
epoch with their assignments""")
def test_kip848_joining(s):
    topic, group, a, b = converged_pair(s, 4)
    a.heartbeat()
    describe(s, group)


@scenario(outcome="""a static member leaving with epoch -2 keeps its place; a new incarnation
with the same instance id and a new member id joins at epoch 0 and gets the same assignment
and epoch back with no new group epoch; the other member's heartbeat sees no change""")
def test_kip848_static_bounce(s):
    topic, group, a, b = converged_pair(s, 2, static=True)
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
    topic, group, a, b = converged_pair(s, 2)
    a.heartbeat(epoch=a.epoch + 5)
    a.heartbeat(epoch=a.epoch - 1)
    ghost = Kip848Member(s, "ghost", group, (topic,))
    ghost.heartbeat(epoch=3)
    a.heartbeat()
    b.heartbeat()


@scenario(outcome="""a member subscribed by regex gets the partitions of every matching topic
and none of the others; a matching topic created later is added to its assignment""")
def test_kip848_regex_subscription(s):
    s.topic("r1", 2)
    s.topic("r2", 1)
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


def alter_group_config(s, group: str, **values: str | None) -> None:
    """IncrementalAlterConfigs on the GROUP resource (type 32): SET, or DELETE for None."""
    s.conn("admin").call(ApiKey.INCREMENTAL_ALTER_CONFIGS, keep=("responses",), resources=[{
        "resource_type": 32, "resource_name": group, "configs": [
            {"name": key.replace("_", "."), "config_operation": 0 if value is not None else 1,
             "value": value} for key, value in values.items()]}])


def describe_group_config(s, group: str, *names: str) -> None:
    answer = s.conn("admin").call(ApiKey.DESCRIBE_CONFIGS, resources=[{
        "resource_type": 32, "resource_name": group, "configuration_keys": list(names)}],
        include_synonyms=False, include_documentation=False)
    for result in answer.results:
        s.note("group configs", error=int(result.error_code), configs=sorted(
            (c.name, c.value, bool(c.read_only), int(c.config_source)) for c in result.configs))


@scenario(outcome="""group configs: consumer.session.timeout.ms and
consumer.heartbeat.interval.ms set on a group are described back (source: dynamic group
config) and the heartbeat interval reaches the members; values outside the broker's bounds and
unknown names get INVALID_CONFIG; a deleted config falls back to the broker default;
consumer.assignment.interval.ms outside its bounds and consumer.assignor.offload.enable not a
boolean get INVALID_CONFIG with Kafka's messages, and valid values are described back""")
def test_kip848_group_configs(s):
    topic = s.topic("t", 1)
    group = s.name("g")
    alter_group_config(s, group, consumer_session_timeout_ms="5000",
                       consumer_heartbeat_interval_ms="1000")
    describe_group_config(s, group, "consumer.session.timeout.ms",
                          "consumer.heartbeat.interval.ms")
    a = Kip848Member(s, "a", group, (topic,))
    a.heartbeat()
    alter_group_config(s, group, consumer_session_timeout_ms="10")
    alter_group_config(s, group, consumer_session_timeout_ms="0")
    alter_group_config(s, group, consumer_heartbeat_interval_ms="-5")
    alter_group_config(s, group, consumer_session_timeout_ms="999999999")
    alter_group_config(s, group, no_such_config="1")
    alter_group_config(s, group, consumer_heartbeat_interval_ms=None)
    describe_group_config(s, group, "consumer.heartbeat.interval.ms")
    a.heartbeat()
    # Kafka 4.4's assignment settings, taken and bounded as Kafka takes them
    alter_group_config(s, group, consumer_assignment_interval_ms="20000")
    alter_group_config(s, group, consumer_assignment_interval_ms="-1")
    alter_group_config(s, group, consumer_assignor_offload_enable="maybe")
    alter_group_config(s, group, consumer_assignment_interval_ms="0",
                       consumer_assignor_offload_enable="true")
    describe_group_config(s, group, "consumer.assignment.interval.ms",
                          "consumer.assignor.offload.enable")


@scenario(outcome="""a KIP-848 member that stops heartbeating is removed after the group's
consumer.session.timeout.ms (2 s, within [1750, 4500] ms) and the survivor is given its
partitions at a new epoch""")
def test_kip848_session_expiry(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    alter_group_config(s, group, consumer_session_timeout_ms="2000",
                       consumer_heartbeat_interval_ms="500")
    a = Kip848Member(s, "a", group, (topic,))
    b = Kip848Member(s, "b", group, (topic,))
    converge_pair(a, b)
    silent_since = time.monotonic()
    s.wait(lambda: a.heartbeat(traced=False) is not None and a.owned_count() == 2,
           "the survivor owns both partitions", 15)
    s.timed("b expired", time.monotonic() - silent_since, 1750, 4500)
    a.heartbeat()
    b.heartbeat()
    describe(s, group)


@scenario(outcome="""OffsetCommit v9 from a KIP-848 member carries its member epoch: the
current epoch commits; the previous one commits a partition the member owned then; a newer one
gets STALE_MEMBER_EPOCH, an unknown member id UNKNOWN_MEMBER_ID; an admin commit (no member,
epoch -1) to a group with members gets UNKNOWN_MEMBER_ID; OffsetFetch v9 with the member's id
and epoch reads the offsets back, with a stale epoch STALE_MEMBER_EPOCH""")
def test_kip848_offset_commit_epochs(s):
    topic, group, a, b = converged_pair(s, 2)
    conn = a.conn

    def commit(member_id: str, epoch: int) -> None:
        conn.call(ApiKey.OFFSET_COMMIT, keep=("topics",), group_id=group,
                  generation_id_or_member_epoch=epoch, member_id=member_id, topics=[
                      {"name": topic, "partitions": [{"partition_index": 0,
                                                      "committed_offset": 3,
                                                      "committed_metadata": ""}]}])

    def fetch(member_id: str | None, epoch: int) -> None:
        conn.call(ApiKey.OFFSET_FETCH, keep=("groups",), require_stable=True, groups=[
            {"group_id": group, "member_id": member_id, "member_epoch": epoch,
             "topics": [{"name": topic, "partition_indexes": [0, 1]}]}])

    commit(a.member_id, a.epoch)
    commit(a.member_id, a.epoch - 1)
    commit(a.member_id, a.epoch + 1)
    commit("stranger-member-id-000", a.epoch)
    commit("", -1)
    fetch(a.member_id, a.epoch)
    fetch(a.member_id, a.epoch - 1)
    fetch(None, -1)


@scenario(outcome="""DescribeGroups (the classic API) on a consumer-protocol group and
ConsumerGroupDescribe on a classic group: each API answers for the other protocol's group as
Kafka does (errors, states and protocol types in the trace)""")
def test_kip848_cross_protocol_describes(s):
    modern, classic = a_group_of_each_protocol(s)
    s.describe(modern)
    s.describe(classic)
    describe(s, classic)
    describe(s, s.name("nobody"))


@scenario(outcome="""a KIP-848 member told to revoke partitions that keeps heartbeating without
releasing them is fenced when its rebalance timeout (2 s, within [1750, 4500] ms) runs out:
it is removed from the group (its next heartbeat gets UNKNOWN_MEMBER_ID) and the other member
is given everything at a new epoch""")
def test_kip848_rebalance_timeout(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = Kip848Member(s, "a", group, (topic,), rebalance_ms=2000)
    b = Kip848Member(s, "b", group, (topic,))
    a.heartbeat()
    b.heartbeat()
    held = list(a.owned)
    a.heartbeat()            # told to revoke one partition
    told_at = time.monotonic()
    a.owned = held           # ...and keeps claiming both

    def a_still_in() -> bool:
        answer = a.heartbeat(traced=False)
        if int(answer.error_code) != 0:
            return False
        a.owned = held
        return True

    s.wait(lambda: not a_still_in(), "the member holding partitions is fenced", 15)
    s.timed("a fenced", time.monotonic() - told_at, 1750, 4500)
    a.heartbeat()
    b.converge(2)
    describe(s, group)


@scenario(outcome="""a static KIP-848 member that left with epoch -2 and does not come back is
removed when its session timeout (group config, 2 s, within [1750, 4500] ms) runs out; the
other member is then given its partitions""")
def test_kip848_static_member_expiry(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    alter_group_config(s, group, consumer_session_timeout_ms="2000",
                       consumer_heartbeat_interval_ms="500")
    a = Kip848Member(s, "a", group, (topic,), instance_id="ia")
    b = Kip848Member(s, "b", group, (topic,), instance_id="ib")
    converge_pair(a, b)
    b.leave(static=True)
    left_at = time.monotonic()
    s.wait(lambda: a.heartbeat(traced=False) is not None and a.owned_count() == 2,
           "the remaining member owns both partitions", 15)
    s.timed("b removed", time.monotonic() - left_at, 1750, 4500)
    a.heartbeat()
    describe(s, group)


@scenario(outcome="""an admin LeaveGroup naming two static KIP-848 members by group.instance.id
(Admin.removeMembersFromConsumerGroup) removes both in one change: the member left sees the
group epoch move by one, and gets their partitions""")
def test_kip848_remove_two_members_by_instance_id(s):
    topic = s.topic("t", 3)
    group = s.name("g")
    members = [Kip848Member(s, who, group, (topic,), instance_id=f"i{who}") for who in "abc"]
    a, b, c = members
    for member in members:
        member.heartbeat()
    a.converge(1)
    b.converge(1)
    c.converge(1)
    s.conn("admin").call(ApiKey.LEAVE_GROUP, keep=("members",), group_id=group, members=[
        {"member_id": "", "group_instance_id": "ib", "reason": "admin removal"},
        {"member_id": "", "group_instance_id": "ic", "reason": "admin removal"}])
    a.converge(3)
    a.heartbeat()
    describe(s, group)


@scenario(outcome="""DescribeGroups v6 (KIP-1043) answers a group that does not exist and a consumer
group alike, GROUP_ID_NOT_FOUND in state Dead, each with its own message ("Group X not found."
and "Group X is not a classic group."); a classic group is described""")
def test_kip848_describe_groups_v6_errors(s):
    modern, classic = a_group_of_each_protocol(s)
    s.conn("admin").call(ApiKey.DESCRIBE_GROUPS, 6, keep=("groups",),
                         groups=[modern, classic, s.name("nobody")])


# regular expressions RE2 refuses, one of each kind of error RE2/J names
BAD_REGEXES = ("(unclosed", "(?=t).*", "a)", "[z-a]", "x**", "a\\", "a{2,1}", "a{1001}", "[a",
               "\\8", "*a", "[[:foo:]]", "\\pX", "(?P<1>a)", "(?i", "a{,2}**")


@scenario(outcome="""ConsumerGroupHeartbeat's request checks, in Kafka 4.4's errors and words:
an empty member id, an empty group id, a joining member without a rebalance timeout or a
subscription, regexes RE2/J cannot compile (INVALID_REGULAR_EXPRESSION, each with RE2/J's
description of what is wrong), an unknown server assignor, a static leave (epoch -2) without
an instance id, an empty instance id, a leave, a static leave and a heartbeat at epoch 5 to a
group that does not exist; an empty topic name in the subscription and both names and a regex
at once are accepted""")
def test_kip848_request_checks(s):
    topic = s.topic("t", 1)
    group = s.name("g")
    conn = s.conn("checks")

    def heartbeat(label, **fields):
        request = {"group_id": group, "member_id": f"member-{label}", "member_epoch": 0,
                   "instance_id": None, "rack_id": None, "rebalance_timeout": 30000,
                   "subscribed_topic_names": [topic], "subscribed_topic_regex": None,
                   "server_assignor": None, "topic_partitions": []}
        request.update(fields)
        answer = conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, keep=("error_message",),
                           **request)
        s.note(label, member_epoch_positive=answer.member_epoch > 0)

    heartbeat("empty member id", member_id="")
    heartbeat("empty group id", group_id="")
    heartbeat("no rebalance timeout", rebalance_timeout=-1)
    heartbeat("no subscription", subscribed_topic_names=None)
    for regex in BAD_REGEXES:
        heartbeat(f"regex {regex}", subscribed_topic_names=None, subscribed_topic_regex=regex)
    heartbeat("unknown assignor", server_assignor="nope")
    heartbeat("static leave without instance", member_epoch=-2)
    nobody = s.name("nobody")     # a group that never exists
    heartbeat("leave of a stranger", group_id=nobody, member_epoch=-1)
    heartbeat("a stranger at epoch 5", group_id=nobody, member_epoch=5)
    heartbeat("static leave of a stranger", group_id=nobody, member_epoch=-2, instance_id="i")
    classic = s.name("classic")   # a classic group with a member: not a consumer group
    form_alone(ClassicMember(s, "old", classic, (topic,)), topic, 1)
    heartbeat("a stranger at epoch 5 on a classic group", group_id=classic, member_epoch=5)
    heartbeat("a leave on a classic group", group_id=classic, member_epoch=-1)
    heartbeat("empty instance id", instance_id="")
    heartbeat("empty topic name", subscribed_topic_names=[""])
    heartbeat("names and regex", subscribed_topic_regex="t.*")
    heartbeat("right", member_id="member-right")


@scenario(outcome="""consumer groups at their edges: a regex matching an internal topic
(__consumer_offsets) and a topic resolves to both, and the member is assigned the internal
topic's partitions too, as Kafka 4.4 assigns them; members asking for different
server assignors: the group uses (and ConsumerGroupDescribe names) the one most of them ask
for, a tie going to "uniform" over "range" """)
def test_kip848_group_edges(s):
    topic = s.topic("t", 2)
    # the regex matches __consumer_offsets (5 partitions) and the topic (2): Kafka 4.4
    # resolves it against every topic, internal ones included, so the member gets all 7
    internal = Kip848Member(s, "internal", s.name("internal"),
                            regex="__consumer_offs.*|" + topic.replace(".", "\\."))
    s.wait(lambda: internal.heartbeat(traced=False) is not None
           and internal.owned_count() == 7, "the regex member owns 7 partitions")
    s.note("assigned by regex", partitions=internal.owned_count())
    group = s.name("assignors")
    conn = s.conn("assignors")
    for who, assignor in (("r1", "range"), ("u1", "uniform"), ("r2", "range")):
        conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, keep=("error_message",), group_id=group,
                  member_id=f"member-{who}", member_epoch=0, instance_id=None, rack_id=None,
                  rebalance_timeout=30000, subscribed_topic_names=[topic],
                  subscribed_topic_regex=None, server_assignor=assignor, topic_partitions=[])
        answer = s.conn("admin", traced=False).call(
            ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=[group])
        s.note(f"after {who}", assignor=answer.groups[0].assignor_name)


@scenario(outcome="""a KIP-848 member that sends epoch 0 again under its own member id (a client
that lost its state) is answered as Kafka answers it, and so is the other member; OffsetFetch v9
naming several groups at once (a consumer group, one that does not exist, an empty id, the same
group twice) answers each as Kafka does, in Kafka's order""")
def test_kip848_rejoin_and_multi_group_fetch(s):
    topic, group, a, b = converged_pair(s, 2)
    a.owned = []
    a.epoch = 0
    a.heartbeat()
    b.heartbeat()
    a.heartbeat()
    b.heartbeat()
    a.conn.call(ApiKey.OFFSET_COMMIT, 9, keep=("topics",), group_id=group,
                generation_id_or_member_epoch=a.epoch, member_id=a.member_id,
                group_instance_id=None, topics=[{"name": topic, "partitions": [
                    {"partition_index": p, "committed_offset": 7, "committed_leader_epoch": -1,
                     "committed_metadata": "m"} for p in (0, 1)]}])
    fetch_groups = [group, s.name("nobody"), "", group]
    s.conn("admin").call(ApiKey.OFFSET_FETCH, 9, keep=("groups",), require_stable=False,
                         groups=[{"group_id": g, "member_id": None, "member_epoch": -1,
                                  "topics": None} for g in fetch_groups])
