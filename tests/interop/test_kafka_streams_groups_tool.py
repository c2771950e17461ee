"""Kafka's kafka-streams-groups tool (org.apache.kafka.tools.streams.StreamsGroupCommand, the
class behind bin/kafka-streams-groups.sh) changing a streams group, against roster and against
the Apache Kafka peer with the same assertions: the lag of a group one stream thread committed
for, the refusals while it runs, then, once it left, resetting its offsets (dry run, then
execute, which deletes the group's internal topics), deleting one topic's offsets and deleting
the group. The group is made by a stream thread speaking the protocol over a raw socket
(tests/support/streams_thread.py), so no Streams JVM is needed; tests/streams runs the tool on
a real Kafka Streams application."""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.interop.test_kafka_tools import BOTH, table, tool
from tests.support import groups
from tests.support.judges import roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name
from tests.support.streams_thread import StreamThread
from tests.support.transactions import wait_for

STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"
RECORDS = {0: 5, 1: 4}   # records produced to each input partition


def produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, count in RECORDS.items():
        for i in range(count):
            producer.produce(topic, value=f"v{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def topics(target) -> set[str]:
    from roster.admin.client import AdminClient
    from roster.admin.topics import list_names
    with AdminClient(target.bootstrap) as admin:
        return set(list_names(admin, False))


@pytest.fixture
def app(target):
    """A streams group of one stream thread reading `<app>-in` (2 partitions), its store logged
    to `<app>-store-changelog`; it committed offsets 2 and 1 of 5 and 4 records."""
    name = unique_name("sgtool")
    source, changelog = f"{name}-in", f"{name}-store-changelog"
    groups.create_topic(target.bootstrap, source, 2)
    produce(target.bootstrap, source)
    thread = StreamThread(target.bootstrap, name, source, changelog)
    # the group assigns nothing until the coordinator has created the changelog
    wait_for(lambda: thread.beat() and thread.partitions() == [0, 1],
             "the thread's tasks, once the coordinator created the changelog")
    assert changelog in topics(target)
    thread.commit({0: 2, 1: 1})
    yield name, source, changelog, thread
    thread.close()


def streams_groups(target, *args: str):
    return tool(target, STREAMS_GROUPS, *args)


@BOTH
def test_kafka_streams_groups_resets_deletes_offsets_and_deletes_the_group(target, app):
    name, source, changelog, thread = app
    described = streams_groups(target, "--describe", "--group", name, "--offsets")
    assert described.returncode == 0
    assert sorted(tuple(r.values()) for r in table(described.stdout, "GROUP")) == [
        (name, source, "0", "3"), (name, source, "1", "3")]

    # while its thread runs, the group is neither reset nor deleted
    busy = streams_groups(target, "--reset-offsets", "--group", name, "--all-input-topics",
                          "--to-earliest", "--execute")
    assert f"Error: Assignments can only be reset if the group '{name}' is inactive, but the " \
        "current state is Stable." in busy.stdout + busy.stderr
    deleting = streams_groups(target, "--delete", "--group", name)
    assert f"* Group '{name}' could not be deleted due to: org.apache.kafka.common.errors." \
        f"GroupNotEmptyException: Streams group '{name}' is not EMPTY." \
        in deleting.stdout + deleting.stderr
    assert committed(target, name, source) == [2, 1]

    thread.beat(epoch=-1)   # leaves: the group is empty
    state = streams_groups(target, "--describe", "--group", name, "--state")
    assert f"Streams group '{name}' has no active members." in state.stdout + state.stderr
    (row,) = [line.split() for line in state.stdout.splitlines() if line.startswith(name)]
    assert row[3:] == ["sticky", "Empty", "0"]
    for mode in ("--dry-run", "--execute"):
        reset = streams_groups(target, "--reset-offsets", "--group", name, "--all-input-topics",
                               "--to-earliest", mode)
        assert reset.returncode == 0
        assert sorted(tuple(r.values()) for r in table(reset.stdout, "GROUP")) == [
            (name, source, "0", "0"), (name, source, "1", "0")]
        assert committed(target, name, source) == ([2, 1] if mode == "--dry-run" else [0, 0])
    dropped = streams_groups(target, "--delete-offsets", "--group", name, "--input-topic", source)
    assert f"Request succeeded for deleting offsets from group {name}." in dropped.stdout
    assert sorted(tuple(r.values()) for r in table(dropped.stdout, "TOPIC")) == [
        (source, "0", "Successful"), (source, "1", "Successful")]
    assert committed(target, name, source) == [None, None]
    gone = streams_groups(target, "--delete", "--group", name)
    assert f"Deletion of requested streams groups ('{name}') was successful." in gone.stdout
    listed = streams_groups(target, "--list")
    assert listed.returncode == 0 and name not in listed.stdout.split()


def committed(target, group: str, topic: str) -> list[int | None]:
    """The group's committed offset of each input partition (None: none)."""
    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        offsets = consumer.committed([TopicPartition(topic, p) for p in RECORDS], timeout=10)
    finally:
        consumer.close()
    return [None if o.offset < 0 else o.offset for o in offsets]
