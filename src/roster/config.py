"""Broker configuration under Kafka's own property names.

Sources, later ones winning: built-in defaults, a properties file (`--config`), environment
variables (`ROSTER_LOG_RETENTION_MS=...` for `log.retention.ms`), then `--set key=value`.
Defaults are Kafka's unless the table says why not. An unknown key is logged and ignored (Kafka
does the same, and it lets a Kafka server.properties be reused); a bad value of a known key is an
error that names the key, the value and what was expected.
"""
from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from roster.frozen import frozen
from roster.security.settings import (
    SECURITY_SETTINGS,
    SecuritySettings,
    choice,
    is_security_key,
)
from roster.topic_config import broker_synonym_settings

log = logging.getLogger("roster.config")

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message says which and why."""


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError("expected true or false")


@frozen
class Setting:
    name: str
    default: Any
    parse: Callable[[str], Any]
    minimum: int | None = None
    doc: str = ""

    def coerce(self, raw: Any) -> Any:
        try:
            value = self.parse(raw) if isinstance(raw, str) else raw
            if self.parse is int and not isinstance(value, int):
                raise ValueError("expected an integer")
        except ValueError as exc:
            raise ConfigError(f"{self.name}={raw!r}: {_plain(exc)}") from None
        if value is not None and self.minimum is not None and value < self.minimum:
            raise ConfigError(f"{self.name}={raw!r}: must be at least {self.minimum}")
        return value


def _plain(exc: ValueError) -> str:
    """What was expected, instead of Python's "invalid literal for int() with base 10"."""
    text = str(exc)
    if text.startswith("invalid literal for int()"):
        return "expected an integer"
    if text.startswith("could not convert string to float"):
        return "expected a number"
    return text


def _optional_int(text: str) -> int | None:
    return None if text.strip() in ("", "null", "none") else int(text)


def _transaction_version(text: str) -> int:
    level = int(text)
    if level not in (0, 1, 2):
        raise ValueError("expected 0, 1 or 2 (Kafka's transaction.version levels)")
    return level


# group.consumer.migration.policy's values; the consumer type gives them their meaning
# (coordinator/consumer/migration.py), this table only refuses what is not one of them
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")

