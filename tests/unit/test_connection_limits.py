"""The connection limits' settings as Kafka spells them, and the refusal log's rate limit on a
manual clock."""
from __future__ import annotations

import logging

import pytest

from roster.broker.network.server import RefusalLog, resolve_overrides
from roster.config import BrokerConfig, ConfigError, connection_overrides


def test_defaults_are_kafkas():
    config = BrokerConfig.from_overrides({})
    assert config["queued.max.request.bytes"] == -1
    assert config["connections.max.idle.ms"] == 600000
    assert config["max.connections.per.ip"] == 2**31 - 1
    assert connection_overrides(config) == {}


def test_overrides_in_kafkas_format():
    config = BrokerConfig.from_overrides(
        {"max.connections.per.ip.overrides": "hostName:100, 127.0.0.1:200,::1:5,[fe80::1]:6"})
    assert connection_overrides(config) == {"hostName": 100, "127.0.0.1": 200, "::1": 5,
                                            "fe80::1": 6}


def test_an_address_given_wins_over_a_resolved_name():
    assert resolve_overrides({"localhost": 3, "127.0.0.1": 200})["127.0.0.1"] == 200
    assert resolve_overrides({"10.0.0.7": 1}) == {"10.0.0.7": 1}


@pytest.mark.parametrize("settings,fragment", [
    ({"max.connections.per.ip.overrides": "host"}, "expected host:count"),
    ({"max.connections.per.ip.overrides": "host:many"}, "expected host:count"),
    ({"max.connections.per.ip.overrides": "host:-1"}, "expected host:count"),
    ({"max.connections.per.ip": "0"}, "needs max.connections.per.ip.overrides"),
    ({"queued.max.request.bytes": "1000000"}, "at least socket.request.max.bytes"),
    ({"connections.max.idle.ms": "0"}, "use -1"),
    ({"connections.max.idle.ms": "-2"}, "at least -1"),
])
def test_bad_limits_name_the_key(settings, fragment):
    with pytest.raises(ConfigError, match=fragment):
        BrokerConfig.from_overrides(settings)


def test_limits_that_are_valid():
    config = BrokerConfig.from_overrides({
        "max.connections.per.ip": "0", "max.connections.per.ip.overrides": "10.1.2.3:4",
        "queued.max.request.bytes": "104857600", "connections.max.idle.ms": "-1"})
    assert config["max.connections.per.ip"] == 0
    assert config["queued.max.request.bytes"] == 104857600


def test_refusals_are_logged_once_per_interval_with_a_count(caplog):
    now = [100.0]
    refusals = RefusalLog(clock=lambda: now[0], interval_s=10)
    with caplog.at_level(logging.INFO, logger="roster.server"):
        assert refusals.refused("10.0.0.1", 3)
        assert not any(refusals.refused("10.0.0.1", 3) for _ in range(41))
        now[0] += 9.9
        assert not refusals.refused("10.0.0.2", 3)
        now[0] += 0.1
        assert refusals.refused("10.0.0.2", 3)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[0].startswith("Rejected connection from /10.0.0.1, address already has the "
                               "configured maximum of 3 connections")
    assert "42 more refused since the last such line" in lines[1]
