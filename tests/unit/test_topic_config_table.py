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