SETTINGS: dict[str, Setting] = {s.name: s for s in [
    Setting("node.id", 0, int, 0, "id of this broker in Metadata answers"),
    # test mode (docs/testing-faults.md): the fault-injection control plane and the broker
    # clock exist only when this is set at start, and only on listeners that are loopback or
    # authenticate every client (check_test_mode)
    Setting("roster.test.mode", False, _parse_bool, None,
            "serve the fault-injection control plane and the test clock (never in production)"),
    # the HTTP listener: /metrics and the group console (docs/observability.md)
    Setting("http.port", None, _optional_int, 0, "serve /metrics and the group console on this "
            "port; unset: no HTTP listener"),
    Setting("http.host", "127.0.0.1", str, doc="address the HTTP listener binds to"),
    Setting("advertised.listeners", "", str, doc="PLAINTEXT://host:port clients are told to use; "
            "default: the address the broker listens on"),
    Setting("auto.create.topics.enable", True, _parse_bool),
    Setting("num.partitions", 1, int, 1, "partitions of an auto-created topic"),
    Setting("default.replication.factor", 1, int, 1, "roster is one broker: only 1 is valid"),
    Setting("socket.request.max.bytes", 104857600, int, 1024),
    # Kafka's default of 50 suits its dedicated acceptor thread; roster accepts on the event
    # loop between requests, so a fleet of clients connecting at once needs a deeper queue.
    Setting("socket.listen.backlog.size", 1024, int, 1, "pending connections the kernel queues"),
    # Bounds on what clients can make the broker hold (docs/protocol.md, "Connections").
    Setting("queued.max.request.bytes", -1, int, -1,
            "bytes of requests received and not yet served, across connections, before no "
            "more are read; -1: no limit"),
    Setting("connections.max.idle.ms", 600000, int, -1,
            "close a connection that moved no bytes for this long; -1: never"),
    Setting("max.connections.per.ip", INT_MAX, int, 0,
            "connections accepted from one address; more are closed at once"),
    Setting("max.connections.per.ip.overrides", "", str,
            doc="per-address limits, e.g. hostName:100,127.0.0.1:200"),
    Setting("message.max.bytes", 1048588, int, 0, "largest record batch accepted"),
    Setting("log.segment.bytes", 1073741824, int, 14),
    Setting("log.retention.ms", None, _optional_int, -1, "wins over log.retention.hours"),
    Setting("log.retention.minutes", None, _optional_int, -1, "wins over log.retention.hours"),
    Setting("log.retention.hours", 168, int, -1),
    Setting("log.retention.bytes", -1, int, -1),
    Setting("log.retention.check.interval.ms", 300000, int, 1),
    Setting("log.index.interval.bytes", 4096, int, 0),
    Setting("log.flush.interval.messages", LONG_MAX, int, 1),
    # Kafka leaves this unset and relies on replication for durability. roster has no replicas,
    # so it bounds what an OS crash or power loss can take to about one second of acks=0/1 data;
    # acks=-1 replies wait for fsync regardless (docs/durability.md).
    Setting("log.flush.interval.ms", 1000, _optional_int, 0),
    Setting("offsets.topic.num.partitions", 50, int, 1),
    Setting("offsets.topic.segment.bytes", 104857600, int, 1,
            "segment.bytes of __consumer_offsets, applied when the topic is created"),
    # transactions (docs/transactions.md); Kafka's names and defaults
    Setting("transaction.state.log.num.partitions", 50, int, 1,
            "partitions of __transaction_state, created on the first transactional request"),
    Setting("transaction.state.log.segment.bytes", 104857600, int, 1),
    Setting("transaction.max.timeout.ms", 900000, int, 1,
            "InitProducerId refuses a longer transaction.timeout.ms (INVALID_TRANSACTION_TIMEOUT)"),
    Setting("transactional.id.expiration.ms", 604800000, int, 1,
            "a transactional id idle this long (no open transaction) is forgotten"),
    Setting("transaction.abort.timed.out.transaction.cleanup.interval.ms", 10000, int, 1,
            "how often open transactions past their timeout are looked for and aborted"),
    Setting("transaction.remove.expired.transaction.cleanup.interval.ms", 3600000, int, 1),
    Setting("transaction.version", 2, _transaction_version, 0,
            "the finalized transaction.version feature ApiVersions advertises (Kafka's, set at "
            "format time there): 2 lets Kafka 4.x clients use Transaction Version 2 (KIP-890); "
            "0 or 1 keeps them on the classic protocol"),
    # Compaction of topics whose cleanup.policy includes compact (docs/durability.md); the
    # topic-level settings (min.cleanable.dirty.ratio, delete.retention.ms, ...) override these.
    Setting("log.cleaner.enable", True, _parse_bool),
    Setting("log.cleaner.backoff.ms", 15000, int, 0, "how often the cleaner looks for work"),
    Setting("log.cleaner.min.cleanable.ratio", 0.5, float, 0,
            "clean a partition once more than this share of its closed bytes was written since "
            "its last cleaning"),
    Setting("log.cleaner.delete.retention.ms", 86400000, int, 0,
            "how long a tombstone is kept after the pass that first cleaned it"),
    Setting("log.cleaner.min.compaction.lag.ms", 0, int, 0,
            "records newer than this are not compacted"),
    Setting("log.cleaner.max.compaction.lag.ms", LONG_MAX, int, 1,
            "records older than this are compacted whatever the dirty ratio"),
    Setting("log.cleaner.dedupe.buffer.size", 134217728, int, 24 * 2,
            "bytes of the cleaner's key -> offset map (24 per key); a pass maps as many keys as "
            "fit and leaves the rest to the next pass"),
    Setting("log.cleaner.io.buffer.load.factor", 0.9, float, 0,
            "how full the cleaner's map may get"),
    Setting("log.cleaner.io.max.bytes.per.second", 1.7976931348623157e308, float, 1,
            "the most bytes per second the cleaner reads and writes (it sleeps otherwise)"),
    Setting("producer.id.expiration.ms", 86400000, int, 1,
            "compaction keeps the last batch of a producer active within this time"),
    Setting("group.min.session.timeout.ms", 6000, int, 0),
    Setting("group.max.session.timeout.ms", 1800000, int, 0),
    Setting("group.initial.rebalance.delay.ms", 3000, int, 0),
    Setting("group.max.size", INT_MAX, int, 1),
    Setting("group.coordinator.metadata.watch", True, _parse_bool, None,
            "roster's: classic consumer groups rebalance when a subscribed topic's partitions "
            "change, even with their leader offline (false: Kafka's behaviour, only the leader "
            "notices)"),
    Setting("offset.metadata.max.bytes", 4096, int, 0),
    # consumer groups (KIP-848, ConsumerGroupHeartbeat); Kafka's names and defaults
    Setting("group.consumer.session.timeout.ms", 45000, int, 1),
    Setting("group.consumer.heartbeat.interval.ms", 5000, int, 1),
    Setting("group.consumer.max.size", INT_MAX, int, 1),
    # the range a group's own consumer.session.timeout.ms / consumer.heartbeat.interval.ms
    # (group configs) must lie in
    Setting("group.consumer.min.session.timeout.ms", 45000, int, 1),
    Setting("group.consumer.max.session.timeout.ms", 60000, int, 1),
    Setting("group.consumer.min.heartbeat.interval.ms", 5000, int, 1),
    Setting("group.consumer.max.heartbeat.interval.ms", 15000, int, 1),
    # Kafka 4.4 batches a consumer group's target-assignment computations by this interval and
    # may run them off its coordinator thread; roster takes, bounds and describes them (the
    # defaults of a group's consumer.assignment.interval.ms and consumer.assignor.offload.enable)
    # and computes a target on the heartbeat that needs one, as Kafka with 0 and no offload
    Setting("group.consumer.assignment.interval.ms", 1000, int, 0),
    Setting("group.consumer.min.assignment.interval.ms", 0, int, 0),
    Setting("group.consumer.max.assignment.interval.ms", 15000, int, 0),
    Setting("group.consumer.assignor.offload.enable", True, _parse_bool),
    Setting("group.consumer.migration.policy", "bidirectional",
            choice(*MIGRATION_POLICIES), None,
            "bidirectional, upgrade, downgrade or disabled: whether a classic group turns into a "
            "consumer group when a member joins it with the consumer protocol (upgrade), and "
            "back when its last such member leaves (downgrade)"),
    Setting("group.consumer.assignors", "uniform,range", str, None,
            "server-side assignors by name (Kafka's class names are accepted); the first is the "
            "default"),
    # share sessions (KIP-932, ShareFetch): Kafka 4.4.0's name, default and bound (its
    # ShareGroupConfig); past it a new session is refused SHARE_SESSION_LIMIT_REACHED
    Setting("group.share.max.share.sessions", 2000, int, 1,
            "share sessions (one per share consumer) this broker keeps at once"),
    # streams groups (KIP-1071, StreamsGroupHeartbeat): Kafka 4.4.0's names, defaults and
    # lower bounds (its GroupCoordinatorConfig); the min./max. pairs bound what a group's own
    # streams.* configs may say (broker/groups/streams_configs.py), and STREAMS_CHECKS below
    # holds the settings to each other as Kafka does at start
    Setting("group.streams.session.timeout.ms", 45000, int, 1,
            "a streams member not heard from for this long is removed"),
    Setting("group.streams.min.session.timeout.ms", 45000, int, 1),
    Setting("group.streams.max.session.timeout.ms", 60000, int, 1),
    Setting("group.streams.heartbeat.interval.ms", 5000, int, 1,
            "the heartbeat interval given to streams members"),
    Setting("group.streams.min.heartbeat.interval.ms", 5000, int, 1),
    Setting("group.streams.max.heartbeat.interval.ms", 15000, int, 1),
    Setting("group.streams.max.size", INT_MAX, int, 1, "members a streams group may hold"),
    Setting("group.streams.num.standby.replicas", 0, int, 0,
            "standby replicas of each stateful task"),
    Setting("group.streams.max.standby.replicas", 2, int, 0),
    Setting("group.streams.initial.rebalance.delay.ms", 3000, int, 0,
            "how long a new streams group waits for more members before its first assignment"),
    Setting("group.streams.assignment.interval.ms", 1000, int, 0,
            "a streams group's target assignment is computed at most once per interval"),
    Setting("group.streams.min.assignment.interval.ms", 0, int, 0),
    Setting("group.streams.max.assignment.interval.ms", 15000, int, 0),
    Setting("group.streams.task.offset.interval.ms", 60000, int, 1,
            "how often streams members report their tasks' changelog offsets"),
    Setting("group.streams.min.task.offset.interval.ms", 15000, int, 1),
    Setting("group.streams.num.warmup.replicas", 2, int, 0),
    Setting("group.streams.max.warmup.replicas", 20, int, 0),
    Setting("group.streams.acceptable.recovery.lag", 10000, int, 0,
            "changelog lag under which a streams instance counts as caught up on a task"),
    # share groups' membership (KIP-932, ShareGroupHeartbeat): Kafka 4.4.0's names, defaults
    # and bounds (its GroupCoordinatorConfig); the min./max. pairs bound a group's own
    # share.* configs (broker/groups/share_configs.py), SHARE_CHECKS below holds them to each
    # other as Kafka does at start
    Setting("group.share.session.timeout.ms", 45000, int, 1,
            "a share group member not heard from for this long is removed"),
    Setting("group.share.min.session.timeout.ms", 45000, int, 1),
    Setting("group.share.max.session.timeout.ms", 60000, int, 1),
    Setting("group.share.heartbeat.interval.ms", 5000, int, 1,
            "the heartbeat interval given to share group members"),
    Setting("group.share.min.heartbeat.interval.ms", 5000, int, 1),
    Setting("group.share.max.heartbeat.interval.ms", 15000, int, 1),
    Setting("group.share.max.size", 200, int, 1, "members a share group may hold (1-1000)"),
    Setting("group.share.assignment.interval.ms", 1000, int, 0),
    Setting("group.share.min.assignment.interval.ms", 0, int, 0),
    Setting("group.share.max.assignment.interval.ms", 15000, int, 0),
    # share partitions' records (KIP-932, roster.share): Kafka 4.4.0's names, defaults and
    # lower bounds (ShareGroupConfig, ShareCoordinatorConfig, GroupCoordinatorConfig); the
    # min./max. pairs bound a group's own share.* configs
    Setting("group.share.record.lock.duration.ms", 30000, int, 1000,
            "how long a share consumer holds the records it acquired"),
    Setting("group.share.min.record.lock.duration.ms", 15000, int, 1000),
    Setting("group.share.max.record.lock.duration.ms", 60000, int, 30000),
    Setting("group.share.delivery.count.limit", 5, int, 2,
            "deliveries of a record before it is archived"),
    Setting("group.share.min.delivery.count.limit", 2, int, 2),
    Setting("group.share.max.delivery.count.limit", 10, int, 5),
    Setting("group.share.partition.max.record.locks", 2000, int, 100,
            "in-flight records of a share partition"),
    Setting("group.share.min.partition.max.record.locks", 100, int, 100),
    Setting("group.share.max.partition.max.record.locks", 4000, int, 2000),
    Setting("errors.deadletterqueue.topic.name.prefix", "dlq.", str, None,
            "the prefix a share group's dead-letter queue topic must have"),
    Setting("errors.deadletterqueue.auto.create.topics.enable", False, _parse_bool, None,
            "create a share group's dead-letter queue topic on first use"),
    Setting("share.coordinator.state.topic.num.partitions", 50, int, 1,
            "partitions of __share_group_state"),
    Setting("share.coordinator.state.topic.segment.bytes", 104857600, int, 1),
    Setting("share.coordinator.snapshot.update.records.per.snapshot", 500, int, 0,
            "a share partition's state is written whole after this many updates"),
    Setting("share.coordinator.state.topic.prune.interval.ms", 300000, int, 1,
            "how often __share_group_state drops what every partition's snapshot replaces"),
    Setting("offsets.retention.minutes", 10080, int, 1),
    Setting("offsets.retention.check.interval.ms", 600000, int, 1),
    # 0: write as soon as the event loop has taken in what arrived together (adaptive batching)
    Setting("group.coordinator.append.linger.ms", 0, int, 0),
]}

