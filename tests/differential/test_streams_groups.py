"""Streams groups (KIP-1071, StreamsGroupHeartbeat v0) stories, Kafka beside roster: a member
joining with its topology, a second one taking its share once the first revoked it, a static
member's temporary leave and return, and the refusals on the way."""
from __future__ import annotations

import base64
import threading
import time
import uuid

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.differential.test_consumer_protocol import alter_group_config, describe_group_config

FIELDS = ("member_id", "member_epoch", "heartbeat_interval", "acceptable_recovery_lag",
          "status", "active_tasks", "standby_tasks", "warmup_tasks", "error_message")


class StreamsMember:
    """One stream thread of an application reading one topic through one stateless
    subtopology "0"; it acknowledges the active tasks it was given on each heartbeat."""

    def __init__(self, s, who: str, group: str, topic: str, instance_id: str | None = None):
        self.s, self.who, self.group, self.topic = s, who, group, topic
        self.instance_id = instance_id
        self.conn = s.conn(who)
        self.member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        self.epoch = 0
        self.owned: list[dict] = []

    def heartbeat(self, epoch: int | None = None, owned: bool = True,
                  keep: tuple[str, ...] = FIELDS):
        joining = self.epoch == 0 and epoch is None
        topology = None
        if joining:
            topology = {"epoch": 0, "subtopologies": [{
                "subtopology_id": "0", "source_topics": [self.topic], "source_topic_regex": [],
                "state_changelog_topics": [], "repartition_sink_topics": [],
                "repartition_source_topics": [], "copartition_groups": []}]}
        answer = self.conn.call(
            ApiKey.STREAMS_GROUP_HEARTBEAT, 0, keep=keep, group_id=self.group,
            member_id=self.member_id, member_epoch=self.epoch if epoch is None else epoch,
            endpoint_information_epoch=0, instance_id=self.instance_id, rack_id=None,
            rebalance_timeout=30000 if joining else -1, topology=topology,
            active_tasks=self.owned if owned or joining else None,
            standby_tasks=[] if owned or joining else None,
            warmup_tasks=[] if owned or joining else None,
            process_id=f"process-{self.who}" if joining else None, user_endpoint=None,
            client_tags=[] if joining else None, task_offsets=None, task_end_offsets=None,
            shutdown_application=False)
        if int(answer.error_code) == 0 and epoch is None:
            self.epoch = answer.member_epoch
            if answer.active_tasks is not None:
                self.owned = [{"subtopology_id": t.subtopology_id,
                               "partitions": list(t.partitions)} for t in answer.active_tasks]
        return answer

    def leave(self, static: bool = False):
        return self.conn.call(
            ApiKey.STREAMS_GROUP_HEARTBEAT, 0, keep=FIELDS, group_id=self.group,
            member_id=self.member_id, member_epoch=-2 if static else -1,
            endpoint_information_epoch=0, instance_id=self.instance_id, rack_id=None,
            rebalance_timeout=-1, topology=None, active_tasks=None, standby_tasks=None,
            warmup_tasks=None, process_id=None, user_endpoint=None, client_tags=None,
            task_offsets=None, task_end_offsets=None, shutdown_application=False)


def two_members(s, static: bool = False):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = StreamsMember(s, "a", group, topic, "ia" if static else None)
    b = StreamsMember(s, "b", group, topic, "ib" if static else None)
    a.heartbeat()
    b.heartbeat()
    a.heartbeat()           # told to revoke b's share
    a.heartbeat()           # it did
    b.heartbeat()           # b gets it
    return group, a, b


@scenario(outcome="""a member joining with its topology gets the first epoch and every task; a
second member gets the next epoch and nothing until the first, told to revoke its share, says
it no longer runs it; then the second receives it""")
def test_streams_joining(s):
    two_members(s)


