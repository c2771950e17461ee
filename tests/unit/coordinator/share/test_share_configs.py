"""A share group's own configs (broker/groups/share_configs.py) as Kafka 4.4.0 takes them, and
the one function the share-partition state reads them through (group_value). Compared with
Kafka over the wire in tests/interop/test_share_group_membership.py."""
from __future__ import annotations

import pytest

from roster.broker.groups import share_configs as sc
from roster.config import BrokerConfig


class FakeStore:
    def __init__(self, values):
        self.values = values

    def own(self, group_id):
        return self.values.get(group_id, {})


class FakeBroker:
    def __init__(self, values, config=None):
        self.group_configs = FakeStore(values)
        self.config = config or BrokerConfig.from_overrides({})


def test_group_value_is_the_groups_own_else_the_brokers():
    broker = FakeBroker({"g": {"share.delivery.count.limit": 3}},
                        BrokerConfig.from_overrides({"group.share.delivery.count.limit": "7"}))
    assert sc.group_value(broker, "g", "share.delivery.count.limit") == 3
    assert sc.group_value(broker, "h", "share.delivery.count.limit") == 7
    assert sc.group_value(broker, "h", "share.auto.offset.reset") == "latest"
    assert sc.group_value(broker, "h", "share.isolation.level") == "read_uncommitted"
    assert sc.group_value(broker, "h", "share.renew.acknowledge.enable") is True
    assert sc.group_value(broker, "h", "errors.deadletterqueue.topic.name") == ""
    assert sc.group_value(broker, "h", "share.record.lock.duration.ms") == 30_000


def test_auto_offset_reset_and_durations():
    assert sc.auto_offset_reset("EARLIEST") == ("earliest", None)
    assert sc.auto_offset_reset("by_duration:PT1H30M") == ("by_duration", 5_400_000)
    assert sc.auto_offset_reset("by_duration:P1DT0.5S") == ("by_duration", 86_400_500)
    for bad in ("none", "by_duration:", "by_duration:PT", "by_duration:1H", "soon"):
        with pytest.raises(ValueError):
            sc.auto_offset_reset(bad)
    with pytest.raises(ValueError, match="The value must be either 'earliest', 'latest'"):
        sc.parse("share.auto.offset.reset", "by_duration:-PT1S")


def test_bounds_in_kafkas_words():
    broker = BrokerConfig.from_overrides({})
    with pytest.raises(ValueError, match="must be in the range 2 to 10 inclusive."):
        sc.validate({"share.delivery.count.limit": 11}, broker)
    with pytest.raises(ValueError, match="share.session.timeout.ms must be greater than "
                                         "share.heartbeat.interval.ms"):
        sc.validate({"share.session.timeout.ms": 45_000, "share.heartbeat.interval.ms": 45_000},
                    dict(broker, **{"group.share.max.heartbeat.interval.ms": 60_000}))
    with pytest.raises(ValueError, match="must not start with '__'"):
        sc.validate({"errors.deadletterqueue.topic.name": "__x"}, broker)
    sc.validate({"errors.deadletterqueue.topic.name": "dlq.x",
                 "share.record.lock.duration.ms": 15_000}, broker)