# The broker settings behind topic configs that the table above lacks (compression.type,
# log.cleanup.policy, log.message.timestamp.type, ...): Kafka's names and defaults, validated
# as the topic config each stands behind (roster.topic_config_table).
for _name, _default, _parse, _doc in broker_synonym_settings():
    SETTINGS.setdefault(_name, Setting(_name, _default, _parse, None, _doc))


# Kafka's GroupCoordinatorConfig requires these of the group.streams.* settings at start, in
# this order and in these words: (setting, relation, the setting it is held to)
STREAMS_CHECKS = (
    ("group.streams.max.heartbeat.interval.ms", ">=", "group.streams.min.heartbeat.interval.ms"),
    ("group.streams.heartbeat.interval.ms", ">=", "group.streams.min.heartbeat.interval.ms"),
    ("group.streams.heartbeat.interval.ms", "<=", "group.streams.max.heartbeat.interval.ms"),
    ("group.streams.max.session.timeout.ms", ">=", "group.streams.min.session.timeout.ms"),
    ("group.streams.session.timeout.ms", ">=", "group.streams.min.session.timeout.ms"),
    ("group.streams.session.timeout.ms", "<=", "group.streams.max.session.timeout.ms"),
    ("group.streams.heartbeat.interval.ms", "<", "group.streams.session.timeout.ms"),
    ("group.streams.max.assignment.interval.ms", ">=",
     "group.streams.min.assignment.interval.ms"),
    ("group.streams.assignment.interval.ms", ">=", "group.streams.min.assignment.interval.ms"),
    ("group.streams.assignment.interval.ms", "<=", "group.streams.max.assignment.interval.ms"),
    ("group.streams.num.standby.replicas", "<=", "group.streams.max.standby.replicas"),
    ("group.streams.task.offset.interval.ms", ">=",
     "group.streams.min.task.offset.interval.ms"),
    ("group.streams.num.warmup.replicas", "<=", "group.streams.max.warmup.replicas"),
)
# and of the group.share.* membership settings (its verifyShareGroupConfigs)
SHARE_CHECKS = (
    ("group.share.max.heartbeat.interval.ms", ">=", "group.share.min.heartbeat.interval.ms"),
    ("group.share.heartbeat.interval.ms", ">=", "group.share.min.heartbeat.interval.ms"),
    ("group.share.heartbeat.interval.ms", "<=", "group.share.max.heartbeat.interval.ms"),
    ("group.share.max.session.timeout.ms", ">=", "group.share.min.session.timeout.ms"),
    ("group.share.session.timeout.ms", ">=", "group.share.min.session.timeout.ms"),
    ("group.share.session.timeout.ms", "<=", "group.share.max.session.timeout.ms"),
    ("group.share.heartbeat.interval.ms", "<", "group.share.session.timeout.ms"),
    ("group.share.max.assignment.interval.ms", ">=", "group.share.min.assignment.interval.ms"),
    ("group.share.assignment.interval.ms", ">=", "group.share.min.assignment.interval.ms"),
    ("group.share.assignment.interval.ms", "<=", "group.share.max.assignment.interval.ms"),
)
_RELATIONS = {">=": (lambda a, b: a >= b, "greater than or equal to"),
              "<=": (lambda a, b: a <= b, "less than or equal to"),
              "<": (lambda a, b: a < b, "less than")}