@scenario(outcome="""a static streams member leaving with epoch -2 keeps its tasks; another
process claiming a held instance id gets UNRELEASED_INSTANCE_ID; the instance back with a new
member id at epoch 0 gets its tasks and epoch back; the other member sees no change""")
def test_streams_static_bounce(s):
    group, a, b = two_members(s, static=True)
    a.leave(static=True)
    # (its message names the member ids, which differ from run to run)
    StreamsMember(s, "x", group, a.topic, "ib").heartbeat(
        keep=tuple(f for f in FIELDS if f != "error_message"))
    back = StreamsMember(s, "a2", group, a.topic, "ia")
    back.heartbeat()
    b.heartbeat()


@scenario(outcome="""StreamsGroupDescribe v1 (Kafka 4.4, KIP-1331/KIP-1357) answers v0's group
and members, then the topology description, its status and the assignor's name: with no
description plugin configured, no description; status NOT_REQUESTED when it is not asked for and
NOT_STORED when it is; an unknown group is GROUP_ID_NOT_FOUND with the same three fields""")
def test_streams_describe_v1(s):
    group, a, b = two_members(s)
    admin = s.conn("admin")
    for include in (False, True):
        answer = admin.call(ApiKey.STREAMS_GROUP_DESCRIBE, 1, group_ids=[group, s.name("none")],
                            include_authorized_operations=False,
                            include_topology_description=include)
        s.note(f"describe v1 include_topology_description={include}", groups=[{
            "error": int(g.error_code), "message": g.error_message, "state": g.group_state,
            "members": sorted((m.process_id, [t.subtopology_id for t in m.assignment.active_tasks])
                              for m in g.members),
            "topology_description": g.topology_description,
            "topology_description_status": int(g.topology_description_status),
            "assignor_name": g.assignor_name} for g in answer.groups])


@scenario(outcome="""ApiVersions lists StreamsGroupHeartbeat and StreamsGroupDescribe at v0-1 and,
with no topology-description plugin configured, not StreamsGroupTopologyDescriptionUpdate (93)""")
def test_api_versions_of_streams_groups(s):
    answer = s.conn("admin").call(ApiKey.API_VERSIONS, 3, client_software_name="roster-tests",
                                  client_software_version="1")
    s.note("streams APIs", apis=sorted((int(a.api_key), int(a.min_version), int(a.max_version))
                                       for a in answer.api_keys if int(a.api_key) in (88, 89, 93)))


@scenario(outcome="""StreamsGroupTopologyDescriptionUpdate (93), with no topology-description
plugin configured: a member's push of its topology description is refused, for a group that
exists as for one that does not""")
def test_streams_topology_description_push(s):
    group, a, b = two_members(s)
    description = {"subtopologies": [{"subtopology_id": "0", "nodes": [
        {"name": "KSTREAM-SOURCE-0000000000", "node_type": 0, "source_topics": [a.topic],
         "sink_topic": None, "stores": [], "successors": []}]}], "global_stores": []}
    for group_id, member in ((group, a.member_id), (s.name("none"), "nobody")):
        a.conn.call(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0,
                    keep=("error_code", "error_message"), group_id=group_id, member_id=member,
                    topology_epoch=0, topology_description=description)


# every streams.* group config roster takes (Kafka 4.4 lists the last three only once set)
STREAMS_CONFIGS = ("streams.session.timeout.ms", "streams.heartbeat.interval.ms",
                   "streams.num.standby.replicas", "streams.initial.rebalance.delay.ms",
                   "streams.assignment.interval.ms", "streams.task.offset.interval.ms",
                   "streams.num.warmup.replicas", "streams.acceptable.recovery.lag")


