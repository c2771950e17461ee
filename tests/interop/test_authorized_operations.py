"""Authorized operations in Metadata (describe_topics), DescribeCluster (describe_cluster) and
DescribeGroups (describe_consumer_groups), through confluent-kafka's AdminClient: every
supported operation without an authorizer; with StandardAuthorizer, those the principal's ACLs
allow, implied operations included (READ implies DESCRIBE, ALTER_CONFIGS implies
DESCRIBE_CONFIGS), and none of the cluster's without DESCRIBE on it, as Kafka computes them."""
from __future__ import annotations

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.interop.test_acls import acl_settings, client_conf
from tests.support.process import BrokerProcess
from tests.support.wire import Wire
from tests.support.security import SecureBroker

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("acls")]

ALL_TOPIC = {AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
             AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
             AclOperation.ALTER_CONFIGS}
ALL_CLUSTER = {AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
               AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
               AclOperation.DESCRIBE}
ALL_GROUP = {AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
             AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}


def _topic_operations(admin, name):
    described = admin.describe_topics(TopicCollection([name]),
                                      include_authorized_operations=True)[name].result(30)
    return set(described.authorized_operations or ())


def _cluster_operations(admin):
    return set(admin.describe_cluster(include_authorized_operations=True).result(30)
               .authorized_operations or ())


def _group_operations(admin, group):
    described = admin.describe_consumer_groups([group], include_authorized_operations=True)
    return set(described[group].result(30).authorized_operations or ())


def test_without_an_authorizer_every_supported_operation(tmp_path):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("open", 1, 1)])["open"].result(30)
        assert _topic_operations(admin, "open") == ALL_TOPIC
        assert _cluster_operations(admin) == ALL_CLUSTER
        assert _group_operations(admin, "any-group") == ALL_GROUP
        # not asked for: none reported
        described = admin.describe_topics(TopicCollection(["open"]))["open"].result(30)
        assert not described.authorized_operations
        # Metadata v8-10 could ask for the cluster's too (v11 moved them to DescribeCluster)
        with Wire(broker.bootstrap) as wire:
            answer = wire.call(3, 10, topics=None, allow_auto_topic_creation=False,
                               include_cluster_authorized_operations=True,
                               include_topic_authorized_operations=True)
        assert answer.cluster_authorized_operations == sum(1 << op.value for op in ALL_CLUSTER)
        assert {t.topic_authorized_operations for t in answer.topics} == {
            sum(1 << op.value for op in ALL_TOPIC)}
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    broker = SecureBroker(tmp_path_factory.mktemp("authorized") / "data",
                          acl_settings()).start()
    try:
        admin = AdminClient(client_conf(broker, "admin"))
        admin.create_topics([NewTopic("guarded", 1, 1)])["guarded"].result(30)
        grants = [
            AclBinding(ResourceType.TOPIC, "guarded", ResourcePatternType.LITERAL, "User:alice",
                       "*", AclOperation.READ, AclPermissionType.ALLOW),
            AclBinding(ResourceType.TOPIC, "guarded", ResourcePatternType.LITERAL, "User:alice",
                       "*", AclOperation.ALTER_CONFIGS, AclPermissionType.ALLOW),
            AclBinding(ResourceType.GROUP, "alices", ResourcePatternType.LITERAL, "User:alice",
                       "*", AclOperation.DELETE, AclPermissionType.ALLOW),
            AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
                       "User:alice", "*", AclOperation.IDEMPOTENT_WRITE,
                       AclPermissionType.ALLOW),
            AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
                       "User:bob", "*", AclOperation.ALTER, AclPermissionType.ALLOW),
        ]
        for future in admin.create_acls(grants).values():
            future.result(30)
        yield broker, admin
    finally:
        broker.stop()


def test_with_acls_the_allowed_operations_and_those_they_imply(secured):
    broker, admin = secured
    alice = AdminClient(client_conf(broker, "alice"))
    assert _topic_operations(alice, "guarded") == {
        AclOperation.READ, AclOperation.DESCRIBE, AclOperation.ALTER_CONFIGS,
        AclOperation.DESCRIBE_CONFIGS}
    assert _group_operations(alice, "alices") == {AclOperation.DELETE, AclOperation.DESCRIBE}
    # IDEMPOTENT_WRITE does not imply DESCRIBE, and without DESCRIBE nothing is reported
    assert _cluster_operations(alice) == set()
    bob = AdminClient(client_conf(broker, "bob"))
    assert _cluster_operations(bob) == {AclOperation.ALTER, AclOperation.DESCRIBE}
    # a super user may do everything
    assert _topic_operations(admin, "guarded") == ALL_TOPIC
    assert _cluster_operations(admin) == ALL_CLUSTER
