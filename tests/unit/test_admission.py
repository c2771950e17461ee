"""The admission step (broker/network/admission.py) through the real dispatcher and the real handlers'
specs: requests are encoded, served by Connection._start_request as the socket would serve
them, and the answers decoded.

- While a group's partition loads, each group API answers COORDINATOR_LOAD_IN_PROGRESS in its
  own shape (Heartbeat answers blindly, as Kafka's classic coordinator does).
- With a deny-all authorizer, each API refuses in its own shape: as a whole
  (GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED) or element by element
  (TOPIC_AUTHORIZATION_FAILED per topic entry, GROUP_AUTHORIZATION_FAILED per group).
- Kafka answers partly: one unauthorized topic in an OffsetCommit fails that topic only.
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime
import typing
import uuid
from types import SimpleNamespace

import pytest

from roster.broker.broker import Endpoint
from roster.broker.groups.runtime import GroupRuntime
from roster.broker.handlers import build_registry
from roster.broker.network import admission as admission_module
from roster.broker.network.connection import Connection
from roster.broker.partitions.topics import Topic
from roster.coordinator.config import GroupConfig
from roster.protocol import classic
from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element
from roster.protocol.codec import decode_response, encode_request, request_schema
from roster.protocol.errors import ErrorCode

E = ErrorCode
LOADING = E.coordinator_load_in_progress
TOPIC_ID = uuid.UUID(int=7)


# -- a broker with two topics, a group runtime, and an authorizer ---------------------------

class Topics:
    def __init__(self, *topics: Topic) -> None:
        self._by_name = {t.name: t for t in topics}

    def get(self, name):
        return self._by_name.get(name)

    def by_id(self, topic_id):
        return next((t for t in self._by_name.values() if t.topic_id == topic_id), None)

    def __iter__(self):
        return iter(list(self._by_name.values()))

    def __contains__(self, name):
        return name in self._by_name


class Recording:
    """An authorizer that allows what `allow(operation, resource_type, name)` says, and
    records every question."""

    def __init__(self, allow) -> None:
        self.allow = allow
        self.asked: list[tuple] = []

    def authorize(self, principal, host, operation, resource_type, name) -> bool:
        self.asked.append((principal, host, AclOperation(operation),
                           ResourceType(resource_type), name))
        return self.allow(operation, resource_type, name)


def make_broker(authorizer=None, loading=False):
    groups = GroupRuntime(GroupConfig())
    if loading:
        groups._loading = {0}  # the one partition of the memory sink is still being replayed
    broker = SimpleNamespace(
        config={"socket.request.max.bytes": 100 * 1024 * 1024,
                "offsets.topic.num.partitions": 50},
        registry=build_registry(), groups=groups,
        topics=Topics(Topic("orders", TOPIC_ID, {}, [object(), object()]),
                      Topic("audit", uuid.UUID(int=8), {}, [object()])),
        endpoint=Endpoint(1, "localhost", 9092), cluster_id="cluster",
        auto_create=lambda name: None, now_ms=lambda: 0,
        group_log=SimpleNamespace(ensure_topic=lambda: None))  # FindCoordinator makes its topic
    if authorizer is not None:
        broker.authorizer = authorizer
    return broker


def connection(broker) -> Connection:
    conn = Connection(broker, SimpleNamespace(queued=None))
    conn.principal = "User:alice"
    conn.ip = "10.0.0.1"
    conn.client_host = "/10.0.0.1"
    return conn


# -- building requests and reading answers ----------------------------------------------------

def _blank(annotation):
    if typing.get_origin(annotation) is tuple:
        return ()
    args = typing.get_args(annotation)
    if type(None) in args:
        return None
    if annotation is bool:
        return False
    if isinstance(annotation, type) and issubclass(annotation, datetime.timedelta):
        return datetime.timedelta(0)
    if isinstance(annotation, type) and issubclass(annotation, int):
        return 0
    if isinstance(annotation, type) and issubclass(annotation, bytes):
        return b""
    if isinstance(annotation, type) and issubclass(annotation, str):
        return ""
    return None


def entity(schema, **values):
    """schema(**values), every other field blank (tests name what matters)."""
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        if f.name not in values and f.default is dataclasses.MISSING \
                and f.default_factory is dataclasses.MISSING:
            values[f.name] = _blank(hints[f.name])
    return schema(**values)


def part(api_key, version, *path, **values):
    """A nested entry of a request: part(8, 9, "topics", "partitions", partition_index=0)."""
    schema = request_schema(api_key, version)
    for name in path:
        schema = element(schema, name)
    return entity(schema, **values)


def serve(broker, api_key, version, **fields):
    """Encode a request, serve it through the connection's dispatcher, decode the answer."""
    if request_schema(api_key, version) is not None:
        frame = encode_request(api_key, version, 1, "test",
                               entity(request_schema(api_key, version), **fields))
    else:
        frame = classic.encode_request(api_key, version, 1, "test", fields)
    conn = connection(broker)

    async def run():
        answer = conn._start_request(frame[4:])
        return answer if isinstance(answer, bytes) else await answer

    answer = asyncio.run(run())
    if request_schema(api_key, version) is None:
        return classic.decode_response(api_key, version, answer[4:])[1]
    return decode_response(api_key, version, answer[4:])[1]


