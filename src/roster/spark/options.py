"""The connector's options, read once into a picklable `Settings`.

Spark hands a data source its options as a case-insensitive dict whose keys are lower-cased
(`dict(options)` would turn `subscribePattern` into `subscribepattern`), so every key here is
looked up in lower case. Names follow Spark's Kafka source where the two overlap; consumer
settings are accepted with or without Spark's `kafka.` prefix.
"""
from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from roster.client.assignors import ASSIGNORS
from roster.security.client import KEYS as SECURITY_KEYS
from roster.security.client import ClientSecurity, SecurityConfigError

EARLIEST, LATEST = -2, -1
TopicPartition = tuple[str, int]

# Java class names of Kafka's assignors, so a setting copied from a Java job works as is.
JAVA_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.rangeassignor": "range",
    "org.apache.kafka.clients.consumer.roundrobinassignor": "roundrobin",
    "org.apache.kafka.clients.consumer.stickyassignor": "sticky",
    "org.apache.kafka.clients.consumer.cooperativestickyassignor": "cooperative-sticky",
}


GROUP_PROTOCOLS = ("classic", "consumer")
REMOTE_ASSIGNORS = ("uniform", "range")     # the broker's assignors for group.protocol=consumer
# Client-side group settings the consumer protocol moves to the broker (KIP-848): librdkafka
# and the Java client refuse them with group.protocol=consumer, and so do we.
CLASSIC_ONLY = {
    "session.timeout.ms": "the broker's group.consumer.session.timeout.ms decides it",
    "heartbeat.interval.ms": "the broker's group.consumer.heartbeat.interval.ms decides it",
    "partition.assignment.strategy": "use group.remote.assignor (uniform or range)",
}


class OptionError(ValueError):
    """An option is missing, malformed or not allowed here."""


@dataclass(frozen=True)
class StartingOffsets:
    """Where a partition starts when neither the checkpoint nor (for gained partitions) the
    group says: `earliest`, `latest`, `group` (committed, else earliest) or `json`
    (per partition; -2 earliest, -1 latest; partitions not named start at earliest)."""

    kind: str
    specific: dict[TopicPartition, int] = field(default_factory=dict)

    def fallback(self, tp: TopicPartition) -> int:
        """EARLIEST, LATEST or an offset, for a partition without a committed offset."""
        if self.kind == "latest":
            return LATEST
        if self.kind == "json":
            return self.specific.get(tp, EARLIEST)
        return EARLIEST


@dataclass(frozen=True)
class Settings:
    bootstrap: str
    client_id: str = "roster-spark"
    security: ClientSecurity | None = None   # TLS/SASL; its repr leaves secrets out
    # reading
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    starting: StartingOffsets = StartingOffsets("latest")
    ending: dict[TopicPartition, int] | None = None   # batch only; None: latest
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    max_partition_fetch_bytes: int = 1 << 20
    fetch_max_wait_ms: int = 500
    # 1: read_committed (the default, as Spark's Kafka source: records of open and aborted
    # transactions are never read); 0: read_uncommitted
    isolation_level: int = 1
    # the group (streaming reads)
    group_id: str | None = None
    group_id_generated: bool = False
    group_instance_id: str | None = None
    commit_offsets: bool = True
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 300_000
    assignors: tuple[str, ...] = ("range",)
    group_protocol: str = "classic"            # or "consumer" (KIP-848)
    group_remote_assignor: str | None = None   # consumer only; None: the broker's default
    join_timeout_ms: int = 60_000
    metadata_max_age_ms: int = 30_000
    # a request unanswered this long fails and its connection is closed (Kafka's
    # request.timeout.ms; JoinGroup waits at least the rebalance timeout + 5 s)
    request_timeout_ms: int = 30_000
    # a share group (KIP-932) instead of a consumer group: roster.spark.share_source
    share_group: str | None = None
    share_acquire_mode: str | None = None     # None: the ShareConsumer's default
    # the security options as given (Kafka or librdkafka names): what ShareConsumer takes
    security_config: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    # writing
    topic: str | None = None
    sink_id: str | None = None
    marker_topic: str = "roster-sink-markers"
    checkpoint_location: str | None = None
    compression: str = "none"
    produce_chunk_records: int = 5_000
    # a write task's transaction (records + marker); a task killed mid-way leaves it open until
    # its retry fences it, or until this timeout aborts it
    sink_transaction_timeout_ms: int = 60_000

    def matches(self, topic: str) -> bool:
        if self.subscribe_pattern is not None:
            return re.fullmatch(self.subscribe_pattern, topic) is not None
        return topic in self.subscribe


