"""Describe/Alter/DeleteShareGroupOffsets (90-92) under ACLs, against roster and the Kafka 4.4
peer (StandardAuthorizer) with the same assertions, over raw frames on a SASL_PLAINTEXT
connection: DESCRIBE on each group and on each topic
for the describe (a group refused on its entry, a topic on each of its partitions, a null topic
list filtered), READ on the group and on each topic for the alter, DELETE on the group and READ
on each topic for the delete (the group refused for the whole request)."""
from __future__ import annotations

import time

import kio.schema.alter_share_group_offsets.v0.request as alter_request
import kio.schema.delete_share_group_offsets.v0.request as delete_request
import kio.schema.describe_share_group_offsets.v1.request as describe_request
import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from tests.interop.test_acls import acl_settings
from tests.support.kafka_peer import unique_name
from tests.support.security import PASSWORDS, SecureBroker
from tests.support.wire import Wire

BOTH = pytest.mark.parametrize("secure", [
    pytest.param("roster", marks=[pytest.mark.interop, pytest.mark.xdist_group("acls")]),
    pytest.param("kafka", marks=[pytest.mark.interop, pytest.mark.xdist_group("kafka")])],
    indirect=True)


@pytest.fixture(scope="module")
def roster_secure(tmp_path_factory):
    broker = SecureBroker(tmp_path_factory.mktemp("acl-share-offsets") / "data",
                          acl_settings()).start()
    yield broker
    broker.stop()


@pytest.fixture
def secure(request):
    """The SASL_PLAINTEXT bootstrap of roster or of the Kafka peer."""
    if request.param == "kafka":
        return request.getfixturevalue("kafka_peer_secure").bootstrap
    return request.getfixturevalue("roster_secure").listener("SASL_PLAINTEXT")


def admin_of(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": "PLAIN", "sasl.username": "admin",
                        "sasl.password": PASSWORDS["admin"]})


def allow(bootstrap: str, kind: ResourceType, name: str, operation: AclOperation) -> None:
    admin = admin_of(bootstrap)
    binding = AclBinding(kind, name, ResourcePatternType.LITERAL, "User:alice", "*",
                         operation, AclPermissionType.ALLOW)
    for future in admin.create_acls([binding]).values():
        future.result(30)
    # Kafka's authorizer takes the ACL from its metadata log a moment after CreateAcls answers
    wanted = AclBindingFilter(kind, name, ResourcePatternType.LITERAL, "User:alice", "*",
                              operation, AclPermissionType.ALLOW)
    deadline = time.monotonic() + 30
    while not admin.describe_acls(wanted).result(30):
        assert time.monotonic() < deadline, f"the ACL on {name} never showed"
        time.sleep(0.05)    # polling the broker's answer


def signed_in(bootstrap: str, user: str) -> Wire:
    """A raw connection authenticated with SASL PLAIN as `user`."""
    wire = Wire(bootstrap)
    assert wire.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == ErrorCode.none
    done = wire.call(ApiKey.SASL_AUTHENTICATE, 2,
                     auth_bytes=f"\0{user}\0{PASSWORDS[user]}".encode())
    assert done.error_code == ErrorCode.none, done.error_message
    return wire


def alter(wire, group: str, topics):
    return wire.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id=group, topics=tuple(
        alter_request.AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=(
            alter_request.AlterShareGroupOffsetsRequestPartition(partition_index=0,
                                                                 start_offset=0),))
        for t in topics))


def delete(wire, group: str, topics):
    return wire.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id=group, topics=tuple(
        delete_request.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics))


def describe(wire, group: str, topics):
    (described,) = wire.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=(
        describe_request.DescribeShareGroupOffsetsRequestGroup(
            group_id=group, topics=None if topics is None else tuple(
                describe_request.DescribeShareGroupOffsetsRequestTopic(topic_name=t,
                                                                       partitions=(0,))
                for t in topics)),)).groups
    return described


def errors(answer) -> dict:
    return {t.topic_name: [p.error_code for p in t.partitions] for t in answer.responses}


@BOTH
def test_alter_describe_and_delete_check_the_group_and_each_topic(secure):
    group, OPEN, SECRET = unique_name("sgo-acl"), unique_name("sgo-open"), \
        unique_name("sgo-secret")
    admin = admin_of(secure)
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in (OPEN, SECRET)]).values():
        future.result(30)
    with signed_in(secure, "alice") as wire:
        assert alter(wire, group, [OPEN]).error_code == ErrorCode.group_authorization_failed
        assert describe(wire, group, [OPEN]).error_code == ErrorCode.group_authorization_failed
        assert delete(wire, group, [OPEN]).error_code == ErrorCode.group_authorization_failed
    allow(secure, ResourceType.GROUP, group, AclOperation.READ)
    allow(secure, ResourceType.TOPIC, OPEN, AclOperation.READ)
    with signed_in(secure, "alice") as wire:
        altered = alter(wire, group, [OPEN, SECRET])
        assert altered.error_code == ErrorCode.none
        assert errors(altered) == {SECRET: [ErrorCode.topic_authorization_failed],
                                   OPEN: [ErrorCode.none]}
        # READ on the group implies DESCRIBE on it; READ on a topic implies DESCRIBE too
        described = describe(wire, group, [OPEN, SECRET])
        assert described.error_code == ErrorCode.none
        assert {t.topic_name: [(p.start_offset, p.error_code) for p in t.partitions]
                for t in described.topics} == {
            OPEN: [(0, ErrorCode.none)], SECRET: [(-1, ErrorCode.topic_authorization_failed)]}
        # without DELETE on the group, nothing is deleted
        assert delete(wire, group, [OPEN]).error_code == ErrorCode.group_authorization_failed
    with signed_in(secure, "admin") as wire:
        assert alter(wire, group, [SECRET]).error_code == ErrorCode.none
    with signed_in(secure, "alice") as wire:
        everything = describe(wire, group, None)        # the secret topic is left out
        assert [t.topic_name for t in everything.topics] == [OPEN]
    allow(secure, ResourceType.GROUP, group, AclOperation.DELETE)
    with signed_in(secure, "alice") as wire:
        deleted = delete(wire, group, [OPEN, SECRET])
        assert deleted.error_code == ErrorCode.none
        assert {t.topic_name: t.error_code for t in deleted.responses} == {
            OPEN: ErrorCode.none, SECRET: ErrorCode.topic_authorization_failed}
