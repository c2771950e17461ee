"""DescribeConfigs through the admin clients: a topic's settings say which were set on the topic,
the broker's say which the operator set, and an unknown topic is an error, not an empty list."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.interop


@pytest.fixture
def configured(broker_factory):
    broker = broker_factory({"log.retention.hours": "24"})
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("conf", 2, 1, config={"retention.ms": "60000"})])["conf"] \
        .result(30)
    return broker, admin


def test_confluent_kafka_sees_topic_and_broker_sources(configured):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType
    broker, admin = configured
    topic_resource = ConfigResource(ResourceType.TOPIC, "conf")
    broker_resource = ConfigResource(ResourceType.BROKER, "0")
    answers = admin.describe_configs([topic_resource, broker_resource])
    topic = answers[topic_resource].result(30)
    assert topic["retention.ms"].value == "60000"
    assert topic["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert topic["retention.bytes"].value == "-1"
    assert topic["retention.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert topic["cleanup.policy"].value == "delete" and not topic["cleanup.policy"].is_read_only
    settings = answers[broker_resource].result(30)
    assert settings["log.retention.hours"].value == "24"
    assert settings["log.retention.hours"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert settings["log.segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert settings["auto.create.topics.enable"].value == "true"
    assert all(entry.is_read_only for entry in settings.values())
    missing = ConfigResource(ResourceType.TOPIC, "absent")
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC_OR_PART"):
        admin.describe_configs([missing])[missing].result(30)


def test_kafka_python_lists_every_topic_setting_with_synonyms(configured):
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType
    broker, _ = configured
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "conf")],
                                           include_synonyms=True, config_filter="all")
    finally:
        admin.close()
    topic = described["topic"]["conf"]
    assert topic["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert topic["retention.ms"]["synonyms"] == [
        {"name": "retention.ms", "value": "60000", "source": "DYNAMIC_TOPIC_CONFIG"}]
    assert topic["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
    assert topic["segment.bytes"]["synonyms"][0]["name"] == "log.segment.bytes"
    assert topic["max.message.bytes"]["config_type"] == "INT"
