"""Every topic config Kafka 4.x defines (its LogConfig), as data: name, type, default, validator,
the broker settings it defaults to, and what roster does with it. roster.topic_config
reads this table to validate, resolve and describe topic configs; roster.config adds the broker
settings named here that it does not define itself; docs/configuration.md's topic table is
generated from it (tests/test_topic_config_table.py keeps the two equal).

Facts from Apache Kafka's sources (LogConfig, TopicConfig, ServerTopicConfigSynonyms,
ServerLogConfigs, QuotaConfig, CompressionType), checked against a Kafka 4.4 broker (its
DescribeConfigs of a new topic lists exactly these names, defaults and synonyms, and its
CreateTopics answers the same messages): segment.bytes at least 1 MiB and
message.timestamp.after.max.ms defaulting to one hour (KIP-1030); message.format.version,
message.downconversion.enable and message.timestamp.difference.max.ms are gone (4.0).

Columns:
- type: Kafka's ConfigDef type (BOOLEAN, STRING, INT, LONG, DOUBLE, LIST);
- default: Kafka's default, written as Kafka writes it (a list as comma-separated text);
- valid: the validator, as data: ("at_least", n), ("between", lo, hi), ("one_of", names),
  ("list_of", names) (an empty list allowed, duplicates too, as Kafka 4.4), ("gzip_level",),
  ("throttled_replicas",), or None;
- synonyms: the broker settings it defaults to, first set wins, each with the factor that turns
  its unit into the topic config's (log.retention.hours -> ms: 3600000);
- roster: "implemented" (changes what this broker does), "checked" (validated and reported, and
  Kafka's one-broker behaviour applies), or "accepted" (validated and reported; nothing to do on
  one broker, or not done yet: the note says which);
- note: what roster does with it, for docs/configuration.md.
"""
from __future__ import annotations

from typing import NamedTuple

LONG_MAX = 2**63 - 1
HOUR_MS = 3_600_000
MINUTE_MS = 60_000
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


class TopicConfigSpec(NamedTuple):
    name: str
    type: str
    default: str
    valid: tuple | None
    synonyms: tuple[tuple[str, int], ...]
    roster: str
    note: str


def _same(name: str) -> tuple[tuple[str, int], ...]:
    return ((name, 1),)


