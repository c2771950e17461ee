import pytest

from roster.config import BrokerConfig, ConfigError, retention_ms


def test_defaults_are_kafkas():
    config = BrokerConfig.from_overrides({})
    assert config["num.partitions"] == 1
    assert config["socket.request.max.bytes"] == 104857600
    assert config["auto.create.topics.enable"] is True
    assert retention_ms(config) == 168 * 3_600_000


def test_sources_in_order_file_then_environment_then_set(tmp_path):
    properties = tmp_path / "server.properties"
    properties.write_text("# comment\nnum.partitions=2\nlog.retention.hours: 1\nzookeeper.connect=x\n")
    config = BrokerConfig.load(properties, ["log.retention.ms=5"],
                               environ={"ROSTER_NUM_PARTITIONS": "4"})
    assert config["num.partitions"] == 4
    assert retention_ms(config) == 5  # .ms wins over .hours


def test_retention_precedence_minutes_over_hours():
    assert retention_ms(BrokerConfig.from_overrides({"log.retention.minutes": "2"})) == 120_000
    assert retention_ms(BrokerConfig.from_overrides({"log.retention.hours": "-1"})) == -1


@pytest.mark.parametrize("key,value,fragment", [
    ("num.partitions", "many", "num.partitions='many'"),
    ("num.partitions", "0", "at least 1"),
    ("auto.create.topics.enable", "maybe", "true or false"),
    ("default.replication.factor", "3", "single broker"),
])
def test_bad_values_name_the_key(key, value, fragment):
    with pytest.raises(ConfigError, match=fragment):
        BrokerConfig.from_overrides({key: value})


def test_bad_assignment_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="expected key=value"):
        BrokerConfig.load(None, ["novalue"], environ={})
    with pytest.raises(ConfigError, match="cannot read"):
        BrokerConfig.load(tmp_path / "absent.properties", [], environ={})
