"""Streams group settings: Kafka 4.4.0's defaults, and a group's own overrides read at each use."""
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
