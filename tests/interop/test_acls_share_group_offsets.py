"""Describe/Alter/DeleteShareGroupOffsets (90-92) under ACLs, as Kafka 4.4's KafkaApis checks
them, over raw frames on a SASL_PLAINTEXT connection: DESCRIBE on each group and on each topic
for the describe (a group refused on its entry, a topic on each of its partitions, a null topic
list filtered), READ on the group and on each topic for the alter, DELETE on the group and READ
on each topic for the delete (the group refused for the whole request)."""
from __future__ import annotations

import kio.schema.alter_share_group_offsets.v0.request as alter_request
import kio.schema.delete_share_group_offsets.v0.request as delete_request
import kio.schema.describe_share_group_offsets.v1.request as describe_request
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from tests.interop.test_acls import acl_settings, add_acls, client_conf
from tests.interop.test_acls_streams_groups import signed_in
from tests.support.security import SecureBroker

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("acls")]

OPEN, SECRET = "sgo-open", "sgo-secret"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = SecureBroker(tmp_path_factory.mktemp("acl-share-offsets") / "data",
                          acl_settings()).start()
    admin = AdminClient(client_conf(broker, "admin"))
    for future in admin.create_topics([NewTopic(t, 1) for t in (OPEN, SECRET)]).values():
        future.result(timeout=10)
    yield broker
    broker.stop()


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


def test_alter_describe_and_delete_check_the_group_and_each_topic(broker):
    group = "sgo-acl"
    with signed_in(broker, "alice") as wire:
        assert alter(wire, group, [OPEN]).error_code == ErrorCode.group_authorization_failed
        assert describe(wire, group, [OPEN]).error_code == ErrorCode.group_authorization_failed
        assert delete(wire, group, [OPEN]).error_code == ErrorCode.group_authorization_failed
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Read",
             "--group", group)
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Read",
             "--topic", OPEN)
    with signed_in(broker, "alice") as wire:
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
    with signed_in(broker, "admin") as wire:
        assert alter(wire, group, [SECRET]).error_code == ErrorCode.none
    with signed_in(broker, "alice") as wire:
        everything = describe(wire, group, None)        # the secret topic is left out
        assert [t.topic_name for t in everything.topics] == [OPEN]
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Delete",
             "--group", group)
    with signed_in(broker, "alice") as wire:
        deleted = delete(wire, group, [OPEN, SECRET])
        assert deleted.error_code == ErrorCode.none
        assert {t.topic_name: t.error_code for t in deleted.responses} == {
            OPEN: ErrorCode.none, SECRET: ErrorCode.topic_authorization_failed}
