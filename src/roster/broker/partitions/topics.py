"""Topics: the catalog of names, ids, partition counts and configs, and their partition logs.

The catalog is one JSON file in the data directory, replaced atomically (write, fsync, rename,
fsync the directory), so a crash leaves either the old or the new catalog. Partition data lives
in `<topic>-<partition>/` directories, as in Kafka.

Every change is durable first and applied after: the new catalog is written before memory
changes, and a write that fails leaves memory and disk as they were and raises
TopicError("kafka_storage_error"). A directory no catalog entry names is garbage (removed at
start, or when a new partition needs its name), so new partitions are created before the catalog
names them and a failed or interrupted create leaves nothing behind.

Deleting a topic must work on a full disk, where no new catalog fits. So its commit point is an
empty marker file, `deleting-<topic id>` (an empty file needs no data blocks, and where not
even an inode is left a spare empty file is renamed into it): the catalog in force is
topics.json minus every topic that has a marker. Then the topic leaves memory, its
partition directories are removed (freeing their space), the catalog is rewritten without it and
the marker removed. A crash after the marker is durable leaves a deletion that the next start
completes; a crash before it leaves the topic as it was. See docs/durability.md.
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

from roster import topic_config
from roster.broker.partitions.open_files import refusal as open_files_refusal
from roster.config import SETTINGS, BrokerConfig
from roster.log.api import LogConfig, LogError, PartitionLog
from roster.log.files import durable_replace, fsync_directory
from roster.topic_config_table import INTERNAL_SEGMENT_BYTES

log = logging.getLogger("roster.topics")

CATALOG = "topics.json"
DELETION_MARKER = "deleting-"   # + a topic id: that topic's deletion is committed
SPARE_MARKER = ".spare-deletion-marker"  # renamed into a marker where no new file can be made
LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249
OFFSETS_TOPIC = "__consumer_offsets"
# Kafka's internal topics (its Topic.INTERNAL_TOPICS): listed as internal, refused to producers
# and to DeleteTopics. Any other name, "__" first or not, is a user's topic, as in Kafka.
KAFKA_INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state", "__share_group_state"})
# roster's own, which Kafka does not have (the flight recorder's events): internal too, and
# out of what a consumer group's regex can match
ROSTER_INTERNAL_TOPICS = frozenset({"__roster_group_events"})
INTERNAL_TOPICS = KAFKA_INTERNAL_TOPICS | ROSTER_INTERNAL_TOPICS


class TopicError(Exception):
    """A topic operation that cannot be done; `code` is the Kafka error name to answer with."""

    def __init__(self, code: str, message: str, applied: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.applied = applied  # the change was made all the same (see TopicManager._commit)


def not_an_increase(name: str, current: int, total: int) -> TopicError:
    """CreatePartitions to no more partitions than the topic has, in Kafka's words
    (ReplicationControlManager), which kafka-topics --alter prints as they are."""
    if total == current:
        return TopicError("invalid_partitions", f"Topic already has {current} partition(s).")
    return TopicError("invalid_partitions", f"The topic {name} currently has {current} "
                      f"partition(s); {total} would not be an increase.")


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


SET, DELETE, APPEND, SUBTRACT = topic_config.SET, topic_config.DELETE, \
    topic_config.APPEND, topic_config.SUBTRACT   # IncrementalAlterConfigs' operations


def changed_configs(current: Mapping[str, str],
                    operations: Iterable[tuple[str, int, str | None]]) -> dict[str, str]:
    """A topic's own settings after IncrementalAlterConfigs' (name, operation, value) steps:
    SET and DELETE any setting; APPEND and SUBTRACT items of a list setting. The result still
    has to pass check_topic_configs."""
    operations = list(operations)
    names = [name for name, _, _ in operations]
    for name in names:
        if names.count(name) > 1:
            raise TopicError("invalid_request", f"Error due to duplicate config keys: {name}")
    if any(operation not in (SET, DELETE, APPEND, SUBTRACT) for _, operation, _ in operations):
        raise TopicError("invalid_request", "unknown config operation")
    try:
        return topic_config.incremental(current, operations)
    except topic_config.ConfigInvalid as exc:
        raise TopicError("invalid_config", str(exc)) from None


def check_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """A topic's own settings checked as Kafka checks them (topic_config.check): every topic
    config Kafka 4 defines, with Kafka's INVALID_CONFIG messages."""
    try:
        return topic_config.check(configs)
    except topic_config.ConfigInvalid as exc:
        raise TopicError("invalid_config", str(exc)) from None


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str]
    partitions: list[PartitionLog] = field(default_factory=list)
    # (configs, {key: value}): what TopicManager.cached derived from `configs`, until replaced
    derived: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