def topic_entry(api_key, version, name="orders", partitions=(0,), **extra):
    return part(api_key, version, "topics", name=name, partitions=tuple(
        part(api_key, version, "topics", "partitions", partition_index=p) for p in partitions),
        **extra)


def partition_errors(answer) -> dict:
    return {(t.name, p.partition_index): p.error_code for t in answer.topics
            for p in t.partitions}


# -- while loading ----------------------------------------------------------------------------

@pytest.fixture
def loading():
    return make_broker(loading=True)


def test_join_sync_leave_answer_loading_in_their_own_shape(loading):
    join = serve(loading, ApiKey.JOIN_GROUP, 9, group_id="g", member_id="m-1",
                 protocol_type="consumer")
    assert (join.error_code, join.member_id, join.generation_id) == (LOADING, "m-1", -1)
    assert join.protocol_name is None
    assert serve(loading, ApiKey.JOIN_GROUP, 0, group_id="g", member_id="").protocol_name == ""
    sync = serve(loading, ApiKey.SYNC_GROUP, 5, group_id="g", member_id="m-1",
                 protocol_type="consumer", protocol_name="range")
    assert (sync.error_code, sync.assignment) == (LOADING, b"")
    # KafkaApis' own check comes first, loading or not
    unnamed = serve(loading, ApiKey.SYNC_GROUP, 5, group_id="g", member_id="m-1")
    assert unnamed.error_code == E.inconsistent_group_protocol
    assert serve(loading, ApiKey.LEAVE_GROUP, 0, group_id="g", member_id="m").error_code == LOADING
    leave = serve(loading, ApiKey.LEAVE_GROUP, 5, group_id="g", members=(
        part(13, 5, "members", member_id="m"),))
    assert (leave.error_code, leave.members) == (LOADING, ())


def test_heartbeat_is_answered_blindly_while_loading(loading):
    answer = serve(loading, ApiKey.HEARTBEAT, 4, group_id="g", generation_id=3, member_id="m")
    assert answer.error_code == E.none


def test_offset_commit_loading_reaches_the_partitions_that_got_past_the_topic_checks(loading):
    def topic(version, name, partitions):
        if version >= 2:
            return topic_entry(8, version, name, partitions)
        return {"name": name, "partitions": [  # v0-1: roster.protocol.classic's layout
            {"partition_index": p, "committed_offset": 5, "commit_timestamp": -1,
             "committed_metadata": ""} for p in partitions]}

    for version in (1, 2, 9):
        answer = serve(loading, ApiKey.OFFSET_COMMIT, version, group_id="g", member_id="",
                       generation_id_or_member_epoch=-1, topics=(
                           topic(version, "orders", (0, 5)), topic(version, "gone", (0,))))
        assert partition_errors(answer) == {("orders", 0): LOADING,
                                            ("orders", 5): E.unknown_topic_or_partition,
                                            ("gone", 0): E.unknown_topic_or_partition}


