"""The settings of a ShareConsumer (roster.client.share_consumer), checked when it is made.

Settings take Kafka's names (`"share.acknowledgement.mode"`) or the same with underscores as
keyword arguments (`share_acknowledgement_mode=`). A share group is driven by the broker, so the
settings that Kafka 4.4's ShareConsumerConfig refuses are refused here too, at construction,
with Kafka's sentence ("<name> cannot be set when using a share group.") followed by what to use
instead: the group configuration that does that job in a share group (set with
IncrementalAlterConfigs on the GROUP resource, `kafka-configs --entity-type groups`).
"""
from __future__ import annotations

from roster.frozen import frozen


# name -> what replaces it in a share group (Kafka's ShareConsumerConfig refuses exactly these
# ten names; read off kafka-clients 4.4.0, SHARE_GROUP_UNSUPPORTED_CONFIGS)
REFUSED = {
    "auto.offset.reset": "where a share group starts reading is the group's config "
                         "share.auto.offset.reset (latest by default; earliest, or "
                         "by_duration:<ISO-8601 duration>)",
    "enable.auto.commit": "delivered records are acknowledged, not committed: choose "
                          "share.acknowledgement.mode implicit (everything a poll returned is "
                          "accepted by the next poll or commit) or explicit (acknowledge() each "
                          "record)",
    "group.instance.id": "share groups have no static membership; a member's records are "
                         "released when it leaves, and any other member takes them (drop the "
                         "setting; each ShareConsumer gets its own member id)",
    "isolation.level": "the group's config share.isolation.level decides it for every member",
    "partition.assignment.strategy": "the broker assigns a share group's partitions "
                                     "(its group.share.assignors)",
    "interceptor.classes": "a share consumer takes no interceptors",
    "session.timeout.ms": "the group's config share.session.timeout.ms (or the broker's "
                          "group.share.session.timeout.ms)",
    "heartbeat.interval.ms": "the group's config share.heartbeat.interval.ms (or the broker's "
                             "group.share.heartbeat.interval.ms); the member heartbeats at the "
                             "interval the broker tells it",
    "group.protocol": "a ShareConsumer always speaks the share group protocol "
                      "(ShareGroupHeartbeat); use roster.client.consumer.Consumer for the "
                      "classic and consumer protocols",
    "group.remote.assignor": "the broker assigns a share group's partitions "
                             "(its group.share.assignors)",
}

IMPLICIT, EXPLICIT = "implicit", "explicit"
ACQUIRE_MODES = {"batch_optimized": 0, "record_limit": 1}   # ShareFetch v2's ShareAcquireMode

# Kafka's defaults (ConsumerConfig, ShareConsumerConfig)
DEFAULTS = {
    "client.id": "roster-share-consumer",
    "share.acknowledgement.mode": IMPLICIT,
    "share.acquire.mode": "batch_optimized",
    "max.poll.records": 500,
    "fetch.max.wait.ms": 500,
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 52_428_800,
    "request.timeout.ms": 30_000,
    "retry.backoff.ms": 100,
    "client.rack": None,
}
INTEGERS = ("max.poll.records", "fetch.max.wait.ms", "fetch.min.bytes", "fetch.max.bytes",
            "request.timeout.ms", "retry.backoff.ms")
# handed to roster.client's security layer as they are (librdkafka's and Java's names)
SECURITY_PREFIXES = ("security.protocol", "sasl.", "ssl.")


class ShareConsumerConfigError(ValueError):
    """A setting a share consumer cannot take (Kafka raises a ConfigException)."""


@frozen
class ShareConsumerSettings:
    bootstrap: str
    group_id: str
    client_id: str
    acknowledgement_mode: str
    acquire_mode: int
    max_poll_records: int
    fetch_max_wait_ms: int
    fetch_min_bytes: int
    fetch_max_bytes: int
    request_timeout_ms: int
    retry_backoff_ms: int
    rack_id: str | None
    security: dict | None

    @property
    def explicit(self) -> bool:
        return self.acknowledgement_mode == EXPLICIT


def dotted(name: str) -> str:
    return name.replace("_", ".")


def settings_from(config: dict) -> ShareConsumerSettings:
    """Check `config` (Kafka names, or underscores for dots) and fill in Kafka's defaults."""
    given = {dotted(k): v for k, v in config.items() if v is not None}
    refused = [name for name in REFUSED if name in given]
    if refused:
        raise ShareConsumerConfigError(
            f"{','.join(refused)} cannot be set when using a share group. "
            + " ".join(f"Instead of {name}: {REFUSED[name]}." for name in refused))
    security = {k: v for k, v in given.items() if k.startswith(SECURITY_PREFIXES)}
    known = set(DEFAULTS) | {"bootstrap.servers", "group.id"}
    unknown = sorted(k for k in given if k not in known and k not in security)
    if unknown:
        raise ShareConsumerConfigError(f"unknown share consumer setting(s): {', '.join(unknown)}")
    values = {**DEFAULTS, **given}
    if not values.get("bootstrap.servers"):
        raise ShareConsumerConfigError("bootstrap.servers must be set")
    if not values.get("group.id"):
        # Kafka's words (ShareConsumerImpl)
        raise ShareConsumerConfigError(
            "You must provide a valid group.id in the consumer configuration.")
    mode = str(values["share.acknowledgement.mode"]).lower()
    if mode not in (IMPLICIT, EXPLICIT):
        raise ShareConsumerConfigError(
            f"Invalid value {values['share.acknowledgement.mode']!r} for configuration "
            f"share.acknowledgement.mode: String must be one of: implicit, explicit")
    acquire = str(values["share.acquire.mode"]).lower()
    if acquire not in ACQUIRE_MODES:
        raise ShareConsumerConfigError(
            f"Invalid value {values['share.acquire.mode']!r} for configuration "
            f"share.acquire.mode: String must be one of: batch_optimized, record_limit")
    numbers = {}
    for name in INTEGERS:
        try:
            numbers[name] = int(values[name])
        except (TypeError, ValueError):
            raise ShareConsumerConfigError(f"{name} must be an integer, got "
                                           f"{values[name]!r}") from None
        if numbers[name] < (1 if name in ("max.poll.records", "request.timeout.ms") else 0):
            raise ShareConsumerConfigError(f"{name} is out of range: {numbers[name]}")
    return ShareConsumerSettings(
        bootstrap=str(values["bootstrap.servers"]), group_id=str(values["group.id"]),
        client_id=str(values["client.id"]), acknowledgement_mode=mode,
        acquire_mode=ACQUIRE_MODES[acquire], max_poll_records=numbers["max.poll.records"],
        fetch_max_wait_ms=numbers["fetch.max.wait.ms"],
        fetch_min_bytes=numbers["fetch.min.bytes"], fetch_max_bytes=numbers["fetch.max.bytes"],
        request_timeout_ms=numbers["request.timeout.ms"],
        retry_backoff_ms=numbers["retry.backoff.ms"], rack_id=values["client.rack"],
        security=security or None)
