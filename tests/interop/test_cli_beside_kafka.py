"""roster's CLI against Apache Kafka 4.4, beside Kafka's own kafka-consumer-groups on the same
broker: the describe view and the reset plan print the same rows, and a reset without
--execute changes nothing on Kafka either. Released Kafka is the specification."""
from __future__ import annotations

import pytest

from tests.support import groups
from tests.support.cli import ok, roster, table
from tests.support.kafka_peer import unique_name
from tests.support.kafka_tools import kafka_tool

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("kafka")]

CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def kafka_consumer_groups(bootstrap: str, *args: str) -> str:
    done = kafka_tool(CONSUMER_GROUPS, "--bootstrap-server", bootstrap, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def rows(text: str, first: str = "GROUP") -> set[tuple[str, ...]]:
    """A table's rows as tuples of words (no value in these tables holds a space)."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    start = next(i for i, words in enumerate(lines) if words[0] == first)
    return {tuple(words) for words in lines[start + 1:]}


def test_describe_and_reset_print_what_kafka_prints(kafka_peer):
    k = kafka_peer.bootstrap
    topic, group = unique_name("cli-topic"), unique_name("cli-group")
    ok(roster("topics", "--create", "--topic", topic, "--partitions", "3",
              "--replication-factor", "1", "--bootstrap-server", k))
    groups.produce_known(k, topic, 3, 30, "beside")    # 10 records a partition
    from confluent_kafka import Consumer, TopicPartition
    committer = Consumer({"bootstrap.servers": k, "group.id": group})
    committer.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 9)],
                     asynchronous=False)
    committer.close()

    ours = ok(roster("offsets", "describe", group, "--bootstrap-server", k))
    assert list(table(ours)[0]) == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                    "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                                    "CLIENT-ID"]
    assert rows(ours) == rows(kafka_consumer_groups(k, "--describe", "--group", group))

    for target in (["--to-earliest"], ["--to-offset", "1000"], ["--shift-by", "-6"],
                   ["--to-current"]):
        scope = ["--topic", f"{topic}:0,1"] if target[0] == "--shift-by" else ["--all-topics"]
        kafka_plan = kafka_consumer_groups(k, "--reset-offsets", "--group", group, *scope,
                                           *target)
        our_plan = ok(roster("groups", "--reset-offsets", "--group", group, *scope, *target,
                             "--bootstrap-server", k))
        assert rows(our_plan) == rows(kafka_plan), target
    after = groups.committed_offsets_confluent(k, group, topic)
    assert after == {0: 4, 1: 9}     # neither dry run changed anything

    ok(roster("offsets", "reset", group, "--topic", topic, "--to-latest", "--execute",
              "--bootstrap-server", k))
    assert groups.committed_offsets_confluent(k, group, topic) == {0: 10, 1: 10, 2: 10}
    assert {r[:6] for r in rows(kafka_consumer_groups(k, "--describe", "--group", group))} \
        == {(group, topic, str(p), "10", "10", "0") for p in range(3)}


def test_a_kafka_sasl_listener_gets_the_sasl_hint(kafka_peer_secure):
    result = roster("topics", "list", "--bootstrap-server", kafka_peer_secure.bootstrap)
    assert result.returncode == 1 and "security.protocol=SASL_PLAINTEXT" in result.stderr, \
        result.stderr


def test_the_views_of_a_live_group_match_kafkas(kafka_peer):
    k = kafka_peer.bootstrap
    topic, group = unique_name("cli-live"), unique_name("cli-live-group")
    ok(roster("topics", "create", topic, "--partitions", "2", "--bootstrap-server", k))
    produced = groups.produce_known(k, topic, 2, 10, "live")
    watch = groups.Watch()
    members = [groups.ConfluentMember(watch, k, group, topic, f"live-{i}", f"live-{i}", {})
               for i in range(2)]
    with groups.running(kafka_peer, members):
        groups.wait_split(watch, members, 2)
        groups.wait_consumed(watch, members, produced.values)
        members[0].commit()
        for view in ("--offsets", "--members", "--state"):
            ours = ok(roster("groups", "describe", group, view, "--bootstrap-server", k))
            kafka = kafka_consumer_groups(k, "--describe", "--group", group, view)
            assert rows(ours) == rows(kafka), (view, ours, kafka)