def test_offset_fetch_loading_per_version_shape(loading):
    v1 = serve(loading, ApiKey.OFFSET_FETCH, 1, group_id="g", topics=(
        part(9, 1, "topics", name="orders", partition_indexes=(0, 1)),))
    assert partition_errors(v1) == {("orders", 0): LOADING, ("orders", 1): LOADING}
    v0 = serve(loading, ApiKey.OFFSET_FETCH, 0, group_id="g",
               topics=[{"name": "orders", "partition_indexes": [0]}])
    assert [p.error_code for t in v0.topics for p in t.partitions] == [LOADING]
    v7 = serve(loading, ApiKey.OFFSET_FETCH, 7, group_id="g", topics=None)
    assert (v7.error_code, v7.topics) == (LOADING, ())
    v9 = serve(loading, ApiKey.OFFSET_FETCH, 9, groups=(
        part(9, 9, "groups", group_id="g", topics=None),))
    assert [(g.group_id, g.error_code, g.topics) for g in v9.groups] == [("g", LOADING, ())]


def test_per_group_apis_answer_loading_per_group(loading):
    described = serve(loading, ApiKey.DESCRIBE_GROUPS, 5, groups=("a", "b"))
    assert [(g.group_id, g.error_code, g.group_state) for g in described.groups] == [
        ("a", LOADING, ""), ("b", LOADING, "")]
    deleted = serve(loading, ApiKey.DELETE_GROUPS, 2, groups_names=("a",))
    assert [(r.group_id, r.error_code) for r in deleted.results] == [("a", LOADING)]
    consumer = serve(loading, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=("c",))
    assert [(g.group_id, g.error_code) for g in consumer.groups] == [("c", LOADING)]


def test_whole_group_apis_answer_loading(loading):
    deleted = serve(loading, ApiKey.OFFSET_DELETE, 0, group_id="g",
                    topics=(topic_entry(47, 0),))
    assert (deleted.error_code, deleted.topics) == (LOADING, ())
    # an empty group id is invalid before it is routed anywhere
    assert serve(loading, ApiKey.OFFSET_DELETE, 0, group_id="",
                 topics=()).error_code == E.invalid_group_id
    listed = serve(loading, ApiKey.LIST_GROUPS, 5)
    assert (listed.error_code, listed.groups) == (LOADING, ())
    heartbeat = serve(loading, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id="c",
                      member_id="m", member_epoch=0, subscribed_topic_names=("orders",))
    assert heartbeat.error_code == LOADING
    # FindCoordinator is not routed: a loading group is still found
    found = serve(loading, ApiKey.FIND_COORDINATOR, 6, coordinator_keys=("g",))
    assert [(c.key, c.error_code, c.node_id) for c in found.coordinators] == [("g", E.none, 1)]


# -- a deny-all authorizer --------------------------------------------------------------------

@pytest.fixture
def denied():
    return make_broker(Recording(lambda *_: False))


def test_group_apis_refused_as_a_whole(denied):
    assert serve(denied, ApiKey.JOIN_GROUP, 9, group_id="g", member_id="m",
                 protocol_type="consumer").error_code == E.group_authorization_failed
    assert serve(denied, ApiKey.SYNC_GROUP, 3, group_id="g",
                 member_id="m").error_code == E.group_authorization_failed
    assert serve(denied, ApiKey.HEARTBEAT, 4, group_id="g",
                 member_id="m").error_code == E.group_authorization_failed
    assert serve(denied, ApiKey.LEAVE_GROUP, 1, group_id="g",
                 member_id="m").error_code == E.group_authorization_failed
    assert serve(denied, ApiKey.OFFSET_DELETE, 0, group_id="g", topics=(
        topic_entry(47, 0),)).error_code == E.group_authorization_failed
    assert serve(denied, ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="g", member_id="m",
                 member_epoch=0).error_code == E.group_authorization_failed
    assert serve(denied, ApiKey.FIND_COORDINATOR, 3,
                 key="g").error_code == E.group_authorization_failed
    assert denied.authorizer.asked[0] == ("User:alice", "10.0.0.1", AclOperation.READ,
                                          ResourceType.GROUP, "g")


