"""Group configs (broker/groups/group_configs.py): Kafka's validation, and kept across a restart."""
from __future__ import annotations

import pytest

from roster.broker.groups.group_configs import DELETE, SET, GroupConfigError, GroupConfigStore
from roster.config import SETTINGS

DEFAULTS = {name: setting.default for name, setting in SETTINGS.items()}


def test_set_validate_persist_and_delete(tmp_path):
    store = GroupConfigStore(tmp_path, DEFAULTS)
    assert store.effective("g") == [("consumer.heartbeat.interval.ms", 5000, False),
                                    ("consumer.session.timeout.ms", 45000, False),
                                    ("group.expected.instance.ids", "", False),
                                    ("group.expected.size", -1, False),
                                    ("group.expected.refuse.unexpected", True, False)]
    store.alter("g", [("consumer.session.timeout.ms", SET, "50000")])
    with pytest.raises(GroupConfigError, match="must be in the range 45000 to 60000 inclusive"):
        store.alter("g", [("consumer.session.timeout.ms", SET, "1000")])
    with pytest.raises(GroupConfigError, match="in the range 5000 to 15000 inclusive"):
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


def test_expected_static_members(tmp_path):
    from roster.coordinator.classic.expectations import Expected
    store = GroupConfigStore(tmp_path, DEFAULTS)
    assert store.expected("g") is None
    store.alter("g", [("group.expected.instance.ids", SET, "a, b,a,c")])
    assert store.expected("g") == Expected(frozenset({"a", "b", "c"}))
    with pytest.raises(GroupConfigError, match="must be the number of"):
        store.alter("g", [("group.expected.size", SET, "2")])
    with pytest.raises(GroupConfigError, match="none empty"):
        store.alter("g", [("group.expected.instance.ids", SET, "a,,b")])
    with pytest.raises(GroupConfigError, match="true or false"):
        store.alter("g", [("group.expected.refuse.unexpected", SET, "maybe")])
    store.alter("g", [("group.expected.refuse.unexpected", SET, "false")])
    # kept across a restart, in its own types
    reloaded = GroupConfigStore(tmp_path, DEFAULTS)
    assert reloaded.values == {"g": {"group.expected.instance.ids": "a,b,c",
                                     "group.expected.refuse.unexpected": False}}
    assert reloaded.expected("g") == Expected(frozenset({"a", "b", "c"}),
                                              refuse_unexpected=False)
    store.alter("g", [("group.expected.instance.ids", DELETE, None),
                      ("group.expected.size", SET, "3")])
    assert store.expected("g") == Expected(size=3, refuse_unexpected=False)
    with pytest.raises(GroupConfigError, match="at least 1"):
        store.alter("h", [("group.expected.size", SET, "0")])
