"""Topics: the catalog of names, ids, partition counts and configs, and their partition logs.

The catalog is one JSON file in the data directory, replaced atomically (write, fsync, rename,
fsync the directory) on every change, so a crash leaves either the old or the new catalog.
Partition data lives in `<topic>-<partition>/` directories, as in Kafka.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roster.config import BrokerConfig, retention_ms
from roster.log.api import LogConfig, PartitionLog

log = logging.getLogger("roster.topics")

CATALOG = "topics.json"
LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249
OFFSETS_TOPIC = "__consumer_offsets"


class TopicError(Exception):
    """A topic operation that cannot be done; `code` is the Kafka error name to answer with."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def check_topic_name(name: str | None) -> None:
    """Kafka's rules for a topic name (Topic.validate)."""
    if not name:
        raise TopicError("invalid_topic_exception", "topic name is empty")
    if name in (".", ".."):
        raise TopicError("invalid_topic_exception", f"topic name cannot be {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise TopicError("invalid_topic_exception",
                         f"topic name is longer than {MAX_NAME_LENGTH} characters")
    if not LEGAL_NAME.fullmatch(name):
        raise TopicError("invalid_topic_exception",
                         f"topic name {name!r} has characters outside [a-zA-Z0-9._-]")


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise ValueError(f"must be at least {minimum}")
        return value
    return parse


def _cleanup_policy(text: str) -> str:
    if text.strip() != "delete":
        # accepting "compact" without compacting would silently keep every version of a key
        raise ValueError("roster supports cleanup.policy=delete only for user topics")
    return "delete"


def _create_time_only(text: str) -> str:
    if text != "CreateTime":
        raise ValueError("roster stores producer timestamps (CreateTime) only")
    return text


# Topic-level settings roster honours; anything else is refused with INVALID_CONFIG.
TOPIC_SETTINGS: dict[str, Callable[[str], Any]] = {
    "cleanup.policy": _cleanup_policy,
    "retention.ms": _int_at_least(-1),
    "retention.bytes": _int_at_least(-1),
    "segment.bytes": _int_at_least(14),
    "max.message.bytes": _int_at_least(0),
    "message.timestamp.type": _create_time_only,
    "min.insync.replicas": _int_at_least(1),
}


def compacted(configs: Mapping[str, str]) -> bool:
    """Kafka's test: a topic whose cleanup.policy lacks "delete" keeps every key's newest record
    however old, so nothing deletes records by age, size or offset (DeleteRecords)."""
    return "delete" not in configs.get("cleanup.policy", "delete")


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3   # IncrementalAlterConfigs' operations
LIST_SETTINGS = {"cleanup.policy": "delete"}   # settings whose value is a list, and its default


def changed_configs(current: Mapping[str, str],
                    operations: Iterable[tuple[str, int, str | None]]) -> dict[str, str]:
    """A topic's own settings after IncrementalAlterConfigs' (name, operation, value) steps:
    SET and DELETE any setting; APPEND and SUBTRACT items of a list setting. The result still
    has to pass check_topic_configs."""
    configs = dict(current)
    seen = set()
    for name, operation, value in operations:
        if name in seen:
            raise TopicError("invalid_request", f"config {name!r} is named twice")
        seen.add(name)
        if operation == SET:
            if value is None:
                raise TopicError("invalid_config", f"cannot SET {name!r} to null")
            configs[name] = value
        elif operation == DELETE:
            configs.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            if name not in LIST_SETTINGS:
                raise TopicError("invalid_config", f"{name!r} is not a list: it can only be "
                                                   "SET or DELETEd")
            items = [i for i in configs.get(name, LIST_SETTINGS[name]).split(",") if i]
            given = [i.strip() for i in (value or "").split(",") if i.strip()]
            items = items + [i for i in given if i not in items] if operation == APPEND \
                else [i for i in items if i not in given]
            configs[name] = ",".join(items)
        else:
            raise TopicError("invalid_request", f"unknown config operation {operation}")
    return configs


