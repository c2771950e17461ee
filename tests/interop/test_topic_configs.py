"""Topic settings through the admin clients. DescribeConfigs: a topic's settings say which were
set on the topic, the broker's say which the operator set, and an unknown topic is an error, not
an empty list. (Incremental)AlterConfigs: a change is answered once it is durable, survives a
restart and governs the log at once; broker settings are refused."""
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
    # as Kafka 4.4 lists them: the topic's own value, then the first broker synonym's default
    # (log.retention.ms has none)
    assert topic["retention.ms"]["synonyms"] == [
        {"name": "retention.ms", "value": "60000", "source": "DYNAMIC_TOPIC_CONFIG"}]
    assert topic["segment.bytes"]["synonyms"] == [
        {"name": "log.segment.bytes", "value": "1073741824", "source": "DEFAULT_CONFIG"}]
    assert topic["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
    assert topic["segment.bytes"]["synonyms"][0]["name"] == "log.segment.bytes"
    assert topic["max.message.bytes"]["config_type"] == "INT"


def test_incremental_alter_configs_changes_a_topic_durably_and_at_once(configured):
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        ResourceType,
    )
    broker, admin = configured

    def alter(*entries):
        resource = ConfigResource(ResourceType.TOPIC, "conf", incremental_configs=list(entries))
        return admin.incremental_alter_configs([resource])[resource].result(30)

    def topic_settings():
        resource = ConfigResource(ResourceType.TOPIC, "conf")
        return admin.describe_configs([resource])[resource].result(30)

    alter(ConfigEntry("max.message.bytes", "200", incremental_operation=AlterConfigOpType.SET),
          ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE))
    settings = topic_settings()
    assert settings["max.message.bytes"].value == "200"
    # back to the broker's: log.retention.hours=24, which the operator set; Kafka 4.4 reports
    # it as DEFAULT_CONFIG (only log.retention.ms, the first synonym, would be STATIC)
    assert settings["retention.ms"].value == str(24 * 3600 * 1000)
    assert settings["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 100_000,
                         "compression.type": "none"})
    failures = []
    producer.produce("conf", value=b"x" * 1000, partition=0,
                     on_delivery=lambda err, msg: failures.append(err))
    producer.flush(30)
    assert failures and failures[0].name() == "MSG_SIZE_TOO_LARGE", failures
    with pytest.raises(KafkaException, match="INVALID_CONFIG"):
        alter(ConfigEntry("segment.bytes", "1", incremental_operation=AlterConfigOpType.SET))
    with pytest.raises(KafkaException, match="INVALID_CONFIG"):
        alter(ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND))
    broker.restart()
    admin = type(admin)({"bootstrap.servers": broker.bootstrap})
    settings = topic_settings()
    assert settings["max.message.bytes"].value == "200" and settings["segment.bytes"].value != "1"


def test_kafka_python_alters_one_setting_and_is_refused_the_broker(configured):
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType
    broker, _ = configured
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        answer = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "conf",
                                                     configs={"retention.bytes": "4096"})])
        assert answer == {"topic": {"conf": "OK"}}
        topic = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "conf")])
        modified = {k: v["value"] for k, v in topic["topic"]["conf"].items()}
        assert modified == {"retention.bytes": "4096", "retention.ms": "60000"}
        refused = admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, "0",
                                                      configs={"num.partitions": "3"})],
                                      raise_on_unknown=False)
        assert "InvalidRequest" in refused["broker"]["0"] and "static" in refused["broker"]["0"]
    finally:
        admin.close()


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_legacy_alter_configs_replaces_the_topics_own_settings_whole(configured):
    from confluent_kafka.admin import ConfigResource, ResourceType
    broker, admin = configured
    resource = ConfigResource(ResourceType.TOPIC, "conf", set_config={"retention.bytes": "4096"})
    admin.alter_configs([resource])[resource].result(30)
    resource = ConfigResource(ResourceType.TOPIC, "conf")
    settings = admin.describe_configs([resource])[resource].result(30)
    set_on_topic = {k for k, v in settings.items() if v.source == 1}  # DYNAMIC_TOPIC_CONFIG
    assert set_on_topic == {"retention.bytes"}  # retention.ms, given at creation, is gone


def test_roster_topics_alter_and_describe(configured):
    from tests.interop.test_cli_groups import roster
    broker, _ = configured
    roster(broker.bootstrap, "topics", "alter", "conf", "--config", "segment.bytes=1048576",
           "--delete-config", "retention.ms")
    described = roster(broker.bootstrap, "topics", "describe", "conf")
    assert "Configs: segment.bytes=1048576\n" in described and "PartitionCount: 2" in described
