"""A share group's dead-letter queue (KIP-1191) against roster and the Apache Kafka 4.4 peer
with the same assertions: confluent-kafka's ShareConsumer rejects some records, and the group's
errors.deadletterqueue.topic.name gets them with the same __dlq.errors.* headers (and the
records' key and value, with errors.deadletterqueue.copy.record.enable)."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from tests.interop.test_share_kill9 import _serves_share_groups
from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name

BOTH = pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
WAIT_S = 60


def _setup(bootstrap: str, topic: str, dlq: str, group: str, copy: bool,
           **group_configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([
            NewTopic(topic, 1, 1),
            NewTopic(dlq, 1, 1, config={"errors.deadletterqueue.group.enable": "true"})]
    ).values():
        future.result(30)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in {"share.auto.offset.reset": "earliest",
                            "errors.deadletterqueue.topic.name": dlq,
                            "errors.deadletterqueue.copy.record.enable":
                                "true" if copy else "false", **group_configs}.items()])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(["ok-0", "reject-1", "ok-2", "reject-3"]):
        producer.produce(topic, key=b"k%d" % i, value=value.encode(), partition=0)
    producer.flush(30)


def _consume_rejecting(bootstrap: str, topic: str, group: str) -> None:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    try:
        consumer.subscribe([topic])
        seen: set[int] = set()
        deadline = time.monotonic() + WAIT_S
        while len(seen) < 4 and time.monotonic() < deadline:
            messages = [m for m in consumer.poll(0.5) if m.error() is None]
            for message in messages:
                rejected = message.value().startswith(b"reject")
                consumer.acknowledge(message, AcknowledgeType.REJECT if rejected
                                     else AcknowledgeType.ACCEPT)
                seen.add(message.offset())
            if messages:
                consumer.commit_sync()
        assert seen == {0, 1, 2, 3}
    finally:
        consumer.close()


def _dead_letters(bootstrap: str, dlq: str, count: int) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("dlq-reader"),
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(dlq, 0, 0)])
    found = []
    deadline = time.monotonic() + WAIT_S
    try:
        while len(found) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                found.append((message.key(), message.value(),
                              {k: v.decode() for k, v in message.headers() or []}))
    finally:
        consumer.close()
    return found


@BOTH
@pytest.mark.parametrize("copy", [True, False])
def test_rejected_records_reach_the_dead_letter_queue(target, copy):
    if not _serves_share_groups(target.bootstrap):
        pytest.skip("this broker does not serve share groups yet")
    topic, group = unique_name("dlq-source"), unique_name("dlq-group")
    dlq = "dlq." + unique_name("dead")
    _setup(target.bootstrap, topic, dlq, group, copy)
    _consume_rejecting(target.bootstrap, topic, group)
    letters = _dead_letters(target.bootstrap, dlq, 2)
    assert [(k, v) for k, v, _ in letters] == (
        [(b"k1", b"reject-1"), (b"k3", b"reject-3")] if copy else [(None, None), (None, None)])
    for (_, _, headers), offset in zip(letters, ("1", "3")):
        assert headers == {"__dlq.errors.topic": topic, "__dlq.errors.partition": "0",
                           "__dlq.errors.offset": offset, "__dlq.errors.group": group,
                           "__dlq.errors.delivery.count": "1",
                           "__dlq.errors.message": "Offset rejected by client."}, headers


def _release_until_archived(bootstrap: str, topic: str, group: str) -> list[list]:
    """Release every record delivered until nothing comes back: the deliveries, poll by poll,
    as [offset, delivery count] pairs."""
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    polls = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + WAIT_S
        quiet_until = None
        while time.monotonic() < deadline:
            messages = [m for m in consumer.poll(0.5) if m.error() is None]
            if not messages:
                if polls and quiet_until is None:
                    quiet_until = time.monotonic() + 5
                if quiet_until is not None and time.monotonic() > quiet_until:
                    break
                continue
            quiet_until = None
            polls.append(sorted([m.offset(), m.delivery_count()] for m in messages))
            for message in messages:
                consumer.acknowledge(message, AcknowledgeType.RELEASE)
            consumer.commit_sync()
    finally:
        consumer.close()
    return polls


@BOTH
def test_records_released_to_the_delivery_limit_are_archived_to_the_dead_letter_queue(target):
    if not _serves_share_groups(target.bootstrap):
        pytest.skip("this broker does not serve share groups yet")
    topic, group = unique_name("dlq-limit"), unique_name("dlq-limit-group")
    dlq = "dlq." + unique_name("limit")
    _setup(target.bootstrap, topic, dlq, group, copy=False,
           **{"share.delivery.count.limit": "3"})
    polls = _release_until_archived(target.bootstrap, topic, group)
    deliveries = sorted(pair for poll in polls for pair in poll)
    assert deliveries == sorted([o, n] for o in range(4) for n in (1, 2, 3)), polls
    # the last delivery of each record goes out alone (limit 3 > 2)
    assert all(len(poll) == 1 for poll in polls if any(n == 3 for _, n in poll)), polls
    letters = _dead_letters(target.bootstrap, dlq, 4)
    assert sorted(h["__dlq.errors.offset"] for _, _, h in letters) == ["0", "1", "2", "3"]
    assert {(h["__dlq.errors.delivery.count"], h["__dlq.errors.message"])
            for _, _, h in letters} == {("3", "Offset delivery count exceeded the threshold.")}