LogOpener = Callable[[Path, LogConfig], PartitionLog]


class TopicManager:
    def __init__(self, data_dir: Path, config: BrokerConfig, open_log: LogOpener) -> None:
        self._dir = data_dir
        self._config = config
        self._open_log = open_log
        self._by_name: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._deleting: set[uuid.UUID] = set()  # ids whose deletion marker is on disk
        # counts the changes memory has taken (a topic created, grown, reconfigured or
        # deleted): a reader that noted it can tell cheaply that nothing changed since
        self.version = 0

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
        """Open every topic in the catalog that no deletion marker names; finish the deletions
        that were cut short (their directories go, the catalog is rewritten without them) and
        remove partition directories no topic owns."""
        self._dir.mkdir(parents=True, exist_ok=True)
        catalog_path = self._dir / CATALOG
        entries = json.loads(catalog_path.read_text()) if catalog_path.exists() else {}
        self._deleting = self._read_markers()
        for name, entry in entries.items():
            topic = Topic(name, uuid.UUID(entry["id"]), dict(entry.get("configs", {})))
            if topic.topic_id in self._deleting:
                log.warning("completing the deletion of topic %s (id %s)", name, topic.topic_id)
                continue
            topic.partitions = self._open_logs(topic, 0, entry["partitions"], fresh=False)
            self._register(topic)
        if catalog_path.exists():  # without a catalog, never guess which data is stale
            self._remove_orphans()
        if self._deleting:
            try:
                self._commit(self._entries())
            except TopicError as exc:  # the markers still keep those topics deleted
                log.warning("%s; retried at the next catalog change", exc)
        self._keep_spare_marker()

    def close(self) -> None:
        for topic in self._by_name.values():
            for partition in topic.partitions:
                partition.close()

    def create(self, name: str, num_partitions: int, configs: Mapping[str, str | None] | None = None,
               validate_only: bool = False, internal: bool = False) -> Topic:
        """Create a topic. `internal` is for the broker's own topics: their configs (such as
        cleanup.policy=compact) are set by roster, not validated as a user's would be.

        Order: the partition directories (which nothing names yet), then the catalog naming
        them, then memory. If the catalog cannot be written the directories are removed again,
        and a crash before it leaves only directories that the next start removes."""
        check_topic_name(name)
        if name in self._by_name:
            # Kafka's wording (ReplicationControlManager): tools print it as it is
            raise TopicError("topic_already_exists", f"Topic '{name}' already exists.")
        if num_partitions < 1:
            raise TopicError("invalid_partitions", "number of partitions must be at least 1")
        _check_open_files(num_partitions)
        checked = dict(configs or {}) if internal else check_topic_configs(configs or {})
        topic = Topic(name, uuid.uuid4(), checked)
        if validate_only:
            return topic
        partitions = self._open_logs(topic, 0, num_partitions, fresh=True)
        entries = self._entries()
        entries[name] = _entry(topic.topic_id, num_partitions, checked)

        def apply() -> None:
            topic.partitions = partitions
            self._register(topic)
            log.info("created topic %s with %d partitions", name, num_partitions)

        try:
            self._commit(entries, apply)
        except TopicError as exc:
            if not exc.applied:
                self._discard(partitions)
            raise
        return topic

    def add_partitions(self, name: str, total: int) -> Topic:
        """Grow a topic: the new partitions' directories, then the catalog, then memory."""
        topic = self._by_name.get(name)
        if topic is None:
            raise TopicError("unknown_topic_or_partition", f"topic {name!r} does not exist")
        if total <= len(topic.partitions):
            raise not_an_increase(name, len(topic.partitions), total)
        _check_open_files(total - len(topic.partitions))
        added = self._open_logs(topic, len(topic.partitions), total, fresh=True)
        entries = self._entries()
        entries[name]["partitions"] = total

        def apply() -> None:
            topic.partitions.extend(added)
            log.info("topic %s has %d partitions now", name, total)

        try:
            self._commit(entries, apply)
        except TopicError as exc:
            if not exc.applied:
                self._discard(added)
            raise
        return topic

    def alter_configs(self, name: str, configs: Mapping[str, str], validate_only: bool = False
                      ) -> Topic:
        """Replace a topic's own settings with `configs` (what it does not name comes from the
        broker again). The catalog is fsynced before the topic and its partitions use them, so
        what was answered survives a crash, and a failed write changes nothing."""
        topic = self._by_name.get(name)
        if topic is None:
            raise TopicError("unknown_topic_or_partition", f"topic {name!r} does not exist")
        # the broker's own topics too, as Kafka alters __consumer_offsets (a larger
        # max.message.bytes for a large group's record, say): checked as any topic's
        checked = check_topic_configs(configs)
        if validate_only:
            return topic
        entries = self._entries()
        entries[name]["configs"] = checked

        def apply() -> None:
            topic.configs = checked
            config = self.log_config(checked)
            for partition in topic.partitions:
                partition.reconfigure(config)
            log.info("topic %s configs are now %s", name, checked or "the broker's")

        self._commit(entries, apply)
        return topic

    def delete(self, name: str) -> Topic:
        """Delete a topic, on a full disk too: see the module docstring for the order.

        Returns once the deletion is durable (the marker is). If the marker cannot be written,
        nothing has changed and TopicError("kafka_storage_error") is raised. Failures after it
        (removing files, rewriting the catalog) are logged, not raised: the topic is deleted,
        and the marker makes the next catalog change or start finish the job."""
        topic = self._by_name.get(name)
        if topic is None:
            raise TopicError("unknown_topic_or_partition", f"topic {name!r} does not exist")
        for _ in self.deletion_steps(topic):
            pass
        log.info("deleted topic %s", name)
        return topic

    def deletion_steps(self, topic: Topic) -> Iterator[str]:
        """The steps of deleting `topic`; each yield (naming the step just done) is a point a
        crash may hit. Raises TopicError, with nothing changed, if the first step fails."""
        marker = self._marker(topic.topic_id)
        try:
            try:  # a rename needs no new inode: it works where nothing can be created
                os.rename(self._dir / SPARE_MARKER, marker)
            except FileNotFoundError:
                os.close(os.open(marker, os.O_WRONLY | os.O_CREAT, 0o644))
        except OSError as exc:
            raise TopicError("kafka_storage_error",
                             f"cannot record the deletion of {topic.name!r}: {exc}") from None
        try:
            fsync_directory(self._dir)
        except OSError as exc:
            try:
                marker.unlink()
            except OSError:  # the marker stays, so the topic is deleted: memory follows the disk
                log.error("cannot sync or remove %s (%s): deleting topic %s all the same",
                          marker, exc, topic.name)
            else:
                raise TopicError("kafka_storage_error", f"cannot record the deletion of "
                                                        f"{topic.name!r}: {exc}") from None
        self._deleting.add(topic.topic_id)
        yield "marked"
        del self._by_name[topic.name]
        del self._by_id[topic.topic_id]
        self.version += 1
        for partition in topic.partitions:
            try:
                partition.delete()
            except (LogError, OSError) as exc:  # the next start removes what is left
                log.error("deleting topic %s: %s", topic.name, exc)
            yield "partition removed"
        try:
            self._commit(self._entries())
        except TopicError as exc:
            log.warning("topic %s is deleted but %s; its deletion marker stands in until the "
                        "next catalog change or start", topic.name, exc)
        self._keep_spare_marker()
        yield "catalog rewritten"

    def resolved(self, topic_configs: Mapping[str, str]) -> list[topic_config.Resolved]:
        """Every topic config's effective value and its source (topic_config.resolve)."""
        broker = self._config
        return topic_config.resolve(topic_configs, broker, broker.explicit,
                                    {name: setting.default for name, setting in SETTINGS.items()})

    def settings(self, topic: Topic) -> dict[str, Any]:
        """The topic's effective configs, typed (ints, floats, booleans, lists), computed once
        per version of its configs."""
        return self.cached(topic, "settings", lambda: self.typed(topic.configs))

    def cached(self, topic: Topic, key: str, build: Callable[[], Any]) -> Any:
        """What `build()` derives from the topic's configs, made once per version of them:
        alter_configs replaces the mapping, which drops everything derived from the old one (a
        per-produce check costs a lookup, not a parse)."""
        derived = topic.derived
        if derived is None or derived[0] is not topic.configs:
            derived = topic.derived = (topic.configs, {})
        memo = derived[1]
        value = memo.get(key)
        if value is None:
            value = memo[key] = build()
        return value

    def typed(self, topic_configs: Mapping[str, str]) -> dict[str, Any]:
        # values were checked on the way in; the broker's own topics may go below Kafka's
        # minimums (offsets.topic.segment.bytes), so only their types are read here
        values = {item.name: topic_config.parse(item.name, item.value, checked=False)
                  for item in self.resolved(topic_configs)}
        if INTERNAL_SEGMENT_BYTES in topic_configs:
            values["segment.bytes"] = int(topic_configs[INTERNAL_SEGMENT_BYTES])
        return values

    def log_config(self, topic_configs: Mapping[str, str]) -> LogConfig:
        values = self.typed(topic_configs)
        # time and size retention would delete a compacted topic's live keys (group state)
        keep_all = "delete" not in values["cleanup.policy"]
        segment_ms = values["segment.ms"]
        if "compact" in values["cleanup.policy"]:  # Kafka's maxSegmentMs: dirty records must
            segment_ms = min(segment_ms, values["max.compaction.lag.ms"])  # leave the active one
        return LogConfig(
            segment_bytes=values["segment.bytes"],
            segment_ms=segment_ms,
            retention_ms=-1 if keep_all else values["retention.ms"],
            retention_bytes=-1 if keep_all else values["retention.bytes"],
            index_interval_bytes=values["index.interval.bytes"],
            max_message_bytes=values["max.message.bytes"],
        )

    # -- internals -------------------------------------------------------------------------

    def _register(self, topic: Topic) -> None:
        self._by_name[topic.name] = topic
        self._by_id[topic.topic_id] = topic
        self.version += 1

    def _open_logs(self, topic: Topic, start: int, end: int, fresh: bool) -> list[PartitionLog]:
        """Open partitions start..end-1 of `topic`. `fresh`: they are new, so a directory already
        holding one of their names is a leftover no catalog names (of a change that failed, or
        of a deletion whose files could not all be removed) and is removed first. Raises
        TopicError("kafka_storage_error"), with whatever it opened removed again, if the files
        cannot be created."""
        config = self.log_config(topic.configs)
        opened: list[PartitionLog] = []
        try:
            for index in range(start, end):
                path = self._dir / f"{topic.name}-{index}"
                if fresh and path.exists():
                    log.warning("removing %s: no topic in the catalog owns it", path)
                    shutil.rmtree(path)
                opened.append(self._open_log(path, config))
        except (LogError, OSError) as exc:
            if not fresh:
                raise
            self._discard(opened)
            raise TopicError("kafka_storage_error",
                             f"cannot create the partitions of {topic.name!r}: {exc}") from None
        return opened

    def _discard(self, partitions: Iterable[PartitionLog]) -> None:
        """Remove partitions the catalog never named (the next start would remove them too)."""
        for partition in partitions:
            try:
                partition.delete()
            except (LogError, OSError) as exc:
                log.warning("cannot remove a partition the catalog does not name: %s", exc)

    def _entries(self) -> dict[str, dict[str, Any]]:
        """The catalog as memory has it."""
        return {t.name: _entry(t.topic_id, len(t.partitions), t.configs) for t in self}

    def _commit(self, entries: Mapping[str, Mapping[str, Any]],
                apply: Callable[[], None] = lambda: None) -> None:
        """Make `entries` the catalog, then `apply()` the change to memory, then sync.

        If the new catalog cannot be written or put in place, the old one stays, whole, nothing
        is applied, and TopicError("kafka_storage_error") is raised. Once it is in place (a
        kill -9 from here on leaves the change made) memory follows it, whatever comes next: a
        failing directory fsync (an I/O error; then a power loss could still undo the change)
        raises TopicError("kafka_storage_error", applied=True). Deletion markers the new catalog
        has made redundant are dropped once it is synced."""
        path = self._dir / CATALOG
        try:
            # the directory is synced below, once memory follows the new catalog
            durable_replace(path, json.dumps(entries, indent=1, sort_keys=True).encode(),
                            sync_directory=False)
        except OSError as exc:
            raise TopicError("kafka_storage_error",
                             f"cannot save the topic catalog: {exc}") from None
        apply()
        self.version += 1
        try:
            fsync_directory(self._dir)
        except OSError as exc:
            log.error("the topic catalog was replaced but its directory cannot be synced: %s",
                      exc)
            raise TopicError("kafka_storage_error", f"the change is made but may not survive a "
                             f"power loss: cannot sync the data directory: {exc}",
                             applied=True) from None
        named = {entry["id"] for entry in entries.values()}
        for topic_id in list(self._deleting):
            if str(topic_id) in named:
                continue  # not reached: a topic being deleted has left memory first
            try:  # a marker left behind is harmless: it names an id the catalog lacks
                self._marker(topic_id).unlink(missing_ok=True)
            except OSError as exc:
                log.warning("cannot remove a deletion marker: %s", exc)
                continue
            self._deleting.discard(topic_id)

    def _keep_spare_marker(self) -> None:
        """Have an empty file ready for the next deletion to rename into its marker. Not synced:
        if a crash loses it, the next start makes it again."""
        try:
            os.close(os.open(self._dir / SPARE_MARKER, os.O_WRONLY | os.O_CREAT, 0o644))
        except OSError as exc:
            log.debug("no spare deletion marker for now: %s", exc)

    def _marker(self, topic_id: uuid.UUID) -> Path:
        return self._dir / f"{DELETION_MARKER}{topic_id}"

    def _read_markers(self) -> set[uuid.UUID]:
        ids = set()
        for path in self._dir.glob(DELETION_MARKER + "*"):
            if not path.is_file():
                continue  # a partition directory of a topic whose name starts the same way
            try:
                ids.add(uuid.UUID(path.name[len(DELETION_MARKER):]))
            except ValueError:
                log.warning("ignoring %s: not a deletion marker", path)
        return ids

    def _remove_orphans(self) -> None:
        """Partition directories no topic owns: a deletion, or a create or partition increase
        whose catalog write failed or never came, cut short by a crash."""
        expected = {f"{t.name}-{i}" for t in self._by_name.values() for i in range(len(t.partitions))}
        for child in self._dir.iterdir():
            if child.is_dir() and re.fullmatch(r".+-\d+", child.name) and child.name not in expected:
                log.warning("removing %s: its topic is not in the catalog", child)
                shutil.rmtree(child, ignore_errors=True)


def _entry(topic_id: uuid.UUID, partitions: int, configs: Mapping[str, str]) -> dict[str, Any]:
    return {"id": str(topic_id), "partitions": partitions, "configs": dict(configs)}


def effective_configs(manager: TopicManager, topic: Topic) -> list[topic_config.Resolved]:
    """Every topic config Kafka lists for `topic`, with its value and source."""
    return manager.resolved(topic.configs)


def _check_open_files(new_partitions: int) -> None:
    problem = open_files_refusal(new_partitions)
    if problem is not None:
        raise TopicError("invalid_partitions", problem)