@scenario(outcome="""streams group configs: a group lists streams.session.timeout.ms,
heartbeat.interval.ms, num.standby.replicas, initial.rebalance.delay.ms and
assignment.interval.ms from the broker's settings (the internal task.offset.interval.ms,
num.warmup.replicas and acceptable.recovery.lag only once set); values set on the group are
described back as dynamic group configs and reach the members' heartbeats (interval, recovery
lag); values outside the broker's group.streams.* bounds, below a config's minimum, not an INT,
or unknown get INVALID_CONFIG with Kafka's message; a deleted config falls back""")
def test_streams_group_configs(s):
    topic = s.topic("t", 1)
    group = s.name("g")
    describe_group_config(s, group, *STREAMS_CONFIGS)
    alter_group_config(s, group, streams_session_timeout_ms="50000",
                       streams_heartbeat_interval_ms="6000", streams_num_standby_replicas="1",
                       streams_num_warmup_replicas="3", streams_acceptable_recovery_lag="5")
    wait_group_config(s, group, "streams.acceptable.recovery.lag", "5")
    describe_group_config(s, group, *STREAMS_CONFIGS)
    member = StreamsMember(s, "a", group, topic)
    member.heartbeat()
    alter_group_config(s, group, streams_session_timeout_ms="1000")
    alter_group_config(s, group, streams_heartbeat_interval_ms="20000")
    alter_group_config(s, group, streams_num_standby_replicas="3")
    alter_group_config(s, group, streams_num_standby_replicas="-1")
    alter_group_config(s, group, streams_assignment_interval_ms="20000")
    alter_group_config(s, group, streams_initial_rebalance_delay_ms="99999999999")
    alter_group_config(s, group, streams_task_offset_interval_ms="1000")
    alter_group_config(s, group, streams_num_warmup_replicas="21")
    alter_group_config(s, group, streams_acceptable_recovery_lag="-1")
    alter_group_config(s, group, streams_session_timeout_ms="soon")
    alter_group_config(s, group, streams_no_such_config="1")
    alter_group_config(s, group, streams_heartbeat_interval_ms=None,
                       streams_acceptable_recovery_lag=None)
    describe_group_config(s, group, *STREAMS_CONFIGS)
    member.heartbeat()