# In Kafka's definition order (LogConfig), which is also the order values are checked in.
TOPIC_CONFIGS: tuple[TopicConfigSpec, ...] = (
    TopicConfigSpec("segment.bytes", "INT", "1073741824", ("at_least", 1048576),
                    _same("log.segment.bytes"), "implemented",
                    "size at which the active segment rolls"),
    TopicConfigSpec("segment.ms", "LONG", "604800000", ("at_least", 1),
                    (("log.roll.ms", 1), ("log.roll.hours", HOUR_MS)), "implemented",
                    "a batch whose maxTimestamp is this much past the active segment's first "
                    "batch's (no timestamps: this long after the segment was made) rolls it, as "
                    "Kafka's LogSegment.shouldRoll; compacted topics roll by "
                    "max.compaction.lag.ms too, if sooner"),
    TopicConfigSpec("segment.jitter.ms", "LONG", "0", ("at_least", 0),
                    (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", HOUR_MS)), "accepted",
                    "reported; roster rolls at segment.ms without jitter"),
    TopicConfigSpec("segment.index.bytes", "INT", "10485760", ("at_least", 4),
                    _same("log.index.size.max.bytes"), "accepted",
                    "reported; roster's index files grow as needed"),
    TopicConfigSpec("flush.messages", "LONG", str(LONG_MAX), ("at_least", 1),
                    _same("log.flush.interval.messages"), "accepted",
                    "reported; roster flushes per partition by the broker's log.flush.* "
                    "settings, and acks=all waits for fsync"),
    TopicConfigSpec("flush.ms", "LONG", str(LONG_MAX), ("at_least", 0),
                    (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),
                    "accepted", "reported; see flush.messages"),
    TopicConfigSpec("retention.bytes", "LONG", "-1", None, _same("log.retention.bytes"),
                    "implemented", "size retention per partition (cleanup.policy with delete)"),
    TopicConfigSpec("retention.ms", "LONG", "604800000", ("at_least", -1),
                    (("log.retention.ms", 1), ("log.retention.minutes", MINUTE_MS),
                     ("log.retention.hours", HOUR_MS)), "implemented",
                    "time retention (cleanup.policy with delete); -1 keeps forever"),
    TopicConfigSpec("max.message.bytes", "INT", "1048588", ("at_least", 0),
                    _same("message.max.bytes"), "implemented",
                    "largest batch accepted, after broker-side recompression: "
                    "MESSAGE_TOO_LARGE otherwise"),
    TopicConfigSpec("index.interval.bytes", "INT", "4096", ("at_least", 0),
                    _same("log.index.interval.bytes"), "implemented",
                    "bytes between offset-index entries, in segments made from then on"),
    TopicConfigSpec("delete.retention.ms", "LONG", "86400000", ("at_least", 0),
                    _same("log.cleaner.delete.retention.ms"), "implemented",
                    "how long the cleaner keeps tombstones (docs/durability.md)"),
    TopicConfigSpec("min.compaction.lag.ms", "LONG", "0", ("at_least", 0),
                    _same("log.cleaner.min.compaction.lag.ms"), "implemented",
                    "the cleaner leaves records younger than this alone"),
    TopicConfigSpec("max.compaction.lag.ms", "LONG", str(LONG_MAX), ("at_least", 1),
                    _same("log.cleaner.max.compaction.lag.ms"), "implemented",
                    "the cleaner cleans a log whose dirty records are older than this"),
    TopicConfigSpec("file.delete.delay.ms", "LONG", "60000", ("at_least", 0),
                    _same("log.segment.delete.delay.ms"), "accepted",
                    "reported; roster removes deleted segments at once (no reader holds them)"),
    TopicConfigSpec("min.cleanable.dirty.ratio", "DOUBLE", "0.5", ("between", 0, 1),
                    _same("log.cleaner.min.cleanable.ratio"), "implemented",
                    "share of dirty bytes at which the cleaner cleans a log"),
    TopicConfigSpec("cleanup.policy", "LIST", "delete", ("list_of", ("compact", "delete")),
                    _same("log.cleanup.policy"), "implemented",
                    "delete, compact or both (an empty list keeps everything); a compact topic "
                    "refuses records without a key (INVALID_RECORD)"),
    TopicConfigSpec("unclean.leader.election.enable", "BOOLEAN", "false", None,
                    _same("unclean.leader.election.enable"), "accepted",
                    "reported; one broker has no other replica to elect"),
    TopicConfigSpec("min.insync.replicas", "INT", "1", ("at_least", 1),
                    _same("min.insync.replicas"), "checked",
                    "as Kafka 4: the effective minimum is min(this, replication factor), so on "
                    "one broker acks=all succeeds whatever its value"),
    TopicConfigSpec("compression.type", "STRING", "producer", ("one_of", COMPRESSION_TYPES),
                    _same("compression.type"), "implemented",
                    "producer keeps the producer's codec; any other value recompresses batches "
                    "on the broker as Kafka's LogValidator does"),
    TopicConfigSpec("compression.gzip.level", "INT", "-1", ("gzip_level",),
                    _same("compression.gzip.level"), "accepted",
                    "reported; broker-side gzip uses the codec's default level"),
    TopicConfigSpec("compression.lz4.level", "INT", "9", ("between", 1, 17),
                    _same("compression.lz4.level"), "accepted",
                    "reported; broker-side lz4 uses the codec's default level"),
    TopicConfigSpec("compression.zstd.level", "INT", "3", ("between", -131072, 22),
                    _same("compression.zstd.level"), "accepted",
                    "reported; broker-side zstd uses the codec's default level"),
    TopicConfigSpec("preallocate", "BOOLEAN", "false", None, _same("log.preallocate"),
                    "accepted", "reported; roster does not preallocate segment files"),
    TopicConfigSpec("message.timestamp.type", "STRING", "CreateTime",
                    ("one_of", ("CreateTime", "LogAppendTime")),
                    _same("log.message.timestamp.type"), "implemented",
                    "LogAppendTime stamps the broker's time into each batch and the produce "
                    "answer"),
    TopicConfigSpec("message.timestamp.before.max.ms", "LONG", str(LONG_MAX), ("at_least", 0),
                    _same("log.message.timestamp.before.max.ms"), "implemented",
                    "CreateTime records older than now minus this get INVALID_TIMESTAMP"),
    TopicConfigSpec("message.timestamp.after.max.ms", "LONG", "3600000", ("at_least", 0),
                    _same("log.message.timestamp.after.max.ms"), "implemented",
                    "CreateTime records newer than now plus this get INVALID_TIMESTAMP"),
    TopicConfigSpec("leader.replication.throttled.replicas", "LIST", "",
                    ("throttled_replicas",), (), "accepted",
                    "reported; one broker does not replicate"),
    TopicConfigSpec("follower.replication.throttled.replicas", "LIST", "",
                    ("throttled_replicas",), (), "accepted",
                    "reported; one broker does not replicate"),
    TopicConfigSpec("remote.storage.enable", "BOOLEAN", "false", None, (), "checked",
                    "true is refused as by a Kafka without tiered storage (INVALID_CONFIG)"),
    TopicConfigSpec("local.retention.ms", "LONG", "-2", ("at_least", -2),
                    _same("log.local.retention.ms"), "accepted",
                    "reported; only means something with tiered storage"),
    TopicConfigSpec("local.retention.bytes", "LONG", "-2", ("at_least", -2),
                    _same("log.local.retention.bytes"), "accepted",
                    "reported; only means something with tiered storage"),
    TopicConfigSpec("remote.log.copy.disable", "BOOLEAN", "false", None, (), "accepted",
                    "reported; only means something with tiered storage"),
    TopicConfigSpec("remote.log.delete.on.disable", "BOOLEAN", "false", None, (), "accepted",
                    "reported; only means something with tiered storage"),
    TopicConfigSpec("remote.copy.lag.ms", "LONG", "0", ("at_least", -1),
                    _same("log.remote.copy.lag.ms"), "accepted",
                    "reported; only means something with tiered storage"),
    TopicConfigSpec("remote.copy.lag.bytes", "LONG", "-1", ("at_least", -1),
                    _same("log.remote.copy.lag.bytes"), "accepted",
                    "reported; only means something with tiered storage"),
    TopicConfigSpec("max.decompressed.message.bytes", "INT", "2147483639", ("at_least", 1),
                    _same("max.decompressed.message.bytes"), "accepted",
                    "reported; roster bounds a batch by max.message.bytes"),
    TopicConfigSpec("errors.deadletterqueue.group.enable", "BOOLEAN", "false", None, (),
                    "implemented", "a share group's dead-letter queue (KIP-1191) writes only "
                    "to a topic that has it true (one the broker creates for it, with "
                    "errors.deadletterqueue.auto.create.topics.enable, has it)"),
)

# Kafka's internal topic config (for tests: segments below segment.bytes' 1 MiB minimum).
# Accepted on topics, never listed by DescribeConfigs; it wins over segment.bytes.
INTERNAL_SEGMENT_BYTES = "internal.segment.bytes"

BY_NAME = {spec.name: spec for spec in TOPIC_CONFIGS}

# Kafka's defaults of the broker settings above that roster's own settings table (roster.config)
# does not define; roster.config adds them, validated as the topic config they stand behind.
# None: unset by default (a later synonym applies).
BROKER_SYNONYM_DEFAULTS: dict[str, object] = {
    "log.roll.ms": None,
    "log.roll.hours": 168,
    "log.roll.jitter.ms": None,
    "log.roll.jitter.hours": 0,
    "log.index.size.max.bytes": 10485760,
    "log.flush.scheduler.interval.ms": LONG_MAX,
    "log.segment.delete.delay.ms": 60000,
    "log.cleaner.min.compaction.lag.ms": 0,
    "log.cleaner.max.compaction.lag.ms": LONG_MAX,
    "log.cleanup.policy": "delete",
    "unclean.leader.election.enable": False,
    "min.insync.replicas": 1,
    "compression.type": "producer",
    "compression.gzip.level": -1,
    "compression.lz4.level": 9,
    "compression.zstd.level": 3,
    "log.preallocate": False,
    "log.message.timestamp.type": "CreateTime",
    "log.message.timestamp.before.max.ms": LONG_MAX,
    "log.message.timestamp.after.max.ms": 3600000,
    "log.local.retention.ms": -2,
    "log.local.retention.bytes": -2,
    "log.remote.copy.lag.ms": 0,
    "log.remote.copy.lag.bytes": -1,
    "max.decompressed.message.bytes": 2147483639,
}


def markdown() -> str:
    """The table of docs/configuration.md's topic settings (`python -m
    roster.topic_config_table` prints it; a test keeps the doc equal to it)."""
    lines = ["<!-- topic config table: generated by python -m roster.topic_config_table -->",
             "| config | type | Kafka's default | broker setting | roster |", "|---|---|---|---|---|"]
    for spec in TOPIC_CONFIGS:
        broker = ", ".join(f"`{name}`" for name, _ in spec.synonyms) or "(none)"
        default = f"`{spec.default}`" if spec.default else "(empty)"
        lines.append(f"| `{spec.name}` | {spec.type.lower()} | {default} | {broker} | "
                     f"{spec.roster}: {spec.note} |")
    lines.append("<!-- end of topic config table -->")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
