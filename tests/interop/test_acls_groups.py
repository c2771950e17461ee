"""Who may touch a group (KIP-345's static members included) under ACLs, with real clients:
another team's principal can neither remove a static member nor commit into the group, and
nothing about the group changes when it tries; PREFIXED bindings cover a team's resources;
a super user needs no binding."""
from __future__ import annotations

import subprocess
import sys

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.interop.test_acls import acl_settings, client_conf, command_config, roster_acls
from tests.interop.test_acls_clients import consume_first_error_or_records, produce
from tests.support import groups
from tests.support.groups import ConfluentMember, Watch
from tests.support.security import SecureBroker

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("acls")]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = SecureBroker(tmp_path_factory.mktemp("acl-groups") / "data", acl_settings()).start()
    admin = AdminClient(client_conf(broker, "admin"))
    for future in admin.create_topics([NewTopic(t, 2) for t in (
            "payments", "team-a-events", "other-events")]).values():
        future.result(timeout=10)
    yield broker
    broker.stop()


def acl(broker, *args):
    done = roster_acls(broker, "admin", "add", *args)
    assert done.returncode == 0, done.stderr


def roster(broker, user: str, command: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "roster", "--log-level", "WARNING", command,
                           "--bootstrap-server", broker.listener("SASL_PLAINTEXT"),
                           "--command-config", str(command_config(broker, user)), *args],
                          capture_output=True, text=True, timeout=60)


def committed(broker, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({**client_conf(broker, "admin"), "group.id": group})
    try:
        offsets = consumer.committed([TopicPartition(topic, p) for p in (0, 1)], timeout=10)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in offsets}


def test_another_principal_cannot_remove_a_static_member_or_commit_into_the_group(broker):
    topic, group = "payments", "payments-readers"
    acl(broker, "--allow-principal", "User:alice", "--consumer", "--topic", topic,
        "--group", group)
    # bob may see the group and the topic, nothing more: no READ, no DELETE on the group
    acl(broker, "--allow-principal", "User:bob", "--operation", "Describe", "--group", group)
    acl(broker, "--allow-principal", "User:bob", "--operation", "Describe", "--topic", topic)
    # an offset the group has, committed while it is still empty (a simple commit)
    alice = Consumer({**client_conf(broker, "alice"), "group.id": group})
    alice.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    alice.close()
    watch = Watch()
    member = ConfluentMember(watch, broker.listener("SASL_PLAINTEXT"), group, topic, "m",
                             "payments-1", {"heartbeat.interval.ms": 500,
                                            "session.timeout.ms": 10000,
                                            **client_conf(broker, "alice")})
    try:
        member.start()
        groups.wait_split(watch, [member], 2)
        callbacks = member.callbacks()
        before = committed(broker, group, topic)

        refused = roster(broker, "bob", "groups", "remove-members", group,
                         "--instance-ids", "payments-1")
        assert refused.returncode != 0
        assert "GROUP_AUTHORIZATION_FAILED" in refused.stdout + refused.stderr
        bob = Consumer({**client_conf(broker, "bob"), "group.id": group})
        with pytest.raises(KafkaException, match="GROUP_AUTHORIZATION_FAILED"):
            bob.commit(offsets=[TopicPartition(topic, 0, 99)], asynchronous=False)
        bob.close()

        described = roster(broker, "admin", "groups", "describe", group)
        assert described.returncode == 0, described.stderr
        assert "payments-1" in described.stdout and "Stable" in described.stdout
        assert committed(broker, group, topic) == before and before[0] == 5
        assert member.callbacks() == callbacks, "the refused requests rebalanced the group"
    finally:
        member.stop()


def test_prefixed_bindings_cover_a_teams_resources_and_a_super_user_needs_none(broker):
    acl(broker, "--allow-principal", "User:bob", "--consumer", "--topic", "team-a-",
        "--group", "team-a-", "--resource-pattern-type", "prefixed")
    assert produce(broker, "admin", "team-a-events") == [None] * 3
    assert produce(broker, "admin", "other-events") == [None] * 3   # a super user, no binding

    got, error = consume_first_error_or_records(
        {**client_conf(broker, "bob"), "group.id": "team-a-readers"}, "team-a-events", 3)
    assert error is None and len(got) == 3
    got, error = consume_first_error_or_records(
        {**client_conf(broker, "bob"), "group.id": "team-a-readers"}, "other-events", 1)
    assert got == [] and error is not None and error.name() == "TOPIC_AUTHORIZATION_FAILED"
    got, error = consume_first_error_or_records(
        {**client_conf(broker, "bob"), "group.id": "other-readers"}, "team-a-events", 1)
    assert got == [] and error is not None and error.name() == "GROUP_AUTHORIZATION_FAILED"
