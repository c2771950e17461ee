"""Every topic config Kafka 4.4 defines, through confluent-kafka's AdminClient against one shared
roster broker: set at creation, with IncrementalAlterConfigs and with AlterConfigs, read back with
DescribeConfigs with its source; every invalid value refused with INVALID_CONFIG and Kafka's own
message (the expected texts are what a Kafka 4.4 broker answered the same requests)."""
from __future__ import annotations

import itertools
import warnings

import pytest

from roster.topic_config_table import TOPIC_CONFIGS
from tests.support.process import BrokerProcess

pytestmark = pytest.mark.interop

# a valid value other than the default for every topic config
OTHER_VALUES = {
    "segment.bytes": "2097152", "segment.ms": "3600000", "segment.jitter.ms": "10",
    "segment.index.bytes": "4096", "flush.messages": "1000", "flush.ms": "5000",
    "retention.bytes": "1048576", "retention.ms": "86400000", "max.message.bytes": "65536",
    "index.interval.bytes": "1024", "delete.retention.ms": "1000",
    "min.compaction.lag.ms": "100", "max.compaction.lag.ms": "600000",
    "file.delete.delay.ms": "100", "min.cleanable.dirty.ratio": "0.25",
    "cleanup.policy": "compact,delete", "unclean.leader.election.enable": "true",
    "min.insync.replicas": "2", "compression.type": "zstd", "compression.gzip.level": "5",
    "compression.lz4.level": "12", "compression.zstd.level": "-5", "preallocate": "true",
    "message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "60000",
    "message.timestamp.after.max.ms": "120000",
    "leader.replication.throttled.replicas": "0:0,1:0",
    "follower.replication.throttled.replicas": "*", "remote.storage.enable": "false",
    "local.retention.ms": "1000", "local.retention.bytes": "1000",
    "remote.log.copy.disable": "true", "remote.log.delete.on.disable": "true",
    "remote.copy.lag.ms": "-1", "remote.copy.lag.bytes": "100",
    "max.decompressed.message.bytes": "1000000", "errors.deadletterqueue.group.enable": "true",
}

