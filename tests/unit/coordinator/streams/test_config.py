"""Streams group settings: Kafka 4.4.0's defaults, and a group's own overrides read at each use."""
import pytest

from roster.coordinator.streams.messages import StreamsConfig


def test_defaults_are_kafkas():
    config = StreamsConfig()
    assert (config.session_ms("g"), config.heartbeat_ms("g"), config.standby_replicas("g")) == \
        (45_000, 5_000, 0)
    assert (config.initial_rebalance_delay_ms, config.task_offset_interval_ms,
            config.acceptable_recovery_lag, config.num_warmup_replicas) == (3_000, 60_000,
                                                                           10_000, 2)
    assert not config.refine_warmups


def test_a_groups_overrides_win_and_only_for_it():
    overrides = {"app": {"streams.session.timeout.ms": 50_000,
                         "streams.heartbeat.interval.ms": 6_000,
                         "streams.num.standby.replicas": 1}}
    config = StreamsConfig(group_overrides=overrides)
    assert (config.session_ms("app"), config.heartbeat_ms("app"),
            config.standby_replicas("app")) == (50_000, 6_000, 1)
    assert (config.session_ms("other"), config.standby_replicas("other")) == (45_000, 0)
    overrides["app"]["streams.num.standby.replicas"] = 2          # read at each use
    assert config.standby_replicas("app") == 2


def test_the_broker_settings_and_their_kafka_defaults():
    """group.streams.* as Kafka 4.4.0's GroupCoordinatorConfig declares them (read off its
    ConfigDef), reaching the streams type's StreamsConfig."""
    from roster.config import SETTINGS, BrokerConfig
    kafka = {"session.timeout.ms": 45000, "min.session.timeout.ms": 45000,
             "max.session.timeout.ms": 60000, "heartbeat.interval.ms": 5000,
             "min.heartbeat.interval.ms": 5000, "max.heartbeat.interval.ms": 15000,
             "max.size": 2**31 - 1, "num.standby.replicas": 0, "max.standby.replicas": 2,
             "initial.rebalance.delay.ms": 3000, "assignment.interval.ms": 1000,
             "min.assignment.interval.ms": 0, "max.assignment.interval.ms": 15000,
             "task.offset.interval.ms": 60000, "min.task.offset.interval.ms": 15000,
             "num.warmup.replicas": 2, "max.warmup.replicas": 20,
             "acceptable.recovery.lag": 10000}
    assert {n[len("group.streams."):]: s.default for n, s in SETTINGS.items()
            if n.startswith("group.streams.")} == kafka
    config = StreamsConfig.from_broker(BrokerConfig.from_overrides({
        "group.streams.num.standby.replicas": "1",
        "group.streams.initial.rebalance.delay.ms": "0"}), {})
    assert (config.standby_replicas("g"), config.initial_delay_ms("g"),
            config.assignment_interval("g")) == (1, 0, 1000)


@pytest.mark.parametrize("overrides, message", [
    ({"group.streams.session.timeout.ms": "30000"}, "group.streams.session.timeout.ms must be "
     "greater than or equal to group.streams.min.session.timeout.ms"),
    ({"group.streams.heartbeat.interval.ms": "20000"}, "group.streams.heartbeat.interval.ms must "
     "be less than or equal to group.streams.max.heartbeat.interval.ms"),
    ({"group.streams.min.session.timeout.ms": "1000", "group.streams.session.timeout.ms": "4000",
      "group.streams.min.heartbeat.interval.ms": "100",
      "group.streams.heartbeat.interval.ms": "4000"},
     "group.streams.heartbeat.interval.ms must be less than group.streams.session.timeout.ms"),
    ({"group.streams.num.standby.replicas": "3"}, "must be less than or equal to "
     "group.streams.max.standby.replicas"),
    ({"group.streams.assignment.interval.ms": "16000"}, "must be less than or equal to "
     "group.streams.max.assignment.interval.ms"),
    ({"group.streams.task.offset.interval.ms": "1000"}, "must be greater than or equal to "
     "group.streams.min.task.offset.interval.ms"),
    ({"group.streams.num.warmup.replicas": "21"}, "group.streams.max.warmup.replicas"),
    ({"group.streams.initial.rebalance.delay.ms": "-1"}, "must be at least 0"),
    ({"group.streams.heartbeat.interval.ms": "soon"}, "expected an integer"),
    ({"group.streams.max.size": str(2**31)}, "must be at most 2147483647"),
])
def test_bad_broker_settings_are_refused_at_start(overrides, message):
    from roster.config import BrokerConfig, ConfigError
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_overrides(overrides)
