"""Group configs (broker/groups/group_configs.py with each group type's table, as the broker
builds it): Kafka's validation, and kept across a restart."""
from __future__ import annotations

import pytest

from roster.broker.groups.expected_members import expected
from roster.broker.groups.group_configs import DELETE, SET, GroupConfigError
from roster.broker.groups.group_configs import GroupConfigStore as Store
from roster.config import SETTINGS
from roster.group_types import with_built_in

DEFAULTS = {name: setting.default for name, setting in SETTINGS.items()}


def GroupConfigStore(path, config):
    """The store with every built-in type's table, as Broker makes it."""
    return Store(path, config, [t.group_configs for t in with_built_in()
                                if t.group_configs is not None])


def test_set_validate_persist_and_delete(tmp_path):
    store = GroupConfigStore(tmp_path, DEFAULTS)
    assert [entry[:3] for entry in store.effective("g")] == [
        ("share.session.timeout.ms", 45000, False),
        ("share.heartbeat.interval.ms", 5000, False),
        ("share.record.lock.duration.ms", 30000, False),
        ("share.delivery.count.limit", 5, False),
        ("share.partition.max.record.locks", 2000, False),
        ("share.auto.offset.reset", "latest", False),
        ("share.isolation.level", "read_uncommitted", False),
        ("share.renew.acknowledge.enable", True, False),
        ("share.assignment.interval.ms", 1000, False),
        ("errors.deadletterqueue.topic.name", "", False),
        ("errors.deadletterqueue.copy.record.enable", False, False),
        ("streams.session.timeout.ms", 45000, False),
        ("streams.heartbeat.interval.ms", 5000, False),
        ("streams.num.standby.replicas", 0, False),
        ("streams.initial.rebalance.delay.ms", 3000, False),
        ("streams.assignment.interval.ms", 1000, False),
        ("streams.assignor.name", "sticky", False),
        ("streams.rack.aware.assignment.tags", "", False),
        ("consumer.assignment.interval.ms", 1000, False),
        ("consumer.assignor.offload.enable", True, False),
        ("consumer.heartbeat.interval.ms", 5000, False),
        ("consumer.session.timeout.ms", 45000, False),
        ("group.expected.instance.ids", "", False),
        ("group.expected.size", -1, False),
        ("group.expected.refuse.unexpected", True, False)]
    # each with the broker setting it defaults to and its ConfigType
    by_name = {name: rest for name, *rest in store.effective("g")}
    assert by_name["consumer.session.timeout.ms"][2:] == [
        "group.consumer.session.timeout.ms", "int"]
    assert by_name["consumer.assignor.offload.enable"][2:] == [
        "group.consumer.assignor.offload.enable", "boolean"]
    assert by_name["group.expected.instance.ids"][2:] == [None, "list"]
    with pytest.raises(GroupConfigError, match="in the range 0 to 15000 inclusive"):
        store.alter("g", [("consumer.assignment.interval.ms", SET, "20000")])
    with pytest.raises(GroupConfigError, match="Expected value to be either true or false"):
        store.alter("g", [("consumer.assignor.offload.enable", SET, "maybe")])
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
    assert expected(store.own("g")) is None
    store.alter("g", [("group.expected.instance.ids", SET, "a, b,a,c")])
    assert expected(store.own("g")) == Expected(frozenset({"a", "b", "c"}))
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
    assert expected(reloaded.own("g")) == Expected(frozenset({"a", "b", "c"}),
                                              refuse_unexpected=False)
    store.alter("g", [("group.expected.instance.ids", DELETE, None),
                      ("group.expected.size", SET, "3")])
    assert expected(store.own("g")) == Expected(size=3, refuse_unexpected=False)
    with pytest.raises(GroupConfigError, match="at least 1"):
        store.alter("h", [("group.expected.size", SET, "0")])


def test_streams_configs_within_the_brokers_bounds_in_kafkas_words(tmp_path):
    """streams.* as Kafka 4.4 refuses them (each message checked against Kafka 4.4's answer
    to kafka-configs --alter)."""
    store = GroupConfigStore(tmp_path, DEFAULTS)
    refusals = [
        ("streams.session.timeout.ms", "1000",
         "streams.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
        ("streams.heartbeat.interval.ms", "20000",
         "streams.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."),
        ("streams.num.standby.replicas", "3",
         "streams.num.standby.replicas must be less than or equal to 2"),
        ("streams.num.standby.replicas", "-1", "Invalid value -1 for configuration "
         "streams.num.standby.replicas: Value must be at least 0"),
        ("streams.assignment.interval.ms", "20000",
         "streams.assignment.interval.ms must be in the range 0 to 15000 inclusive."),
        ("streams.initial.rebalance.delay.ms", "99999999999", "Invalid value 99999999999 for "
         "configuration streams.initial.rebalance.delay.ms: Not a number of type INT"),
        ("streams.task.offset.interval.ms", "1000",
         "streams.task.offset.interval.ms must be greater than or equal to 15000"),
        ("streams.num.warmup.replicas", "21",
         "streams.num.warmup.replicas must be less than or equal to 20"),
        ("streams.acceptable.recovery.lag", "-1", "Invalid value -1 for configuration "
         "streams.acceptable.recovery.lag: Value must be at least 0"),
        ("streams.session.timeout.ms", "abc", "Invalid value abc for configuration "
         "streams.session.timeout.ms: Not a number of type INT"),
        ("streams.bogus", "1", "Unknown group config name: streams.bogus"),
    ]
    for name, value, message in refusals:
        with pytest.raises(GroupConfigError) as refused:
            store.alter("g", [(name, SET, value)])
        assert str(refused.value) == message
        assert refused.value.code == "invalid_config"
    assert store.values == {}
    store.alter("g", [("streams.session.timeout.ms", SET, "50000"),
                      ("streams.num.warmup.replicas", SET, "3"),
                      ("streams.acceptable.recovery.lag", SET, str(2**40))])
    assert GroupConfigStore(tmp_path, DEFAULTS).values == {"g": {
        "streams.session.timeout.ms": 50000, "streams.num.warmup.replicas": 3,
        "streams.acceptable.recovery.lag": 2**40}}
    # Kafka's internal ones are described only once set on the group
    listed = {name for name, *_ in store.effective("g")}
    assert "streams.num.warmup.replicas" in listed and "streams.acceptable.recovery.lag" in listed
    assert "streams.task.offset.interval.ms" not in listed


def test_streams_bounds_follow_the_broker_settings(tmp_path):
    limits = dict(DEFAULTS, **{"group.streams.min.session.timeout.ms": 1000,
                               "group.streams.min.heartbeat.interval.ms": 100,
                               "group.streams.max.standby.replicas": 5})
    store = GroupConfigStore(tmp_path, limits)
    store.alter("g", [("streams.session.timeout.ms", SET, "2000"),
                      ("streams.heartbeat.interval.ms", SET, "500"),
                      ("streams.num.standby.replicas", SET, "4")])
    with pytest.raises(GroupConfigError, match="streams.session.timeout.ms must be greater than "
                                               "streams.heartbeat.interval.ms"):
        store.alter("g", [("streams.session.timeout.ms", SET, "1000"),
                          ("streams.heartbeat.interval.ms", SET, "1000")])
