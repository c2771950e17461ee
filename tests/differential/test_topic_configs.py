"""Topic configs against Kafka 4.4 and roster side by side: the configs a new topic lists (names,
values, types), every invalid value's INVALID_CONFIG message, and the Produce answers the topic
configs shape (error code, error message, record_errors, log_append_time) for the same batches."""
from __future__ import annotations

import re
import time
import uuid

import pytest

from roster.protocol.api_keys import ApiKey
from roster.record_codec import DefaultRecordBatchBuilder
from tests.interop.test_bad_input import _produce
from tests.interop.test_topic_configs_all import INVALID
from tests.support.wire import Wire
from tests.unit.batches import with_field

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("kafka")]

# roster flushes every second by default (docs/durability.md); Kafka leaves it to the OS
ROSTER_OWN = {"flush.ms"}
# a source a combined KRaft node sets up itself: its metadata log's log.flush.interval.messages
# (STATIC_BROKER_CONFIG), whose value is Kafka's default, which roster reports as DEFAULT_CONFIG.
# (The cluster-wide min.insync.replicas `kafka-storage format` writes, DYNAMIC_DEFAULT_BROKER_CONFIG,
# roster reports as Kafka does: topic_config.CLUSTER_DEFAULTS.)
KRAFT_OWN_SOURCES = {"flush.messages"}


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


def _min_insync_replicas(wire, topics: list[str]) -> list:
    """DescribeConfigs v4 of the topics' min.insync.replicas and of the cluster's default
    broker resource (""): per resource, (name, value, source, synonyms' sources), the
    operator's own (STATIC_BROKER_CONFIG) left out: only Kafka's peer sets it."""
    from roster.protocol.build import element
    from roster.protocol.codec import request_schema
    entry = element(request_schema(ApiKey.DESCRIBE_CONFIGS, 4), "resources")
    answer = wire.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=(
        *(entry(resource_type=2, resource_name=topic, configuration_keys=("min.insync.replicas",))
          for topic in topics),
        entry(resource_type=4, resource_name="", configuration_keys=None)),
        include_synonyms=True, include_documentation=False)
    return [(int(r.error_code), [(c.name, c.value, int(c.config_source),
                                  [int(x.source) for x in c.synonyms if int(x.source) != 4])
                                 for c in r.configs]) for r in answer.results]


def test_the_cluster_wide_min_insync_replicas_is_described_as_kafka_describes_it(kafka_peer,
                                                                                 roster_peer):
    """A KRaft cluster (4.1+) writes min.insync.replicas as a cluster-wide default when it is
    formatted: the topic's min.insync.replicas is DYNAMIC_DEFAULT_BROKER_CONFIG (3), and the
    cluster's default broker resource lists it (what confluent-kafka-python's own
    test_incremental_alter_configs expects)."""
    answers = {}
    for side, bootstrap in both(kafka_peer, roster_peer).items():
        admin = _admin(bootstrap)
        names = [f"min-isr-{uuid.uuid4().hex[:8]}", f"min-isr-set-{uuid.uuid4().hex[:8]}"]
        _create(admin, names[0], {})
        _create(admin, names[1], {"min.insync.replicas": "2"})
        for name in names:
            _described(admin, name)
        with Wire(bootstrap) as wire:
            answers[side] = _min_insync_replicas(wire, names)
    assert answers["roster"] == answers["kafka"]
    assert answers["kafka"][0][1] == [("min.insync.replicas", "1", 3, [3, 5])]
