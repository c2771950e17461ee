"""Topic configs against Kafka 4.4 and roster side by side: the configs a new topic lists (names,
values, types), every invalid value's INVALID_CONFIG message, and the Produce answers the topic
configs shape (error code, error message, record_errors, log_append_time) for the same batches."""
from __future__ import annotations

import re
import time
import uuid

import pytest

from roster.record_codec import DefaultRecordBatchBuilder
from tests.interop.test_bad_input import _produce
from tests.interop.test_topic_configs_all import INVALID
from tests.support.wire import Wire
from tests.unit.batches import with_field

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("kafka")]

# roster flushes every second by default (docs/durability.md); Kafka leaves it to the OS
ROSTER_OWN = {"flush.ms"}
# sources a combined KRaft node sets up itself: its metadata log's log.flush.interval.messages
# (STATIC_BROKER_CONFIG) and the cluster-wide min.insync.replicas `kafka-storage format` writes
# (DYNAMIC_DEFAULT_BROKER_CONFIG); their values are Kafka's defaults, which roster reports as
# DEFAULT_CONFIG
KRAFT_OWN_SOURCES = {"flush.messages", "min.insync.replicas"}


def _admin(bootstrap):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap})


def _create(admin, name, configs, validate_only=False):
    from confluent_kafka.admin import NewTopic
    admin.create_topics([NewTopic(name, 1, 1, config=configs)],
                        validate_only=validate_only)[name].result(30)


def _described(admin, name):
    """The topic's configs once the broker knows the topic (Kafka's metadata reaches its
    broker a moment after CreateTopics answers)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigResource, ResourceType
    resource = ConfigResource(ResourceType.TOPIC, name)
    deadline = time.monotonic() + 30
    while True:
        try:
            return admin.describe_configs([resource])[resource].result(30)
        except KafkaException:
            assert time.monotonic() < deadline, f"topic {name} never became known"
            time.sleep(0.05)  # polling the broker's answer


def both(kafka_peer, roster_peer):
    return {"kafka": kafka_peer.bootstrap, "roster": roster_peer.bootstrap}


def test_a_new_topic_lists_the_same_configs(kafka_peer, roster_peer):
    name = f"configs-{uuid.uuid4().hex[:8]}"
    listed = {}
    for side, bootstrap in both(kafka_peer, roster_peer).items():
        admin = _admin(bootstrap)
        _create(admin, name, {"retention.ms": "60000", "cleanup.policy": "compact,delete"})
        listed[side] = {key: entry.value for key, entry in _described(admin, name).items()
                        if key not in ROSTER_OWN}
    assert listed["roster"] == listed["kafka"]


def test_invalid_values_get_the_same_answer(kafka_peer, roster_peer):
    from confluent_kafka import KafkaException
    answers = {}
    for side, bootstrap in both(kafka_peer, roster_peer).items():
        admin = _admin(bootstrap)
        answers[side] = []
        for config, value, _ in INVALID:
            try:
                _create(admin, f"invalid-{uuid.uuid4().hex[:8]}", {config: value},
                        validate_only=True)
                answers[side].append((config, value, "accepted"))
            except KafkaException as exc:
                answers[side].append((config, value, exc.args[0].name(), exc.args[0].str()))
    assert answers["roster"] == answers["kafka"]


def _batch(keys, timestamp, codec=0, producer_id=-1):
    builder = DefaultRecordBatchBuilder(2, codec, 0, producer_id, 0 if producer_id >= 0 else -1,
                                        -1, 1 << 30)
    for i, key in enumerate(keys):
        builder.append(i, timestamp + i, key, b"v", [])
    return bytes(builder.build())


def _answers(bootstrap):
    """The Produce answers of one broker for batches each topic config shapes."""
    admin = _admin(bootstrap)
    suffix = uuid.uuid4().hex[:8]
    topics = {"keys": {"cleanup.policy": "compact"},
              "times": {"message.timestamp.before.max.ms": "3600000"},
              "stamped": {"message.timestamp.type": "LogAppendTime"},
              "gzip": {"compression.type": "gzip"}, "small": {"max.message.bytes": "100"},
              "isr": {"min.insync.replicas": "2"}}
    for topic, configs in topics.items():
        _create(admin, f"{topic}-{suffix}", configs)
        _described(admin, f"{topic}-{suffix}")
    now = int(time.time() * 1000)
    batches = [("keys", _batch([b"a", None, None, None, None], now)),
               ("times", _batch([b"a", b"b"], now - 7_200_000)),
               ("times", _batch([b"a"], now + 7_200_000)),
               ("stamped", _batch([b"a"], 1000)), ("gzip", _batch([b"a"], now, codec=3)),
               ("small", _batch([b"a"] * 20, now)), ("isr", _batch([b"a"], now)),
               # what any client batch may not be (LogValidator.validateBatch)
               ("isr", with_field(_batch([b"a"], now), "h", 21, 0x20)),       # a control batch
               ("isr", with_field(_batch([b"a", b"b"], now), "i", 57, 3)),    # count != offsets
               ("isr", _batch([b"a"], now, producer_id=7))]                   # no sequence
    answers = []
    with Wire(bootstrap) as wire:
        for topic, data in batches:
            deadline = time.monotonic() + 30
            while True:  # Kafka's partition leader comes up a moment after the topic
                answer = _produce(wire, f"{topic}-{suffix}", 0, data, acks=-1)
                if answer.error_code != 6 or time.monotonic() > deadline:  # NOT_LEADER
                    break
                time.sleep(0.05)  # polling the broker's answer
            message = re.sub(r"\d{13}", "<time>", answer.error_message or "")
            answers.append((topic, int(answer.error_code), message.replace(suffix, ""),
                            [(e.batch_index, re.sub(r"\d{13}", "<time>",
                                                    e.batch_index_error_message or "")
                              .replace(suffix, "")) for e in answer.record_errors],
                            answer.log_append_time is not None))
    return answers


def test_produce_answers_match(kafka_peer, roster_peer):
    assert _answers(roster_peer.bootstrap) == _answers(kafka_peer.bootstrap)


def test_create_topics_answers_the_same_configs(kafka_peer, roster_peer):
    """CreateTopics v5+ lists the new topic's configs with their sources."""
    from tests.interop.test_bad_input import _create as create_raw
    answers = {}
    for side, bootstrap in both(kafka_peer, roster_peer).items():
        with Wire(bootstrap) as wire:
            created = create_raw(wire, f"answered-{uuid.uuid4().hex[:8]}",
                                 configs=[("retention.ms", "60000")])
        answers[side] = sorted(
            (c.name, c.value, None if c.name in KRAFT_OWN_SOURCES else int(c.config_source),
             c.read_only) for c in created.configs if c.name not in ROSTER_OWN)
    assert answers["roster"] == answers["kafka"]
