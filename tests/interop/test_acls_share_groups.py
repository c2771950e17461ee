"""A share group's heartbeat and describe (KIP-932) under ACLs, as Kafka 4.4's KafkaApis checks
them, over raw frames on a SASL_PLAINTEXT connection: READ on the group for the heartbeat,
then DESCRIBE on every subscribed topic (one refused: TOPIC_AUTHORIZATION_FAILED for the whole
heartbeat); DESCRIBE on the group for ShareGroupDescribe, whose group is answered
TOPIC_AUTHORIZATION_FAILED when a member is assigned a topic the caller may not DESCRIBE."""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from tests.interop.test_acls import acl_settings, add_acls, client_conf
from tests.interop.test_acls_streams_groups import signed_in
from tests.support.security import SecureBroker

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("acls")]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = SecureBroker(tmp_path_factory.mktemp("acl-share") / "data",
                          acl_settings()).start()
    admin = AdminClient(client_conf(broker, "admin"))
    for future in admin.create_topics([NewTopic(t, 2) for t in (
            "share-a-input", "share-secret")]).values():
        future.result(timeout=10)
    yield broker
    broker.stop()


def beat(wire, group: str, topics, member=None, epoch=0):
    return wire.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group,
                     member_id=uuid.uuid4().hex[:22] if member is None else member, member_epoch=epoch,
                     rack_id=None, subscribed_topic_names=topics)


def describe(wire, group: str):
    (described,) = wire.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=(group,),
                             include_authorized_operations=True).groups
    return described


def test_read_on_the_group_and_describe_on_each_topic(broker):
    with signed_in(broker, "alice") as wire:
        refused = beat(wire, "share-a", ("share-a-input",))
        assert refused.error_code == ErrorCode.group_authorization_failed
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Read",
             "--group", "share-a")
    with signed_in(broker, "alice") as wire:
        assert beat(wire, "share-a", ("share-a-input",)).error_code == \
            ErrorCode.topic_authorization_failed
        # an invalid member id is refused before the topics are looked at, as in Kafka
        assert beat(wire, "share-a", ("share-a-input",), member="").error_code == \
            ErrorCode.invalid_request
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Describe",
             "--topic", "share-a-input")
    with signed_in(broker, "alice") as wire:
        joined = beat(wire, "share-a", ("share-a-input",))
        assert joined.error_code == ErrorCode.none and joined.member_epoch == 1
        assert beat(wire, "share-a", ("share-a-input", "share-secret")).error_code == \
            ErrorCode.topic_authorization_failed
        # READ on the group implies DESCRIBE: alice may describe it (and may READ it)
        described = describe(wire, "share-a")
        assert described.error_code == ErrorCode.none
        assert described.authorized_operations == (1 << 3) | (1 << 8)
    with signed_in(broker, "bob") as wire:      # without any ACL on the group
        assert describe(wire, "share-a").error_code == ErrorCode.group_authorization_failed


def test_describe_hides_a_group_assigned_a_topic_the_caller_may_not_see(broker):
    with signed_in(broker, "admin") as wire:
        assert beat(wire, "share-d", ("share-secret",)).error_code == ErrorCode.none
    add_acls(broker, "--allow-principal", "User:bob", "--operation", "Describe",
             "--group", "share-d")
    with signed_in(broker, "bob") as wire:
        hidden = describe(wire, "share-d")
        assert (hidden.error_code, hidden.error_message, hidden.members) == (
            ErrorCode.topic_authorization_failed,
            "The group has described topic(s) that the client is not authorized to "
            "describe.", ())
    add_acls(broker, "--allow-principal", "User:bob", "--operation", "Describe",
             "--topic", "share-secret")
    with signed_in(broker, "bob") as wire:
        shown = describe(wire, "share-d")
        assert shown.error_code == ErrorCode.none and len(shown.members) == 1
        assert shown.authorized_operations == 1 << 8      # DESCRIBE only
