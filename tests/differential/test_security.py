"""ACL refusals (Kafka's StandardAuthorizer; roster's, named after it) and SASL/SCRAM failures,
against the secure peers: SASL_PLAINTEXT, users admin (super user), alice and bob."""
from __future__ import annotations

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.differential.members import ClassicMember, Kip848Member
from tests.support.kafka_peer import SECURE_USERS

TOPIC, GROUP = 2, 3                  # AclResourceType
LITERAL = 3                          # PatternType
READ, DESCRIBE = 3, 8                # AclOperation
ALLOW = 3                            # AclPermissionType


def grant(s, principal: str, resource_type: int, name: str, operation: int) -> None:
    """CreateAcls as admin, then wait until DescribeAcls shows the binding (Kafka applies it
    through its metadata log after answering)."""
    binding = {"resource_type": resource_type, "resource_name": name,
               "resource_pattern_type": LITERAL, "principal": principal, "host": "*",
               "operation": operation, "permission_type": ALLOW}
    s.conn("admin").call(ApiKey.CREATE_ACLS, keep=("results",), creations=[binding])
    admin = s.conn("setup", traced=False)

    def visible() -> bool:
        answer = admin.call(ApiKey.DESCRIBE_ACLS, resource_type_filter=resource_type,
                            resource_name_filter=name, pattern_type_filter=LITERAL,
                            principal_filter=principal, host_filter=None,
                            operation=operation, permission_type=ALLOW)
        return bool(answer.resources)

    s.wait(visible, f"the ACL for {principal} on {name}")


def as_alice_everything(s, who: str, group: str, topic: str) -> None:
    member = ClassicMember(s, who, group, (topic,))
    member.conn = s.conn(who, user="alice")
    member.send_join()
    member.finish_join()
    member.commit(topic, {0: 1})
    conn = member.conn
    conn.call(ApiKey.OFFSET_FETCH, keep=("groups",), groups=[
        {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}])
    conn.call(ApiKey.DESCRIBE_GROUPS, keep=("groups",), groups=[group])
    conn.call(ApiKey.FIND_COORDINATOR, key_type=0, coordinator_keys=[group])
    conn.call(ApiKey.DELETE_GROUPS, keep=("results",), groups_names=[group])
    conn.call(ApiKey.METADATA, topics=[{"name": topic}], allow_auto_topic_creation=False)
    answer = conn.call(ApiKey.LIST_GROUPS, states_filter=[], types_filter=[])
    s.note("alice lists", groups=sorted(g.group_id for g in answer.groups
                                        if g.group_id.startswith(s.name(""))))
    kip848 = Kip848Member(s, who + "-848", group, (topic,))
    kip848.conn = s.conn(who + "-848", user="alice")
    kip848.heartbeat()


@scenario(secure=True, outcome="""alice without ACLs: JoinGroup, OffsetCommit, OffsetFetch,
DescribeGroups, FindCoordinator, DeleteGroups and ConsumerGroupHeartbeat get
GROUP_AUTHORIZATION_FAILED, Metadata TOPIC_AUTHORIZATION_FAILED and ListGroups hides the group;
with READ on the group only, her commit gets TOPIC_AUTHORIZATION_FAILED per partition; with
READ on the topic too, it succeeds""")
def test_acl_refusals(s):
    topic = s.topic("t", 1)
    group = s.name("g")
    owner = ClassicMember(s, "owner", group, (topic,))
    owner.join()
    owner.leave()
    as_alice_everything(s, "alice", group, topic)
    grant(s, "User:alice", GROUP, group, READ)
    as_alice_everything(s, "alice-group-read", group, topic)
    grant(s, "User:alice", TOPIC, topic, READ)
    committer = ClassicMember(s, "alice-both", group, (topic,))
    committer.conn = s.conn("alice-both", user="alice")
    committer.commit(topic, {0: 7})


@scenario(secure=True, outcome="""SCRAM-SHA-256 and SCRAM-SHA-512 logins with a wrong
password get SASL_AUTHENTICATION_FAILED after the client's proof, with Kafka's message, and
the connection is closed; a mechanism the listener does not offer gets
UNSUPPORTED_SASL_MECHANISM with the offered list; a good login works""")
def test_scram_failures(s):
    for who, user, password, mechanism in (
            ("wrong-256", "alice", "nope", "SCRAM-SHA-256"),
            ("wrong-512", "alice", "nope", "SCRAM-SHA-512"),
            ("nobody", "mallory", "nope", "SCRAM-SHA-256"),
            ("good", "alice", SECURE_USERS["alice"], "SCRAM-SHA-512")):
        conn = s.anonymous(who, traced=False)
        seen = conn.authenticate(user, password, mechanism)
        s.note(f"{who} login", **seen,
               closed=None if seen["accepted"] else conn.closed_by_peer(5.0))
    gssapi = s.anonymous("gssapi")
    gssapi.call(ApiKey.SASL_HANDSHAKE, 1, keep=("mechanisms",), mechanism="GSSAPI")


@scenario(secure=True, outcome="""ConsumerGroupDescribe of a consumer group whose assignment
names a topic the caller may not DESCRIBE (KAFKA-18813): with DESCRIBE on the group alone, the
group answers TOPIC_AUTHORIZATION_FAILED without its members; with DESCRIBE on the topic too,
the group is described whole, though its member also subscribes to a topic that does not exist
(and so is assigned nothing of it) and the caller may not DESCRIBE that one; the member's
subscribed topic names are described sorted, not in the order it sent them""")
def test_consumer_group_describe_needs_describe_on_the_assigned_topics(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    owner = Kip848Member(s, "owner", group, (topic, s.name("not-there")))
    owner.converge(2)
    grant(s, "User:alice", GROUP, group, DESCRIBE)
    alice = s.conn("alice", user="alice")
    alice.call(ApiKey.CONSUMER_GROUP_DESCRIBE, keep=("groups",), group_ids=[group],
               include_authorized_operations=True)
    grant(s, "User:alice", TOPIC, topic, DESCRIBE)
    alice.call(ApiKey.CONSUMER_GROUP_DESCRIBE, keep=("groups",), group_ids=[group])


@scenario(secure=True, outcome="""a member subscribed by regex whose principal may DESCRIBE
only one of the two matching topics is assigned that topic's partitions alone: the regex
resolves to the topics the member whose heartbeat resolved it may describe (KAFKA-18813)""")
def test_consumer_group_regex_resolves_to_the_describable_topics(s):
    seen = s.topic("r-seen", 2)
    s.topic("r-hidden", 1)
    group = s.name("g")
    grant(s, "User:alice", GROUP, group, READ)
    grant(s, "User:alice", TOPIC, seen, DESCRIBE)
    member = Kip848Member(s, "alice", group, regex=s.name("r-.*").replace(".", "\\.", 1))
    member.conn = s.conn("alice", user="alice")
    member.quiet = s.conn("alice", traced=False, user="alice")
    member.heartbeat(traced=False)
    member.converge(2)
    s.conn("admin").call(ApiKey.CONSUMER_GROUP_DESCRIBE, keep=("groups",), group_ids=[group])
