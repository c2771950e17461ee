"""Security settings under Kafka's names, and listeners parsed as Kafka parses them."""
from __future__ import annotations

import logging

import pytest

from roster.config import BrokerConfig, ConfigError
from roster.security.listeners import Listener, advertised_address, parse_listeners
from roster.security.settings import SecuritySettings


def listeners(**settings):
    advertised = settings.pop("advertised", "")
    return parse_listeners(SecuritySettings(settings), advertised, "127.0.0.1", 9092)


def test_without_listeners_roster_listens_as_before():
    assert listeners() == [Listener("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092)]


def test_listeners_protocols_and_advertised_addresses():
    parsed = listeners(**{
        "listeners": "PLAINTEXT://127.0.0.1:9092, SASL_SSL://0.0.0.0:9093,INTERNAL://[::1]:9094",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,"
                                          "INTERNAL:SSL"},
        advertised="SASL_SSL://broker.example.com:19093")
    assert [(x.name, x.protocol, x.host, x.port) for x in parsed] == [
        ("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092), ("SASL_SSL", "SASL_SSL", "0.0.0.0", 9093),
        ("INTERNAL", "SSL", "::1", 9094)]
    assert advertised_address(parsed[1], 9093) == ("broker.example.com", 19093)
    assert advertised_address(parsed[0], 9092) == ("127.0.0.1", 9092)
    assert advertised_address(Listener("X", "SSL", "0.0.0.0", 0), 4711) == ("localhost", 4711)
    assert parsed[1].uses_tls and parsed[1].uses_sasl and not parsed[0].uses_tls


@pytest.mark.parametrize("settings,advertised,message", [
    ({"listeners": "PLAINTEXT://:1,PLAINTEXT://:2"}, "", "appears twice"),
    ({"listeners": "PLAINTEXT://:1,SSL://:1"}, "", "two listeners on one port"),
    ({"listeners": "CLIENTS://:1"}, "", "add CLIENTS:PROTOCOL"),
    ({"listeners": "PLAINTEXT://host"}, "", "has no port"),
    ({"listeners": "PLAINTEXT://:x"}, "", "is not a number"),
    ({"listeners": "PLAINTEXT://:1"}, "SSL://h:2", "SSL is not in listeners"),
    ({"listeners": "A://:1", "listener.security.protocol.map": "A:TLS"}, "", "NAME:PROTOCOL"),
])
def test_bad_listeners_are_named(settings, advertised, message):
    with pytest.raises(ValueError, match=message):
        parse_listeners(SecuritySettings(settings), advertised, "h", 1)


def test_listener_and_mechanism_prefixes_win_over_broker_wide_values():
    settings = SecuritySettings({
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512,OAUTHBEARER",
        "connections.max.reauth.ms": "1000",
        "listener.name.sasl_ssl.connections.max.reauth.ms": "2000",
        "listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms": "3000"})
    assert settings.get("sasl.enabled.mechanisms", "SASL_SSL") == ("SCRAM-SHA-512",
                                                                     "OAUTHBEARER")
    assert settings.get("sasl.enabled.mechanisms", "OTHER") == ("PLAIN",)
    assert settings.get("connections.max.reauth.ms", "SASL_SSL", "OAUTHBEARER") == 3000
    assert settings.get("connections.max.reauth.ms", "SASL_SSL", "PLAIN") == 2000
    assert settings.get("connections.max.reauth.ms", "OTHER", "PLAIN") == 1000


def test_bad_values_stop_the_broker_and_secrets_are_not_repeated():
    with pytest.raises(ConfigError, match="sasl.enabled.mechanisms.*GSSAPI"):
        BrokerConfig.from_overrides({"sasl.enabled.mechanisms": "GSSAPI"})
    with pytest.raises(ConfigError, match="TLSv1.2 and TLSv1.3 only"):
        BrokerConfig.from_overrides({"ssl.enabled.protocols": "TLSv1.1"})
    with pytest.raises(ConfigError) as failure:
        BrokerConfig.from_overrides({"listener.name.x.connections.max.reauth.ms": "-5"})
    assert "must be at least 0" in str(failure.value)


def test_security_settings_come_from_files_environment_and_set(tmp_path, caplog):
    path = tmp_path / "server.properties"
    path.write_text("listeners=SASL_SSL://127.0.0.1:9093\nssl.keystore.type=PEM\n"
                    "listener.name.sasl_ssl.plain.sasl.jaas.config=x required user_a=\"b\";\n"
                    "listener.name.sasl_ssl.no.such.thing=1\n")
    with caplog.at_level(logging.WARNING, "roster.config"):
        config = BrokerConfig.load(path, ["sasl.enabled.mechanisms=PLAIN"],
                                   environ={"ROSTER_SSL_CLIENT_AUTH": "requested"})
    assert config.security["listeners"] == "SASL_SSL://127.0.0.1:9093"
    assert config.security["ssl.client.auth"] == "requested"
    assert config.security.get("sasl.jaas.config", "SASL_SSL", "PLAIN").startswith("x required")
    assert config.security["sasl.enabled.mechanisms"] == ("PLAIN",)
    assert "listener.name.sasl_ssl.no.such.thing" in caplog.text
    assert "user_a" not in caplog.text
    assert config.security.shown("listener.name.sasl_ssl.plain.sasl.jaas.config") == "[hidden]"


def test_defaults_are_kafkas_except_where_roster_says_why():
    settings = SecuritySettings()
    assert settings["ssl.client.auth"] == "none"
    assert settings["connections.max.reauth.ms"] == 0
    assert settings["connection.failed.authentication.delay.ms"] == 100
    assert settings["sasl.enabled.mechanisms"] == ("SCRAM-SHA-256", "SCRAM-SHA-512")  # not GSSAPI
    assert settings["ssl.principal.mapping.rules"] == "DEFAULT"