def steady_consumer_heartbeat(broker):
    """Only group, member id and epoch: the shape served by the steady path."""
    return serve(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id="c", member_id="m",
                 member_epoch=3, instance_id=None, rack_id=None,
                 rebalance_timeout=datetime.timedelta(milliseconds=-1),
                 subscribed_topic_names=None, subscribed_topic_regex=None,
                 server_assignor=None, topic_partitions=None)


def test_a_steady_consumer_heartbeat_is_admitted_like_any_other(loading, denied):
    assert steady_consumer_heartbeat(loading).error_code == LOADING
    assert steady_consumer_heartbeat(denied).error_code == E.group_authorization_failed


def test_offset_commit_and_fetch_refused_whole_by_their_group(denied):
    commit = serve(denied, ApiKey.OFFSET_COMMIT, 9, group_id="g", member_id="m",
                   topics=(topic_entry(8, 9, partitions=(0, 1)),))
    assert set(partition_errors(commit).values()) == {E.group_authorization_failed}
    fetch = serve(denied, ApiKey.OFFSET_FETCH, 1, group_id="g", topics=(
        part(9, 1, "topics", name="orders", partition_indexes=(0,)),))
    assert partition_errors(fetch) == {("orders", 0): E.group_authorization_failed}
    v5 = serve(denied, ApiKey.OFFSET_FETCH, 5, group_id="g", topics=None)
    assert (v5.error_code, v5.topics) == (E.group_authorization_failed, ())


def test_per_group_refusals(denied):
    v9 = serve(denied, ApiKey.OFFSET_FETCH, 9, groups=(
        part(9, 9, "groups", group_id="a", topics=None),
        part(9, 9, "groups", group_id="b", topics=None)))
    assert [(g.group_id, g.error_code) for g in v9.groups] == [
        ("a", E.group_authorization_failed), ("b", E.group_authorization_failed)]
    described = serve(denied, ApiKey.DESCRIBE_GROUPS, 5, groups=("a",))
    assert [g.error_code for g in described.groups] == [E.group_authorization_failed]
    deleted = serve(denied, ApiKey.DELETE_GROUPS, 2, groups_names=("a",))
    assert [r.error_code for r in deleted.results] == [E.group_authorization_failed]
    consumer = serve(denied, ApiKey.CONSUMER_GROUP_DESCRIBE, 0, group_ids=("c",))
    assert [g.error_code for g in consumer.groups] == [E.group_authorization_failed]
    found = serve(denied, ApiKey.FIND_COORDINATOR, 4, coordinator_keys=("a", "b"))
    assert [(c.key, c.error_code, c.node_id) for c in found.coordinators] == [
        ("a", E.group_authorization_failed, -1), ("b", E.group_authorization_failed, -1)]
    # ListGroups: not allowed on the cluster, each group filtered out
    assert serve(denied, ApiKey.LIST_GROUPS, 5).groups == ()