# the one group.streams.* setting Kafka types LONG; the others are INTs there
STREAMS_LONGS = {"group.streams.acceptable.recovery.lag"}


def check_streams_settings(values: Mapping[str, Any]) -> None:
    """Refuse group.streams.* settings Kafka would refuse at start (ConfigError)."""
    for name in values:
        if name.startswith("group.streams.") and name not in STREAMS_LONGS \
                and values[name] > INT_MAX:
            raise ConfigError(f"{name}={values[name]}: must be at most {INT_MAX} (an INT in "
                              "Kafka)")
    for name, relation, other in STREAMS_CHECKS:
        holds, words = _RELATIONS[relation]
        if not holds(values[name], values[other]):
            raise ConfigError(f"{name} must be {words} {other} "
                              f"({values[name]} and {values[other]})")


def check_share_settings(values: Mapping[str, Any]) -> None:
    """Refuse group.share.* membership settings Kafka would refuse at start (ConfigError)."""
    if values["group.share.max.size"] > 1000:
        raise ConfigError(f"group.share.max.size={values['group.share.max.size']}: must be "
                          "at most 1000 (Kafka's bound)")
    for name, relation, other in SHARE_CHECKS:
        holds, words = _RELATIONS[relation]
        if not holds(values[name], values[other]):
            raise ConfigError(f"{name} must be {words} {other} "
                              f"({values[name]} and {values[other]})")


