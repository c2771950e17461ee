"""Group configs (broker/group_configs.py): Kafka's validation, and kept across a restart."""
from __future__ import annotations

import pytest

from roster.broker.group_configs import DELETE, SET, GroupConfigError, GroupConfigStore
from roster.config import SETTINGS

DEFAULTS = {name: setting.default for name, setting in SETTINGS.items()}


def test_set_validate_persist_and_delete(tmp_path):
    store = GroupConfigStore(tmp_path, DEFAULTS)
    assert store.effective("g") == [("consumer.heartbeat.interval.ms", 5000, False),
                                    ("consumer.session.timeout.ms", 45000, False)]
    store.alter("g", [("consumer.session.timeout.ms", SET, "50000")])
    with pytest.raises(GroupConfigError, match="greater than or equal"):
        store.alter("g", [("consumer.session.timeout.ms", SET, "1000")])
    with pytest.raises(GroupConfigError, match="less than or equal"):
        store.alter("g", [("consumer.heartbeat.interval.ms", SET, "60000")])
    with pytest.raises(GroupConfigError, match="Unknown group config name"):
        store.alter("g", [("session.timeout.ms", SET, "50000")])
    with pytest.raises(GroupConfigError, match="Not a number"):
        store.alter("g", [("consumer.session.timeout.ms", SET, "soon")])
    store.alter("g", [("consumer.heartbeat.interval.ms", SET, "6000")], validate_only=True)
    assert GroupConfigStore(tmp_path, DEFAULTS).values == {
        "g": {"consumer.session.timeout.ms": 50000}}
    store.alter("g", [("consumer.session.timeout.ms", DELETE, None)])
    assert GroupConfigStore(tmp_path, DEFAULTS).values == {}


def test_session_must_exceed_heartbeat(tmp_path):
    limits = dict(DEFAULTS, **{"group.consumer.max.heartbeat.interval.ms": 60000})
    store = GroupConfigStore(tmp_path, limits)
    with pytest.raises(GroupConfigError, match="must be greater than consumer.heartbeat"):
        store.alter("g", [("consumer.heartbeat.interval.ms", SET, "45000")])