def test_topic_apis_refuse_each_topic_entry(denied):
    metadata = serve(denied, ApiKey.METADATA, 12, topics=(
        part(3, 12, "topics", name="orders"), part(3, 12, "topics", topic_id=TOPIC_ID),
        part(3, 12, "topics", topic_id=uuid.UUID(int=99))), allow_auto_topic_creation=True)
    assert [(t.name, t.topic_id, t.error_code) for t in metadata.topics] == [
        ("orders", None, E.topic_authorization_failed),
        (None, TOPIC_ID, E.topic_authorization_failed),
        (None, uuid.UUID(int=99), E.unknown_topic_id)]  # an unknown id: nothing to authorize
    assert serve(denied, ApiKey.METADATA, 12, topics=None).topics == ()  # all: filtered
    offsets = serve(denied, ApiKey.LIST_OFFSETS, 8, topics=(topic_entry(2, 8),))
    assert partition_errors(offsets) == {("orders", 0): E.topic_authorization_failed}
    old = serve(denied, ApiKey.LIST_OFFSETS, 0, replica_id=-1, topics=[{"name": "orders", "partitions": [
        {"partition_index": 0, "timestamp": -1, "max_num_offsets": 1}]}])
    assert [p.error_code for t in old.topics for p in t.partitions] == [
        E.topic_authorization_failed]
    records = serve(denied, ApiKey.DELETE_RECORDS, 2, topics=(topic_entry(21, 2),))
    assert partition_errors(records) == {("orders", 0): E.topic_authorization_failed}
    deleted = serve(denied, ApiKey.DELETE_TOPICS, 6, topics=(
        part(20, 6, "topics", name="orders"), part(20, 6, "topics", topic_id=TOPIC_ID)))
    assert [r.error_code for r in deleted.responses] == [E.topic_authorization_failed] * 2
    v0 = serve(denied, ApiKey.DELETE_TOPICS, 0, topic_names=["orders"], timeout_ms=1000)
    assert [r.error_code for r in v0.responses] == [E.topic_authorization_failed]
    grown = serve(denied, ApiKey.CREATE_PARTITIONS, 3, topics=(
        part(37, 3, "topics", name="orders", count=4),))
    assert [r.error_code for r in grown.results] == [E.topic_authorization_failed]
    created = serve(denied, ApiKey.CREATE_TOPICS, 7, topics=(
        part(19, 7, "topics", name="new", num_partitions=1, replication_factor=1),))
    assert [t.error_code for t in created.topics] == [E.topic_authorization_failed]
    assert ("User:alice", "10.0.0.1", AclOperation.CREATE, ResourceType.CLUSTER,
            "kafka-cluster") in denied.authorizer.asked


def test_produce_and_fetch_refuse_each_topic(denied):
    produced = serve(denied, ApiKey.PRODUCE, 9, acks=1, timeout=datetime.timedelta(seconds=1),
                     topic_data=(part(0, 9, "topic_data", name="orders", partition_data=(
                         part(0, 9, "topic_data", "partition_data", index=0, records=b""),)),))
    assert [(r.name, p.error_code) for r in produced.responses
            for p in r.partition_responses] == [("orders", E.topic_authorization_failed)]
    transactional = serve(denied, ApiKey.PRODUCE, 9, acks=1, transactional_id="t",
                          timeout=datetime.timedelta(seconds=1), topic_data=(part(
                              0, 9, "topic_data", name="orders", partition_data=(part(
                                  0, 9, "topic_data", "partition_data", index=0),)),))
    assert [p.error_code for r in transactional.responses for p in r.partition_responses] == [
        E.transactional_id_authorization_failed]
    # a topic that does not exist is not created without CREATE
    created = serve(denied, ApiKey.PRODUCE, 9, acks=1, timeout=datetime.timedelta(seconds=1),
                    topic_data=(part(0, 9, "topic_data", name="new", partition_data=(
                        part(0, 9, "topic_data", "partition_data", index=0),)),))
    assert [p.error_code for r in created.responses for p in r.partition_responses] == [
        E.topic_authorization_failed]
    fetched = serve(denied, ApiKey.FETCH, 12, max_wait=datetime.timedelta(0), max_bytes=1 << 20,
                    topics=(part(1, 12, "topics", topic="orders", partitions=(
                        part(1, 12, "topics", "partitions", partition=0,
                             partition_max_bytes=1 << 20),)),))
    assert [(r.topic, p.error_code) for r in fetched.responses for p in r.partitions] == [
        ("orders", E.topic_authorization_failed)]
    by_id = serve(denied, ApiKey.FETCH, 13, max_wait=datetime.timedelta(0), max_bytes=1 << 20,
                  topics=(part(1, 13, "topics", topic_id=TOPIC_ID, partitions=(
                      part(1, 13, "topics", "partitions", partition=0),)),))
    assert [(r.topic_id, p.error_code) for r in by_id.responses for p in r.partitions] == [
        (TOPIC_ID, E.topic_authorization_failed)]
    assert ("User:alice", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC,
            "orders") in denied.authorizer.asked