# Kafka 4.4.0's ShareGroupConfig: the upper bounds of the share-partition settings (their
# lower ones are the Settings' minimums), and how they must relate
SHARE_RECORD_UPPER = {"group.share.record.lock.duration.ms": 3600000,
                      "group.share.min.record.lock.duration.ms": 30000,
                      "group.share.max.record.lock.duration.ms": 3600000,
                      "group.share.delivery.count.limit": 10,
                      "group.share.min.delivery.count.limit": 5,
                      "group.share.max.delivery.count.limit": 25,
                      "group.share.partition.max.record.locks": 10000,
                      "group.share.min.partition.max.record.locks": 2000,
                      "group.share.max.partition.max.record.locks": 10000}
SHARE_RECORD_CHECKS = (
    ("group.share.max.delivery.count.limit", "group.share.delivery.count.limit"),
    ("group.share.delivery.count.limit", "group.share.min.delivery.count.limit"),
    ("group.share.max.partition.max.record.locks", "group.share.partition.max.record.locks"),
    ("group.share.partition.max.record.locks", "group.share.min.partition.max.record.locks"),
    ("group.share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms"),
    ("group.share.max.record.lock.duration.ms", "group.share.record.lock.duration.ms"))


def check_share_record_settings(values: Mapping[str, Any]) -> None:
    """Refuse the share-partition settings Kafka would refuse at start (ConfigError)."""
    for name, most in SHARE_RECORD_UPPER.items():
        if values[name] > most:
            raise ConfigError(f"{name}={values[name]}: must be at most {most}")
    for name, other in SHARE_RECORD_CHECKS:
        if values[name] < values[other]:
            raise ConfigError(f"{name} must be greater than or equal to {other} "
                              f"({values[name]} and {values[other]})")