def check_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    checked = {}
    for key, value in configs.items():
        parse = TOPIC_SETTINGS.get(key)
        if parse is None:
            raise TopicError("invalid_config", f"unknown or unsupported topic config {key!r}")
        if value is None:
            continue
        try:
            parse(value)
        except ValueError as exc:
            raise TopicError("invalid_config", f"{key}={value!r}: {exc}") from None
        checked[key] = value
    return checked


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str]
    partitions: list[PartitionLog] = field(default_factory=list)

    @property
    def internal(self) -> bool:
        return self.name.startswith("__")


LogOpener = Callable[[Path, LogConfig], PartitionLog]


class TopicManager:
    def __init__(self, data_dir: Path, config: BrokerConfig, open_log: LogOpener) -> None:
        self._dir = data_dir
        self._config = config
        self._open_log = open_log
        self._by_name: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}

    # -- lookups ---------------------------------------------------------------------------

    def get(self, name: str | None) -> Topic | None:
        return self._by_name.get(name) if name is not None else None

    def by_id(self, topic_id: uuid.UUID | None) -> Topic | None:
        return self._by_id.get(topic_id) if topic_id is not None else None

    def __iter__(self) -> Iterator[Topic]:
        return iter(sorted(self._by_name.values(), key=lambda t: t.name))

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def partition(self, name: str, index: int) -> PartitionLog | None:
        topic = self._by_name.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    # -- lifecycle -------------------------------------------------------------------------

    def load(self) -> None:
        """Open every topic in the catalog; remove partition directories of deleted topics."""
        self._dir.mkdir(parents=True, exist_ok=True)
        catalog_path = self._dir / CATALOG
        entries = json.loads(catalog_path.read_text()) if catalog_path.exists() else {}
        for name, entry in entries.items():
            topic = Topic(name, uuid.UUID(entry["id"]), dict(entry.get("configs", {})))
            self._open_partitions(topic, entry["partitions"])
            self._register(topic)
        if catalog_path.exists():  # without a catalog, never guess which data is stale
            self._remove_orphans()

    def close(self) -> None:
        for topic in self._by_name.values():
            for partition in topic.partitions:
                partition.close()

    def create(self, name: str, num_partitions: int, configs: Mapping[str, str | None] | None = None,
               validate_only: bool = False, internal: bool = False) -> Topic:
        """Create a topic. `internal` is for the broker's own topics: their configs (such as
        cleanup.policy=compact) are set by roster, not validated as a user's would be."""
        check_topic_name(name)
        if name in self._by_name:
            raise TopicError("topic_already_exists", f"topic {name!r} already exists")
        if num_partitions < 1:
            raise TopicError("invalid_partitions", "number of partitions must be at least 1")
        checked = dict(configs or {}) if internal else check_topic_configs(configs or {})
        topic = Topic(name, uuid.uuid4(), checked)
        if validate_only:
            return topic
        self._open_partitions(topic, num_partitions)
        self._register(topic)
        self._save_catalog()
        log.info("created topic %s with %d partitions", name, num_partitions)
        return topic

    def add_partitions(self, name: str, total: int) -> Topic:
        topic = self._by_name.get(name)
        if topic is None:
            raise TopicError("unknown_topic_or_partition", f"topic {name!r} does not exist")
        if total <= len(topic.partitions):
            raise TopicError("invalid_partitions",
                             f"topic {name!r} has {len(topic.partitions)} partitions; "
                             f"the new count must be larger, not {total}")
        self._open_partitions(topic, total)
        self._save_catalog()
        return topic

    def alter_configs(self, name: str, configs: Mapping[str, str], validate_only: bool = False
                      ) -> Topic:
        """Replace a topic's own settings with `configs` (what it does not name comes from the
        broker again). The catalog is fsynced before the partitions use them, so what was
        answered survives a crash."""
        topic = self._by_name.get(name)
        if topic is None:
            raise TopicError("unknown_topic_or_partition", f"topic {name!r} does not exist")
        if topic.internal:
            raise TopicError("invalid_request", f"roster sets the configs of {name} itself")
        checked = check_topic_configs(configs)
        if validate_only:
            return topic
        previous, topic.configs = topic.configs, checked
        try:
            self._save_catalog()
        except OSError as exc:
            topic.configs = previous
            raise TopicError("kafka_storage_error", f"cannot save the topic catalog: {exc}") \
                from None
        config = self.log_config(checked)
        for partition in topic.partitions:
            partition.reconfigure(config)
        log.info("topic %s configs are now %s", name, checked or "the broker's")
        return topic

    def delete(self, name: str) -> Topic:
        topic = self._by_name.get(name)
        if topic is None:
            raise TopicError("unknown_topic_or_partition", f"topic {name!r} does not exist")
        del self._by_name[name]
        del self._by_id[topic.topic_id]
        self._save_catalog()  # from here on the topic is gone, even if removing files fails
        for partition in topic.partitions:
            partition.delete()
        log.info("deleted topic %s", name)
        return topic

    def log_config(self, topic_configs: Mapping[str, str]) -> LogConfig:
        broker = self._config

        def pick(topic_key: str, default: int) -> int:
            return int(topic_configs[topic_key]) if topic_key in topic_configs else default

        # time and size retention would delete a compacted topic's live keys (group state)
        keep_all = compacted(topic_configs)
        return LogConfig(
            segment_bytes=pick("segment.bytes", broker["log.segment.bytes"]),
            retention_ms=-1 if keep_all else pick("retention.ms", retention_ms(broker)),
            retention_bytes=-1 if keep_all else pick("retention.bytes",
                                                     broker["log.retention.bytes"]),
            index_interval_bytes=broker["log.index.interval.bytes"],
            max_message_bytes=pick("max.message.bytes", broker["message.max.bytes"]),
        )

    # -- internals -------------------------------------------------------------------------

    def _register(self, topic: Topic) -> None:
        self._by_name[topic.name] = topic
        self._by_id[topic.topic_id] = topic

    def _open_partitions(self, topic: Topic, total: int) -> None:
        config = self.log_config(topic.configs)
        for index in range(len(topic.partitions), total):
            topic.partitions.append(self._open_log(self._dir / f"{topic.name}-{index}", config))

    def _save_catalog(self) -> None:
        entries = {t.name: {"id": str(t.topic_id), "partitions": len(t.partitions),
                            "configs": t.configs} for t in self}
        path = self._dir / CATALOG
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as out:
            json.dump(entries, out, indent=1, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        directory = os.open(self._dir, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def _remove_orphans(self) -> None:
        """Partition directories whose topic is not in the catalog: a deletion cut short by a crash."""
        expected = {f"{t.name}-{i}" for t in self._by_name.values() for i in range(len(t.partitions))}
        for child in self._dir.iterdir():
            if child.is_dir() and re.fullmatch(r".+-\d+", child.name) and child.name not in expected:
                log.warning("removing %s: its topic is not in the catalog", child)
                shutil.rmtree(child, ignore_errors=True)


def effective_configs(manager: TopicManager, topic: Topic) -> list[tuple[str, str, bool]]:
    """(name, value, is_default) for the settings that shape a topic's log."""
    log_config = manager.log_config(topic.configs)
    defaults = {
        "cleanup.policy": "delete",
        "retention.ms": str(log_config.retention_ms),
        "retention.bytes": str(log_config.retention_bytes),
        "segment.bytes": str(log_config.segment_bytes),
        "max.message.bytes": str(log_config.max_message_bytes),
        "message.timestamp.type": "CreateTime",
        "min.insync.replicas": "1",
    }
    return [(name, topic.configs.get(name, value), name not in topic.configs)
            for name, value in sorted({**defaults, **topic.configs}.items())]