def test_config_resources_refused_each_on_its_own_resource(denied):
    resources = tuple(part(32, 4, "resources", resource_type=kind, resource_name=name)
                      for kind, name in ((2, "orders"), (4, "1"), (32, "g")))
    described = serve(denied, ApiKey.DESCRIBE_CONFIGS, 4, resources=resources)
    assert [r.error_code for r in described.results] == [
        E.topic_authorization_failed, E.cluster_authorization_failed,
        E.group_authorization_failed]
    altered = serve(denied, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, resources=tuple(
        part(44, 1, "resources", resource_type=2, resource_name="orders") for _ in range(1)))
    assert [r.error_code for r in altered.responses] == [E.topic_authorization_failed]
    replaced = serve(denied, ApiKey.ALTER_CONFIGS, 2, resources=(
        part(33, 2, "resources", resource_type=4, resource_name="1"),))
    assert [r.error_code for r in replaced.responses] == [E.cluster_authorization_failed]


def test_cluster_and_producer_apis_refused_as_a_whole(denied):
    idempotent = serve(denied, ApiKey.INIT_PRODUCER_ID, 4, producer_id=-1, producer_epoch=-1)
    assert (idempotent.error_code, idempotent.producer_id) == (
        E.cluster_authorization_failed, -1)
    transactional = serve(denied, ApiKey.INIT_PRODUCER_ID, 4, transactional_id="t",
                          producer_id=-1, producer_epoch=-1)
    assert transactional.error_code == E.transactional_id_authorization_failed
    users = serve(denied, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=None)
    assert (users.error_code, users.results) == (E.cluster_authorization_failed, ())
    altered = serve(denied, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, deletions=(
        part(51, 0, "deletions", name="bob", mechanism=1),))
    assert [(r.user, r.error_code) for r in altered.results] == [
        ("bob", E.cluster_authorization_failed)]


def test_api_versions_and_sasl_ask_nothing(denied):
    assert serve(denied, ApiKey.API_VERSIONS, 3, client_software_name="t",
                 client_software_version="1").error_code == E.none
    assert denied.authorizer.asked == []


# -- partly allowed ---------------------------------------------------------------------------

def test_one_unauthorized_topic_fails_that_topic_not_the_commit():
    broker = make_broker(Recording(
        lambda operation, kind, name: not (kind == ResourceType.TOPIC and name == "audit")))
    answer = serve(broker, ApiKey.OFFSET_FETCH, 7, group_id="g", topics=(
        part(9, 7, "topics", name="orders", partition_indexes=(0,)),
        part(9, 7, "topics", name="audit", partition_indexes=(0,))))
    assert partition_errors(answer) == {("orders", 0): E.none,
                                        ("audit", 0): E.topic_authorization_failed}
    loading = make_broker(broker.authorizer, loading=True)
    commit = serve(loading, ApiKey.OFFSET_COMMIT, 9, group_id="g", member_id="", topics=(
        topic_entry(8, 9), topic_entry(8, 9, name="audit")))
    assert partition_errors(commit) == {("orders", 0): LOADING,
                                        ("audit", 0): E.topic_authorization_failed}


def test_allow_all_asks_nothing_and_shares_one_admission():
    broker = make_broker()
    request = SimpleNamespace(api_version=4, body=SimpleNamespace(group_id="g"))
    spec = broker.registry.get(ApiKey.JOIN_GROUP)
    assert admission_module.admit(broker, connection(broker), spec, request) is None
    assert request.admission is admission_module.ADMITTED
