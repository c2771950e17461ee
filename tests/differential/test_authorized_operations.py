"""Authorized operations against Kafka 4.4 and roster side by side, through confluent-kafka's
AdminClient: without an authorizer (every supported operation), and with the StandardAuthorizer
for a principal granted READ and ALTER_CONFIGS on a topic and DELETE on a group (the allowed and
implied operations), for topics (Metadata), the cluster (DescribeCluster) and groups
(DescribeGroups)."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.support.kafka_peer import SECURE_USERS

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("kafka")]


def _operations(admin, topic, group):
    deadline = time.monotonic() + 30
    while True:  # Kafka's broker learns of a new topic a moment after CreateTopics answers
        try:
            described = admin.describe_topics(TopicCollection([topic]),
                                              include_authorized_operations=True)[topic]
            topic_ops = described.result(30).authorized_operations
            break
        except KafkaException:
            assert time.monotonic() < deadline, f"topic {topic} never became known"
            time.sleep(0.05)  # polling the broker's answer
    cluster = admin.describe_cluster(include_authorized_operations=True).result(30)
    groups = admin.describe_consumer_groups([group], include_authorized_operations=True)
    return (sorted(op.name for op in topic_ops or ()),
            sorted(op.name for op in cluster.authorized_operations or ()),
            sorted(op.name for op in groups[group].result(30).authorized_operations or ()))


def test_without_an_authorizer(kafka_peer, roster_peer):
    seen = {}
    for side, bootstrap in (("kafka", kafka_peer.bootstrap), ("roster", roster_peer.bootstrap)):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic = f"ops-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        seen[side] = _operations(admin, topic, f"g-{topic}")
    assert seen["roster"] == seen["kafka"]


def _sasl(bootstrap, user):
    return AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": "PLAIN", "sasl.username": user,
                        "sasl.password": SECURE_USERS[user]})


def test_with_acls(kafka_peer_secure, roster_peer_secure):
    seen = {}
    for side, bootstrap in (("kafka", kafka_peer_secure.bootstrap),
                            ("roster", roster_peer_secure.listener("SASL_PLAINTEXT"))):
        admin = _sasl(bootstrap, "admin")
        topic = f"guarded-{uuid.uuid4().hex[:8]}"
        group = f"g-{topic}"
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        grants = [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL,
                             "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
                  AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL,
                             "User:alice", "*", AclOperation.ALTER_CONFIGS,
                             AclPermissionType.ALLOW),
                  AclBinding(ResourceType.GROUP, group, ResourcePatternType.LITERAL,
                             "User:alice", "*", AclOperation.DELETE, AclPermissionType.ALLOW)]
        for future in admin.create_acls(grants).values():
            future.result(30)
        alice = _sasl(bootstrap, "alice")
        deadline = time.monotonic() + 30
        while not (granted := _operations(alice, topic, group))[0]:
            # Kafka's brokers learn of new ACLs a moment after CreateAcls answers
            assert time.monotonic() < deadline, "the ACLs never took effect"
            time.sleep(0.05)  # polling the broker's answer
        seen[side] = (granted, _operations(admin, topic, group))
    assert seen["roster"] == seen["kafka"]
