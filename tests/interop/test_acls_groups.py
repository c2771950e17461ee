"""Who may touch a group (KIP-345's static members included) under ACLs, with real clients:
another team's principal can neither remove a static member nor commit into the group, and
nothing about the group changes when it tries; PREFIXED bindings cover a team's resources;
a super user needs no binding."""
from __future__ import annotations

import subprocess
import sys
import time

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


def poll_until(consumers, condition, what: str, timeout_s: float = 30.0):
    """Poll every consumer (each poll waits on its client's events) until condition() holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for consumer in consumers:
            consumer.poll(0.1)
        found = condition()
        if found:
            return found
    raise AssertionError(f"not within {timeout_s} s: {what}")


def test_a_classic_join_resolves_the_groups_regex_with_what_the_joiner_may_describe(broker):
    """Kafka 4.4 resolves a consumer group's regexes on a classic member's JoinGroup too, as the
    joining principal may DESCRIBE (KAFKA-18813): a topic created since the last resolution
    that alice may not see does not join the group's subscription when her join resolves it.
    (What she may not describe leaves the other member's resolution too: Kafka resolves every
    regex of the group with the context of the request that resolves them.)"""
    group = "rx-readers"
    admin = AdminClient(client_conf(broker, "admin"))
    for future in admin.create_topics([NewTopic("rx-seen", 2), NewTopic("rx-alice", 1)]).values():
        future.result(timeout=10)
    acl(broker, "--allow-principal", "User:alice", "--consumer", "--topic", "rx-alice",
        "--group", group)
    acl(broker, "--allow-principal", "User:alice", "--operation", "Describe", "--topic",
        "rx-seen")
    regex_member = Consumer({**client_conf(broker, "admin"), "group.id": group,
                             "group.protocol": "consumer"})
    alice = Consumer({**client_conf(broker, "alice"), "group.id": group,
                      "group.protocol": "classic", "session.timeout.ms": 10000,
                      "heartbeat.interval.ms": 500})
    try:
        regex_member.subscribe(["^rx-seen.*"])

        def described():
            (future,) = admin.describe_consumer_groups([group]).values()
            return future.result(timeout=10)

        def settled():
            description = described()
            return description if str(description.state) == "ConsumerGroupState.STABLE" \
                and all(m.assignment.topic_partitions for m in description.members) else None

        poll_until([regex_member], settled, "the regex member settled on rx-seen")
        # its next heartbeat is an interval away: alice's JoinGroup is the first request to
        # see the new topic (her connection is made first, so the join follows at once)
        alice.list_topics("rx-alice", timeout=10)
        for future in admin.create_topics([NewTopic("rx-seen-hidden", 1)]).values():
            future.result(timeout=10)
        alice.subscribe(["rx-alice"])
        description = poll_until(
            [alice, regex_member],
            lambda: len(alice.assignment()) == 1 and settled(), "alice's classic join settled")
        assigned = {tp.topic for m in description.members
                    for tp in m.assignment.topic_partitions + (
                        m.target_assignment.topic_partitions if m.target_assignment else [])}
        assert assigned == {"rx-seen", "rx-alice"}
    finally:
        alice.close()
        regex_member.close()