# (not named streams_*: the first epoch differs in every other streams scenario, not here)
@scenario(outcome="""a streams group given its own streams.initial.rebalance.delay.ms: its
members join and heartbeat with status 5 ASSIGNMENT_DELAYED ("Assignment delayed due to the
configured initial rebalance delay.") and no tasks while the delay runs, all at the first
group epoch (1 on both brokers, where Kafka's first epoch is otherwise 2)""")
def test_delayed_streams_first_assignment(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    alter_group_config(s, group, streams_initial_rebalance_delay_ms="600000")
    a = StreamsMember(s, "a", group, topic)
    b = StreamsMember(s, "b", group, topic)
    a.heartbeat()
    b.heartbeat()
    a.heartbeat()


@scenario(outcome="""a group given its own streams.assignment.interval.ms: the first member is
assigned at once; a second joining within the interval gets status 5 ASSIGNMENT_DELAYED
("Assignment delayed due to the configured assignment interval.") and no tasks, and so does the
first on its next heartbeat""")
def test_streams_assignment_interval(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    alter_group_config(s, group, streams_assignment_interval_ms="15000")
    a = StreamsMember(s, "a", group, topic)
    b = StreamsMember(s, "b", group, topic)
    a.heartbeat()
    b.heartbeat()
    a.heartbeat()


def wait_group_config(s, group: str, name: str, value: str, timeout_s: float = 15.0) -> None:
    """Until the broker describes `name` as `value` (out of the trace): Kafka applies an
    altered group config through its metadata log, so a describe right after the answer may
    still show the old one on a loaded machine; roster's is applied before it answers."""
    conn = s.conn("waiter", traced=False)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answer = conn.call(ApiKey.DESCRIBE_CONFIGS, resources=[{
            "resource_type": 32, "resource_name": group, "configuration_keys": [name]}],
            include_synonyms=False, include_documentation=False)
        if any(c.value == value for c in answer.results[0].configs):
            return
        threading.Event().wait(0.1)
    raise AssertionError(f"{name} of {group} never described as {value}")


def raw_heartbeat(conn, keep=("error_code", "error_message"), **fields):
    """One StreamsGroupHeartbeat with `fields` over a join's defaults."""
    topic = fields.pop("topic", "t")
    request = {
        "group_id": "g", "member_id": "m", "member_epoch": 0, "endpoint_information_epoch": 0,
        "instance_id": None, "rack_id": None, "rebalance_timeout": 30000,
        "topology": {"epoch": 0, "subtopologies": [{
            "subtopology_id": "0", "source_topics": [topic], "source_topic_regex": [],
            "state_changelog_topics": [], "repartition_sink_topics": [],
            "repartition_source_topics": [], "copartition_groups": []}]},
        "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": "p",
        "user_endpoint": None, "client_tags": [], "task_offsets": None,
        "task_end_offsets": None, "shutdown_application": False}
    request.update(fields)
    return conn.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, keep=keep, **request)


@scenario(outcome="""StreamsGroupHeartbeat's request checks, in Kafka 4.4's order and words:
empty member, group, instance and rack ids; a join without a rebalance timeout, with tasks, or
without a topology; a changelog with a partition count (STREAMS_INVALID_TOPOLOGY); source topic
regular expressions; an epoch below -2, a -2 without an instance id; one task list null and
not the others; a topology after the join; a join without a process id""")
def test_request_checks_of_streams_heartbeats(s):
    topic = s.topic("t", 1)
    conn = s.conn("a")
    group = s.name("g")
    subtopology = {"subtopology_id": "0", "source_topics": [topic], "source_topic_regex": [],
                   "state_changelog_topics": [], "repartition_sink_topics": [],
                   "repartition_source_topics": [], "copartition_groups": []}
    changelog = {**subtopology, "state_changelog_topics": [
        {"name": f"{group}-store-changelog", "partitions": -1, "replication_factor": 0,
         "topic_configs": []}]}
    regex = {**subtopology, "source_topic_regex": ["t.*"]}
    for label, fields in (
            ("empty member and group", {"member_id": " ", "group_id": ""}),
            ("empty group", {"group_id": " "}),
            ("empty instance", {"instance_id": ""}),
            ("empty rack", {"rack_id": " "}),
            ("no rebalance timeout", {"rebalance_timeout": -1}),
            ("tasks at join", {"active_tasks": [{"subtopology_id": "0", "partitions": [0]}]}),
            ("no topology", {"topology": None}),
            ("changelog partitions", {"topology": {"epoch": 0, "subtopologies": [changelog]}}),
            ("regex", {"topology": {"epoch": 0, "subtopologies": [regex]}}),
            ("epoch -3", {"member_epoch": -3}),
            ("static leave without instance", {"member_epoch": -2}),
            ("one task list null", {"member_epoch": 3, "topology": None,
                                    "standby_tasks": None}),
            ("topology after joining", {"member_epoch": 3}),
            ("no process id", {"process_id": None})):
        s.note(label)
        raw_heartbeat(conn, group_id=fields.pop("group_id", group), topic=topic, **fields)


@scenario(outcome="""a lone member of a streams group whose initial rebalance delay (1 s) ends:
it waits at the first epoch with no tasks, then (heartbeating until its tasks come) is given
every task at the epoch the delay's end assigned""")
def test_a_lone_member_after_the_initial_delay(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    alter_group_config(s, group, streams_initial_rebalance_delay_ms="1000")
    a = StreamsMember(s, "a", group, topic)
    a.heartbeat()
    trace, a.conn.trace = a.conn.trace, None    # the polls' count is the clock's
    deadline = time.monotonic() + 20
    while not a.owned and time.monotonic() < deadline:
        answer = a.heartbeat()
        if not a.owned:
            threading.Event().wait(0.2)
    a.conn.trace = trace
    s.note("after the delay", member_epoch=a.epoch, status=[int(x.status_code) for x in
                                                           answer.status or ()],
           tasks=a.owned)
    a.heartbeat()


@scenario(outcome="""a streams group's assignor and rack configs: streams.assignor.name
(sticky), streams.assignor.offload.enable and streams.rack.aware.assignment.tags are described
with their defaults; an assignor that is not registered is refused in Kafka's words, sticky
taken; a non-boolean offload refused, true taken; tags taken and described back""")
def test_assignor_and_rack_configs_of_streams_groups(s):
    group = s.name("g")
    names = ("streams.assignor.name", "streams.rack.aware.assignment.tags",
             "streams.assignor.offload.enable")
    describe_group_config(s, group, *names)
    alter_group_config(s, group, streams_assignor_name="bogus")
    alter_group_config(s, group, streams_assignor_name="sticky")
    alter_group_config(s, group, streams_assignor_offload_enable="maybe")
    alter_group_config(s, group, streams_assignor_offload_enable="true")
    alter_group_config(s, group, streams_rack_aware_assignment_tags="zone,rack")
    describe_group_config(s, group, *names)


@scenario(outcome="""DescribeConfigs with an empty list of keys lists every config of a topic,
as with none""")
def test_describe_configs_with_no_keys_lists_them_all(s):
    topic = s.topic("t", 1)
    for keys in (None, []):
        answer = s.conn("admin").call(ApiKey.DESCRIBE_CONFIGS, resources=[{
            "resource_type": 2, "resource_name": topic, "configuration_keys": keys}],
            include_synonyms=False, include_documentation=False)
        s.note("listed", keys=keys, count_at_least_20=len(answer.results[0].configs) >= 20,
               has_cleanup_policy="cleanup.policy" in {c.name for c in
                                                       answer.results[0].configs})


@scenario(outcome="""a streams group given rack-aware assignment tags: a member (heartbeat v1)
without those client tags is told MISSING_CLIENT_TAGS (status 6) naming them; at v0 the status
is left out; a member with them is not told""")
def test_missing_client_tags_of_streams_members(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    alter_group_config(s, group, streams_rack_aware_assignment_tags="zone,rack")
    conn = s.conn("a")
    for who, version, tags in (("m1", 1, []), ("m2", 0, []),
                               ("m3", 1, [{"key": "zone", "value": "z1"}]),
                               ("m4", 1, [{"key": "zone", "value": "z2"},
                                          {"key": "rack", "value": "r1"}])):
        request = dict(group_id=group, member_id=who, member_epoch=0,
                       endpoint_information_epoch=0, instance_id=None, rack_id=None,
                       rebalance_timeout=30000, topology={"epoch": 0, "subtopologies": [{
                           "subtopology_id": "0", "source_topics": [topic],
                           "source_topic_regex": [], "state_changelog_topics": [],
                           "repartition_sink_topics": [], "repartition_source_topics": [],
                           "copartition_groups": []}]},
                       active_tasks=[], standby_tasks=[], warmup_tasks=[],
                       process_id=f"p-{who}", user_endpoint=None, client_tags=tags,
                       task_offsets=None, task_end_offsets=None, shutdown_application=False)
        answer = conn.call(ApiKey.STREAMS_GROUP_HEARTBEAT, version, **request)
        s.note(f"{who} v{version}", status=[(int(x.status_code), x.status_detail)
                                           for x in answer.status or ()])


@scenario(outcome="""a streams group's topology is never replaced (Kafka 4.4): a newer, different
topology beside a live member, a different one at the same epoch, and a newer one into the
emptied group are each refused INVALID_REQUEST "Topology updates are not supported yet."; the
same topology joins""")
def test_streams_topology_updates(s):
    topic = s.topic("t", 2)
    other = s.topic("u", 2)
    group = s.name("g")
    conn = s.conn("a")

    def join(who, epoch, source, member_epoch=0):
        return raw_heartbeat(conn, keep=("error_code", "error_message", "member_epoch",
                                         "status"),
                             group_id=group, member_id=who, member_epoch=member_epoch,
                             topic=source, topology={"epoch": epoch, "subtopologies": [{
                                 "subtopology_id": "0", "source_topics": [source],
                                 "source_topic_regex": [], "state_changelog_topics": [],
                                 "repartition_sink_topics": [],
                                 "repartition_source_topics": [],
                                 "copartition_groups": []}]})
    join("m1", 0, topic)
    join("m2", 1, other)          # a newer, different topology beside a live member
    join("m3", 0, other)          # a different one at the same epoch
    join("m4", 0, topic)          # the same
    raw_heartbeat(conn, keep=("error_code",), group_id=group, member_id="m1",
                  member_epoch=-1, topology=None, active_tasks=None, standby_tasks=None,
                  warmup_tasks=None)
    raw_heartbeat(conn, keep=("error_code",), group_id=group, member_id="m4",
                  member_epoch=-1, topology=None, active_tasks=None, standby_tasks=None,
                  warmup_tasks=None)
    join("m5", 1, other)          # a newer, different topology into the emptied group