def _get(options: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        for key in (name.lower(), "kafka." + name.lower()):
            value = options.get(key)
            if value is not None:
                return str(value)
    return None


def _int(options, *names: str, default: int | None, minimum: int = 0) -> int | None:
    raw = _get(options, *names)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option {names[0]} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise OptionError(f"option {names[0]} must be at least {minimum}, got {value}")
    return value


def _bool(options, name: str, default: bool) -> bool:
    raw = _get(options, name)
    if raw is None:
        return default
    if raw.strip().lower() in ("true", "1", "yes"):
        return True
    if raw.strip().lower() in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name} must be true or false, got {raw!r}")


def parse_offsets_json(text: str, option: str) -> dict[TopicPartition, int]:
    """Spark's per-partition form: {"topic": {"0": 23, "1": -2}}."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(f"option {option} is neither a keyword nor JSON: {exc}") from None
    if not isinstance(data, dict):
        raise OptionError(f'option {option} must look like {{"topic": {{"0": 23}}}}')
    offsets = {}
    for topic, partitions in data.items():
        if not isinstance(partitions, dict):
            raise OptionError(f'option {option}: {topic!r} must map partitions to offsets')
        for partition, offset in partitions.items():
            try:
                offsets[(str(topic), int(partition))] = int(offset)
            except (TypeError, ValueError):
                raise OptionError(f"option {option}: bad entry {topic}/{partition}: "
                                  f"{offset!r}") from None
    return offsets


def _starting(options, streaming: bool) -> StartingOffsets:
    raw = _get(options, "startingOffsets")
    if raw is None:
        return StartingOffsets("latest" if streaming else "earliest")
    keyword = raw.strip().lower()
    if keyword in ("earliest", "latest", "group"):
        if keyword == "latest" and not streaming:
            raise OptionError("startingOffsets=latest is not allowed in a batch read "
                              "(it would always read nothing)")
        return StartingOffsets(keyword)
    specific = parse_offsets_json(raw, "startingOffsets")
    if not streaming and LATEST in specific.values():
        raise OptionError("startingOffsets: -1 (latest) is not allowed in a batch read")
    return StartingOffsets("json", specific)


def _ending(options) -> dict[TopicPartition, int] | None:
    raw = _get(options, "endingOffsets")
    if raw is None or raw.strip().lower() == "latest":
        return None
    if raw.strip().lower() == "earliest":
        raise OptionError("endingOffsets=earliest is not allowed (it would read nothing)")
    ending = parse_offsets_json(raw, "endingOffsets")
    if EARLIEST in ending.values():
        raise OptionError("endingOffsets: -2 (earliest) is not allowed")
    return ending


def _assignors(options) -> tuple[str, ...]:
    raw = _get(options, "partition.assignment.strategy")
    if raw is None:
        return ("range",)
    names = []
    for item in raw.split(","):
        name = item.strip()
        if not name:
            continue
        name = JAVA_ASSIGNORS.get(name.lower(), name.lower())
        if name not in ASSIGNORS:
            raise OptionError(f"partition.assignment.strategy: unknown assignor {item.strip()!r};"
                              f" known: {', '.join(sorted(ASSIGNORS))}")
        names.append(name)
    return tuple(names) or ("range",)


def _group_protocol(options) -> tuple[str, str | None]:
    """(group.protocol, group.remote.assignor), checked against each other and against the
    classic-only settings."""
    protocol = (_get(options, "group.protocol") or "classic").strip().lower()
    if protocol not in GROUP_PROTOCOLS:
        raise OptionError(f"option group.protocol must be classic or consumer, got "
                          f"{_get(options, 'group.protocol')!r}")
    raw = _get(options, "group.remote.assignor")
    assignor = raw.strip().lower() if raw is not None else None
    if protocol == "classic":
        if assignor is not None:
            raise OptionError("option group.remote.assignor applies only with "
                              "group.protocol=consumer (the classic protocol assigns on the "
                              "client: use partition.assignment.strategy)")
        return protocol, None
    if assignor is not None and assignor not in REMOTE_ASSIGNORS:
        raise OptionError(f"option group.remote.assignor must be uniform or range, got {raw!r}")
    for name, instead in CLASSIC_ONLY.items():
        if _get(options, name) is not None:
            raise OptionError(f"option {name} is not supported with group.protocol=consumer: "
                              f"{instead}")
    return protocol, assignor


def read_settings(options: Mapping[str, str], *, streaming: bool) -> Settings:
    if _get(options, "shareGroup") is not None:
        return share_read_settings(options, streaming=streaming)
    common = _common(options)
    subscribe = tuple(t.strip() for t in (_get(options, "subscribe") or "").split(",")
                      if t.strip())
    pattern = _get(options, "subscribePattern")
    if bool(subscribe) == (pattern is not None):
        raise OptionError("set exactly one of the options subscribe (a comma list of topics) "
                          "and subscribePattern (a regular expression)")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError(f"subscribePattern is not a valid regular expression: {exc}") \
                from None
    starting = _starting(options, streaming)
    group_id = _get(options, "group.id")
    generated = group_id is None
    if starting.kind == "group" and group_id is None:
        raise OptionError("startingOffsets=group needs the option group.id")
    if generated:
        # like Spark's Kafka source: a group of its own per run (offsets stay in the checkpoint)
        group_id = f"roster-spark-{uuid.uuid4()}"
    session_timeout = _int(options, "session.timeout.ms", default=45_000, minimum=1)
    heartbeat = _int(options, "heartbeat.interval.ms", default=min(3_000, session_timeout // 3),
                     minimum=1)
    max_offsets = _int(options, "maxOffsetsPerTrigger", default=None, minimum=1)
    protocol, remote_assignor = _group_protocol(options)
    return Settings(
        **common,
        isolation_level=_isolation_level(options),
        subscribe=subscribe, subscribe_pattern=pattern, starting=starting,
        ending=None if streaming else _ending(options),
        max_offsets_per_trigger=max_offsets,
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        max_partition_fetch_bytes=_int(options, "max.partition.fetch.bytes", default=1 << 20,
                                       minimum=1),
        fetch_max_wait_ms=_int(options, "fetch.max.wait.ms", default=500),
        group_id=group_id, group_id_generated=generated,
        group_instance_id=_get(options, "group.instance.id"),
        commit_offsets=_bool(options, "commitOffsets", True),
        session_timeout_ms=session_timeout, heartbeat_interval_ms=heartbeat,
        rebalance_timeout_ms=_int(options, "max.poll.interval.ms", default=300_000, minimum=1),
        assignors=_assignors(options),
        group_protocol=protocol, group_remote_assignor=remote_assignor,
        join_timeout_ms=_int(options, "joinTimeoutMs", default=60_000, minimum=1),
        metadata_max_age_ms=_int(options, "metadata.max.age.ms", default=30_000, minimum=1),
    )


# Options of a consumer-group read that mean nothing, or something else, in a share group (the
# broker hands records out and takes them back; the group's configs decide what these would)
NOT_WITH_SHARE_GROUP = {
    "group.id": "the share group is named by the option shareGroup",
    "group.instance.id": "share groups have no static membership (a stopped query's records "
                         "go back to the group at once)",
    "startingOffsets": "where a share group starts is its group config share.auto.offset.reset "
                       "(latest unless set; kafka-configs --entity-type groups --alter)",
    "endingOffsets": "a share group is read by a streaming query only",
    "subscribePattern": "a share consumer subscribes to topic names (use subscribe)",
    "commitOffsets": "a share group is not committed to: each record is acknowledged once "
                     "Spark completed its micro-batch",
    "failOnDataLoss": "the broker hands out what the log still holds",
    "isolation.level": "the group config share.isolation.level decides it for every member",
    "group.protocol": "a share group has its own protocol (ShareGroupHeartbeat)",
    "group.remote.assignor": "the broker assigns a share group's partitions",
    "partition.assignment.strategy": "the broker assigns a share group's partitions",
    "session.timeout.ms": "the group config share.session.timeout.ms decides it",
    "heartbeat.interval.ms": "the group config share.heartbeat.interval.ms decides it",
    "max.poll.interval.ms": "a share group has no rebalance to wait for: a record held too "
                            "long goes back to the group when its acquisition lock expires "
                            "(this source renews the locks of a running micro-batch)",
}
SHARE_ACQUIRE_MODES = ("batch_optimized", "record_limit")


def share_read_settings(options: Mapping[str, str], *, streaming: bool) -> Settings:
    """Settings of a read from a share group (`shareGroup`), refusing what does not apply."""
    group = (_get(options, "shareGroup") or "").strip()
    if not group:
        raise OptionError("option shareGroup must name the share group")
    if not streaming:
        raise OptionError("a share group is read by a streaming query only "
                          "(spark.readStream): its records are acknowledged when Spark "
                          "completes a micro-batch, and a batch read has no such moment")
    for name, why in NOT_WITH_SHARE_GROUP.items():
        if _get(options, name) is not None:
            raise OptionError(f"option {name} does not apply with shareGroup: {why}")
    subscribe = tuple(t.strip() for t in (_get(options, "subscribe") or "").split(",")
                      if t.strip())
    if not subscribe:
        raise OptionError("option subscribe must list the topics of the share group to read")
    mode = _get(options, "share.acquire.mode")
    if mode is not None and mode.strip().lower() not in SHARE_ACQUIRE_MODES:
        raise OptionError(f"option share.acquire.mode must be batch_optimized or record_limit, "
                          f"got {mode!r}")
    raw_security = {key: _get(options, key) for key in SECURITY_KEYS}
    return Settings(
        **_common(options), subscribe=subscribe, share_group=group,
        share_acquire_mode=mode.strip().lower() if mode is not None else None,
        security_config=tuple(sorted((k, v) for k, v in raw_security.items()
                                     if v is not None)),
        max_offsets_per_trigger=_int(options, "maxOffsetsPerTrigger", default=None, minimum=1),
        fetch_max_wait_ms=_int(options, "fetch.max.wait.ms", default=500),
        join_timeout_ms=_int(options, "joinTimeoutMs", default=60_000, minimum=1),
    )


def write_settings(options: Mapping[str, str]) -> Settings:
    compression = (_get(options, "compression.type") or "none").strip().lower()
    return Settings(
        **_common(options),
        topic=_get(options, "topic"),
        sink_id=_get(options, "sink.id"),
        marker_topic=_get(options, "sink.markerTopic") or "roster-sink-markers",
        checkpoint_location=_get(options, "checkpointLocation"),
        compression=compression,
        produce_chunk_records=_int(options, "sink.chunkRecords", default=5_000, minimum=1),
        sink_transaction_timeout_ms=_int(options, "sink.transactionTimeoutMs", default=60_000,
                                         minimum=1),
    )


def _security(options) -> ClientSecurity | None:
    """security.protocol, ssl.*, sasl.* with or without the kafka. prefix, under librdkafka's
    or Kafka's Java names (sasl.jaas.config for PLAIN and SCRAM); None for PLAINTEXT."""
    found = {key: _get(options, key) for key in SECURITY_KEYS}
    try:
        security = ClientSecurity.from_config({k: v for k, v in found.items() if v is not None})
    except SecurityConfigError as exc:
        raise OptionError(str(exc)) from None
    return None if security.protocol == "PLAINTEXT" else security


def _isolation_level(options) -> int:
    """kafka.isolation.level, as Spark's Kafka source passes it to its consumers."""
    raw = (_get(options, "isolation.level") or "read_committed").strip().lower()
    levels = {"read_committed": 1, "read_uncommitted": 0}
    if raw not in levels:
        raise OptionError(f"isolation.level must be read_committed or read_uncommitted, "
                          f"not {raw!r}")
    return levels[raw]


def _common(options) -> dict:
    bootstrap = _get(options, "bootstrap.servers")
    if not bootstrap:
        raise OptionError("set the option kafka.bootstrap.servers (or bootstrap.servers), "
                          "e.g. localhost:9092")
    return {"bootstrap": bootstrap, "client_id": _get(options, "client.id") or "roster-spark",
            "security": _security(options),
            "request_timeout_ms": _int(options, "request.timeout.ms", default=30_000,
                                       minimum=1)}
