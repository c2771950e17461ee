"""The topic config table: docs/configuration.md holds exactly what it generates, and its data
is consistent (defaults pass their own validators, broker settings exist in roster's config)."""
from __future__ import annotations

from pathlib import Path

import pytest

from roster import topic_config
from roster.config import SETTINGS, BrokerConfig
from roster.topic_config_table import TOPIC_CONFIGS, markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_configuration_md_holds_the_generated_topic_table():
    text = DOC.read_text()
    start = text.index("<!-- topic config table")
    end = text.index("<!-- end of topic config table -->") + len("<!-- end of topic config "
                                                                     "table -->")
    assert text[start:end] == markdown(), "run: python -m roster.topic_config_table"


@pytest.mark.parametrize("spec", TOPIC_CONFIGS, ids=lambda spec: spec.name)
def test_each_default_is_valid_and_its_broker_settings_exist(spec):
    topic_config.parse(spec.name, spec.default)
    assert spec.roster in ("implemented", "checked", "accepted")
    for broker_name, _ in spec.synonyms:
        assert broker_name in SETTINGS


def test_an_operators_broker_setting_is_validated_as_its_topic_config():
    assert BrokerConfig.from_overrides({"log.cleanup.policy": "compact,delete"})[
        "log.cleanup.policy"] == "compact,delete"
    with pytest.raises(ValueError, match="String must be one of: CreateTime, LogAppendTime"):
        BrokerConfig.from_overrides({"log.message.timestamp.type": "Now"})


def test_a_topic_takes_the_first_broker_setting_given_converted():
    resolved = {r.name: r for r in topic_config.resolve(
        {}, {"log.retention.hours": 24, "log.retention.ms": None}, {"log.retention.hours"},
        {"log.retention.hours": 168})}
    assert resolved["retention.ms"].value == str(24 * 3600_000)
    assert resolved["retention.ms"].source == topic_config.DEFAULT_CONFIG


def test_min_insync_replicas_comes_from_the_cluster_wide_default_as_in_kraft():
    """KRaft writes min.insync.replicas as a cluster-wide default at format (Kafka 4.1+): the
    topic config is DYNAMIC_DEFAULT_BROKER_CONFIG, with that default, the operator's value
    (when given) and Kafka's default as its synonyms; set on the topic, the topic's own first."""
    def resolved(topic_configs, explicit):
        return {r.name: r for r in topic_config.resolve(
            topic_configs, {"min.insync.replicas": 2}, explicit,
            {"min.insync.replicas": 1})}["min.insync.replicas"]

    r = resolved({}, set())
    assert (r.value, r.source) == ("2", topic_config.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert [s[2] for s in r.synonyms] == [3, 5]
    r = resolved({}, {"min.insync.replicas"})
    assert r.synonyms == (("min.insync.replicas", "2", 3), ("min.insync.replicas", "2", 4),
                          ("min.insync.replicas", "1", 5))
    r = resolved({"min.insync.replicas": "3"}, set())
    assert (r.value, r.source) == ("3", topic_config.DYNAMIC_TOPIC_CONFIG)
    assert [s[2] for s in r.synonyms] == [1, 3, 5]