# (config, value, Kafka 4.4's message)
INVALID = [
    ("segment.bytes", "1", "Invalid value 1 for configuration segment.bytes: Value must be at "
                           "least 1048576"),
    ("segment.bytes", "abc", "Invalid value abc for configuration segment.bytes: Not a number "
                             "of type INT"),
    ("max.message.bytes", "99999999999", "Invalid value 99999999999 for configuration "
                                         "max.message.bytes: Not a number of type INT"),
    ("retention.ms", "-5", "Invalid value -5 for configuration retention.ms: Value must be at "
                           "least -1"),
    ("cleanup.policy", "foo", "Invalid value foo for configuration cleanup.policy: String must "
                              "be one of: compact, delete"),
    ("compression.type", "brotli", "Invalid value brotli for configuration compression.type: "
                                   "String must be one of: uncompressed, zstd, lz4, snappy, "
                                   "gzip, producer"),
    ("min.cleanable.dirty.ratio", "2", "Invalid value 2.0 for configuration "
                                       "min.cleanable.dirty.ratio: Value must be no more than 1"),
    ("min.cleanable.dirty.ratio", "-0.5", "Invalid value -0.5 for configuration "
                                          "min.cleanable.dirty.ratio: Value must be at least 0"),
    ("unclean.leader.election.enable", "yes", "Invalid value yes for configuration "
                                              "unclean.leader.election.enable: Expected value to "
                                              "be either true or false"),
    ("compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: "
                                    "Value must be between 1 and 9 or equal to -1"),
    ("compression.lz4.level", "18", "Invalid value 18 for configuration compression.lz4.level: "
                                    "Value must be no more than 17"),
    ("leader.replication.throttled.replicas", "x",
     "Invalid value [x] for configuration leader.replication.throttled.replicas: "
     "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the "
     "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    ("remote.storage.enable", "true", "Tiered Storage functionality is disabled in the broker. "
                                      "Topic cannot be configured with remote log storage."),
    ("nope.config", "1", "Unknown topic config name: nope.config"),
    ("message.timestamp.type", "create", "Invalid value create for configuration "
                                         "message.timestamp.type: String must be one of: "
                                         "CreateTime, LogAppendTime"),
    ("max.compaction.lag.ms", "0", "Invalid value 0 for configuration max.compaction.lag.ms: "
                                   "Value must be at least 1"),
    ("max.decompressed.message.bytes", "0", "Invalid value 0 for configuration "
                                            "max.decompressed.message.bytes: Value must be at "
                                            "least 1"),
    ("remote.copy.lag.ms", "-2", "Invalid value -2 for configuration remote.copy.lag.ms: Value "
                                 "must be at least -1"),
    ("errors.deadletterqueue.group.enable", "1", "Invalid value 1 for configuration "
                                                 "errors.deadletterqueue.group.enable: Expected "
                                                 "value to be either true or false"),
]
_names = (f"t{i}" for i in itertools.count())


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One broker for the module; the operator set log.segment.bytes (STATIC_BROKER_CONFIG)."""
    from confluent_kafka.admin import AdminClient
    broker = BrokerProcess(tmp_path_factory.mktemp("configs"),
                           {"log.segment.bytes": "4194304", "compression.type": "producer"})
    broker.start()
    try:
        yield broker, AdminClient({"bootstrap.servers": broker.bootstrap})
    finally:
        broker.stop()


def _create(admin, configs=None, validate_only=False) -> str:
    from confluent_kafka.admin import NewTopic
    name = next(_names)
    admin.create_topics([NewTopic(name, 1, 1, config=configs or {})],
                        validate_only=validate_only)[name].result(30)
    return name


def _describe(admin, name):
    from confluent_kafka.admin import ConfigResource, ResourceType
    resource = ConfigResource(ResourceType.TOPIC, name)
    return admin.describe_configs([resource])[resource].result(30)


def _incremental(admin, name, *entries):
    from confluent_kafka.admin import ConfigResource, ResourceType
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=list(entries))
    return admin.incremental_alter_configs([resource])[resource].result(30)


def _entry(name, value, operation):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    return ConfigEntry(name, value, incremental_operation=getattr(AlterConfigOpType, operation))


def _assert_own(described, values):
    from confluent_kafka.admin import ConfigSource
    for name, value in values.items():
        assert described[name].value == value, name
        assert described[name].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value, name


def test_the_table_names_every_config_kafka_does():
    assert set(OTHER_VALUES) == {spec.name for spec in TOPIC_CONFIGS}


def test_a_topic_without_overrides_reports_every_config_with_its_source(shared):
    from confluent_kafka.admin import ConfigSource
    _, admin = shared
    described = _describe(admin, _create(admin))
    assert set(described) == {spec.name for spec in TOPIC_CONFIGS}
    for spec in TOPIC_CONFIGS:
        entry = described[spec.name]
        if spec.name in ("segment.bytes", "compression.type"):  # the operator set these
            assert (entry.value, entry.source) == (
                {"segment.bytes": "4194304"}.get(spec.name, spec.default),
                ConfigSource.STATIC_BROKER_CONFIG.value)
        elif spec.name == "flush.ms":  # roster flushes every second by default (durability.md)
            assert (entry.value, entry.source) == ("1000", ConfigSource.DEFAULT_CONFIG.value)
        elif spec.name == "min.insync.replicas":   # KRaft's cluster-wide default (Kafka 4.1+)
            assert (entry.value, entry.source) == (
                spec.default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        else:
            assert (entry.value, entry.source) == (spec.default,
                                                   ConfigSource.DEFAULT_CONFIG.value), spec.name
        assert not entry.is_read_only


def test_every_config_set_at_creation_is_described_as_the_topics_own(shared):
    _, admin = shared
    name = _create(admin, OTHER_VALUES)
    _assert_own(_describe(admin, name), OTHER_VALUES)


def test_incremental_alter_sets_and_deletes_every_config(shared):
    from confluent_kafka.admin import ConfigSource
    _, admin = shared
    name = _create(admin)
    _incremental(admin, name, *(_entry(k, v, "SET") for k, v in OTHER_VALUES.items()))
    _assert_own(_describe(admin, name), OTHER_VALUES)
    _incremental(admin, name, *(_entry(k, None, "DELETE") for k in OTHER_VALUES))
    described = _describe(admin, name)
    assert all(described[k].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value
               for k in OTHER_VALUES)


def test_append_and_subtract_work_on_lists_only(shared):
    from confluent_kafka import KafkaException
    _, admin = shared
    name = _create(admin)
    # APPEND starts from Kafka's default (delete) when the topic does not set the list
    _incremental(admin, name, _entry("cleanup.policy", "compact", "APPEND"),
                 _entry("follower.replication.throttled.replicas", "0:0", "APPEND"))
    described = _describe(admin, name)
    assert described["cleanup.policy"].value == "delete,compact"
    assert described["follower.replication.throttled.replicas"].value == "0:0"
    _incremental(admin, name, _entry("cleanup.policy", "delete", "SUBTRACT"))
    assert _describe(admin, name)["cleanup.policy"].value == "compact"
    with pytest.raises(KafkaException, match="Can't APPEND to key retention.ms because its "
                                             "type is not LIST."):
        _incremental(admin, name, _entry("retention.ms", "5", "APPEND"))


def test_legacy_alter_configs_sets_every_config(shared):
    from confluent_kafka.admin import ConfigResource, ResourceType
    _, admin = shared
    name = _create(admin)
    resource = ConfigResource(ResourceType.TOPIC, name, set_config=dict(OTHER_VALUES))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        admin.alter_configs([resource])[resource].result(30)
    _assert_own(_describe(admin, name), OTHER_VALUES)


@pytest.mark.parametrize(("config", "value", "message"), INVALID,
                         ids=[f"{c}={v}" for c, v, _ in INVALID])
def test_invalid_values_are_refused_as_kafka_refuses_them(shared, config, value, message):
    from confluent_kafka import KafkaException
    _, admin = shared
    with pytest.raises(KafkaException) as created:
        _create(admin, {config: value}, validate_only=True)
    error = created.value.args[0]
    assert (error.name(), error.str()) == ("INVALID_CONFIG", message)
    name = _create(admin)
    with pytest.raises(KafkaException) as altered:
        _incremental(admin, name, _entry(config, value, "SET"))
    error = altered.value.args[0]
    assert (error.name(), error.str()) == ("INVALID_CONFIG", message)
    assert _describe(admin, name).get(config) is None or \
        _describe(admin, name)[config].source != 1   # nothing changed


def test_settings_across_configs_are_checked_together(shared):
    from confluent_kafka import KafkaException
    _, admin = shared
    with pytest.raises(KafkaException, match=r"conflict topic config setting "
                                             r"min.compaction.lag.ms \(10\) > "
                                             r"max.compaction.lag.ms \(5\)"):
        _create(admin, {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
                validate_only=True)
    # what Kafka 4.4 lets through: duplicates and spaces in a list, an empty cleanup.policy,
    # its internal segment size, min.insync.replicas above the replication factor
    for configs in ({"cleanup.policy": "compact, delete"}, {"cleanup.policy": ""},
                    {"internal.segment.bytes": "2048"}, {"min.insync.replicas": "2"},
                    {"retention.bytes": "-7"}):
        _create(admin, configs, validate_only=True)