def _is_loopback(host: str) -> bool:
    """An address only this machine reaches: 127.0.0.0/8, ::1 or the name localhost. "",
    0.0.0.0 and :: bind every interface, so they are not."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False   # a host name: it may resolve to anything


def check_test_mode(config: BrokerConfig, listeners) -> None:
    """roster.test.mode lets whoever reaches the broker make it fail on purpose, so it is
    refused (ConfigError, saying why) unless every way in is either loopback or
    authenticated: each Kafka listener (`listeners`: security/listeners.Listener, with the
    default one made of --host) binds a loopback address or authenticates its clients (SASL,
    or SSL with ssl.client.auth=required), and the HTTP port (http.port), which carries the
    control plane, binds loopback or asks for credentials (it does when a listener uses
    SASL). Called at start, before anything is bound."""
    if not config["roster.test.mode"]:
        return
    security = config.security
    for listener in listeners:
        if _is_loopback(listener.host) or listener.uses_sasl:
            continue
        if listener.protocol == "SSL" and security.get(
                "ssl.client.auth", listener.name.lower()) == "required":
            continue
        raise ConfigError(
            f"roster.test.mode=true refused: listener {listener.name} ({listener.protocol}) "
            f"binds {listener.host or '0.0.0.0'}, which is not a loopback address, and does "
            "not authenticate its clients; bind it to 127.0.0.1 or use SASL or SSL with "
            "ssl.client.auth=required (anyone who reaches a test-mode broker can make it fail)")
    http_host = config["http.host"]
    if config["http.port"] is not None and not _is_loopback(http_host) and not any(
            listener.uses_sasl for listener in listeners):
        raise ConfigError(
            f"roster.test.mode=true refused: the HTTP port (http.host={http_host}) is not a "
            "loopback address and asks for no credentials (it does only when a listener uses "
            "SASL); bind it to 127.0.0.1")


def retention_ms(values: Mapping[str, Any]) -> int:
    """Kafka's precedence: log.retention.ms, then .minutes, then .hours; -1 keeps forever."""
    if values["log.retention.ms"] is not None:
        return values["log.retention.ms"]
    if values["log.retention.minutes"] is not None:
        minutes = values["log.retention.minutes"]
        return -1 if minutes < 0 else minutes * 60_000
    hours = values["log.retention.hours"]
    return -1 if hours < 0 else hours * 3_600_000


def parse_connection_overrides(text: str) -> dict[str, int]:
    """max.connections.per.ip.overrides in Kafka's format: `host:count` pairs separated by
    commas (`hostName:100,127.0.0.1:200`); the count follows the last colon, so IPv6 addresses
    work as written."""
    overrides: dict[str, int] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        host = host.strip().strip("[]")
        try:
            limit = int(count)
        except ValueError:
            limit = -1
        if not sep or not host or limit < 0:
            raise ConfigError(f"max.connections.per.ip.overrides: expected host:count, "
                              f"got {item!r}")
        overrides[host] = limit
    return overrides


def connection_overrides(values: Mapping[str, Any]) -> dict[str, int]:
    return parse_connection_overrides(values["max.connections.per.ip.overrides"])


def read_properties(path: Path) -> dict[str, str]:
    """A Java-style properties file: key=value (or key: value) lines, # and ! comments."""
    entries: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        separator = min((i for i in (stripped.find("="), stripped.find(":")) if i > 0),
                        default=-1)
        if separator < 0:
            raise ConfigError(f"{path}:{number}: expected key=value, got {stripped!r}")
        entries[stripped[:separator].strip()] = stripped[separator + 1:].strip()
    return entries


def parse_assignments(assignments: Iterable[str]) -> dict[str, str]:
    entries = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r}: expected key=value")
        entries[key.strip()] = value.strip()
    return entries


def from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    by_env_name = {"ROSTER_" + name.upper().replace(".", "_"): name for name in
                   (*SETTINGS, *SECURITY_SETTINGS)}
    return {by_env_name[k]: v for k, v in environ.items() if k in by_env_name}


class BrokerConfig(Mapping[str, Any]):
    """Validated settings; read them as config["log.segment.bytes"]."""

    def __init__(self, values: Mapping[str, Any], explicit: Iterable[str] = (),
                 security: SecuritySettings | None = None) -> None:
        self._values = dict(values)
        # listeners, TLS and SASL (roster/security/settings.py), incl. listener.name.* keys
        self.security = security if security is not None else SecuritySettings()
        # the settings given by a file, the environment or --set (DescribeConfigs reports
        # them as STATIC_BROKER_CONFIG, the rest as DEFAULT_CONFIG)
        self.explicit = frozenset(explicit)

    @classmethod
    def load(cls, config_file: Path | None = None, assignments: Iterable[str] = (),
             environ: Mapping[str, str] | None = None) -> BrokerConfig:
        layers: list[Mapping[str, str]] = []
        if config_file is not None:
            layers.append(read_properties(config_file))
        layers.append(from_environment(os.environ if environ is None else environ))
        layers.append(parse_assignments(assignments))
        return cls.from_overrides({k: v for layer in layers for k, v in layer.items()})

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, Any]) -> BrokerConfig:
        values = {name: setting.default for name, setting in SETTINGS.items()}
        explicit = set()
        security = {}
        for key, raw in overrides.items():
            setting = SETTINGS.get(key)
            if setting is None and is_security_key(key):
                security[key] = raw
                continue
            if setting is None:
                log.warning("ignoring unknown configuration %r", key)
                continue
            values[key] = setting.coerce(raw)
            explicit.add(key)
        if values["group.min.session.timeout.ms"] > values["group.max.session.timeout.ms"]:
            raise ConfigError("group.min.session.timeout.ms is larger than "
                              "group.max.session.timeout.ms")
        check_streams_settings(values)
        check_share_record_settings(values)
        check_share_settings(values)
        if values["log.cleaner.min.cleanable.ratio"] > 1:
            raise ConfigError("log.cleaner.min.cleanable.ratio: must be at most 1")
        if not 0 < values["log.cleaner.io.buffer.load.factor"] <= 1:
            raise ConfigError("log.cleaner.io.buffer.load.factor: must be above 0 and at most 1")
        if values["http.port"] is not None and values["http.port"] > 65535:
            # the socket layer would take it modulo 65536 and listen somewhere else
            raise ConfigError(f"http.port={values['http.port']}: not a port (0-65535)")
        if values["default.replication.factor"] != 1:
            raise ConfigError("default.replication.factor: roster is a single broker; use 1")
        queued = values["queued.max.request.bytes"]
        if 0 < queued < values["socket.request.max.bytes"]:
            raise ConfigError("queued.max.request.bytes must be at least socket.request.max.bytes "
                              "(or -1 for no limit)")
        if values["connections.max.idle.ms"] == 0:
            raise ConfigError("connections.max.idle.ms=0: use -1 to keep idle connections")
        overrides = parse_connection_overrides(values["max.connections.per.ip.overrides"])
        if values["max.connections.per.ip"] == 0 and not overrides:
            raise ConfigError("max.connections.per.ip=0 refuses every connection: it needs "
                              "max.connections.per.ip.overrides")
        try:
            security_settings = SecuritySettings(security)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        for key in security_settings.unknown:
            log.warning("ignoring unknown configuration %r", key)
        return cls(values, explicit, security_settings)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)
