"""A streams group's topology and how it is configured against the topics that exist (Kafka's
InternalTopicManager.configureTopics): the partition counts of its internal topics, the
internal topics the coordinator must create, and the status a heartbeat reports while the
topology cannot run.

The topology is what the first member sends at join (StreamsGroupHeartbeat's Topology, stored
as record 23): subtopologies, each with its source topics, the repartition topics it writes
(sinks) and reads (sources, with a partition count or 0 for "derive it"), its state changelog
topics (always 0 partitions: they take the subtopology's task count) and its copartition groups
(indexes into its own source and repartition source lists).

How the counts are decided, in Kafka's order:
1. every source topic must exist, else MISSING_SOURCE_TOPICS ("Source topics a, b are missing.";
   a list of topics names the first three, sorted, and how many more);
2. a repartition source topic without a count takes the largest partition count among the source
   topics of the subtopologies that write it, repeated until nothing changes; one nobody writes,
   or a loop that leaves one undecided, makes the topology invalid (InvalidTopology: the
   heartbeat's STREAMS_INVALID_TOPOLOGY error, not a status);
3. each copartition group's user topics must have equal counts, a fixed repartition topic in it
   must match them, and the flexible ones take that count (INCORRECTLY_PARTITIONED_TOPICS
   otherwise);
4. a changelog takes the largest count of its subtopology's sources (user and repartition);
5. an internal topic that exists with another count is INCORRECTLY_PARTITIONED_TOPICS; those
   that do not exist are to be created, and the topology is then MISSING_INTERNAL_TOPICS until
   they are.
A topic that exists counts with its real partition count, even when it is internal.
"""
from __future__ import annotations

from dataclasses import field
from enum import IntEnum

from roster.coordinator.consumer.model import TopicImage
from roster.frozen import frozen


class Status(IntEnum):
    """StreamsGroupHeartbeatResponse's Status codes (int8)."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5
    MISSING_CLIENT_TAGS = 6      # response v1 (Kafka 4.4) only: v0 clients do not know it


@frozen
class TopicInfo:
    name: str
    partitions: int = 0              # 0: derived (always 0 for a changelog)
    replication_factor: int = 0      # 0: the broker's default
    configs: tuple[tuple[str, str], ...] = ()


@frozen
class CopartitionGroup:
    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@frozen
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()

    @property
    def stateful(self) -> bool:
        """Kafka's TopologyDescriber.isStateful: it has state, so its tasks get standbys."""
        return bool(self.state_changelog_topics)


@frozen
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...] = ()


@frozen
class InternalTopic:
    """A topic the coordinator creates for the group (Kafka's CreatableTopic)."""

    name: str
    partitions: int
    replication_factor: int          # -1: the broker's default
    configs: tuple[tuple[str, str], ...]


@frozen
class ConfiguredSubtopology:
    subtopology_id: str
    partitions: int                  # its task count: the largest count of its sources
    stateful: bool


@frozen
class ConfiguredTopology:
    epoch: int
    # None: the counts could not be decided (missing source topics, bad partitioning)
    subtopologies: dict[str, ConfiguredSubtopology] | None
    to_create: dict[str, InternalTopic] = field(default_factory=dict)
    status: tuple[Status, str] | None = None

    @property
    def ready(self) -> bool:
        """Tasks can be assigned: every topic exists with the right count."""
        return self.subtopologies is not None and self.status is None


class InvalidTopology(ValueError):
    """A topology whose repartition counts cannot be decided (STREAMS_INVALID_TOPOLOGY)."""


class _ConfigError(Exception):
    def __init__(self, status: Status, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def invalid_topology(topology: Topology) -> str | None:
    """Why a topology sent at join cannot be taken (STREAMS_INVALID_TOPOLOGY), or None."""
    seen = set()
    for s in topology.subtopologies:
        if s.subtopology_id in seen:
            return f"Duplicate subtopology ID {s.subtopology_id}."
        seen.add(s.subtopology_id)
        for g in s.copartition_groups:
            for indexes, size in ((g.source_topics, len(s.source_topics)),
                                  (g.source_topic_regex, len(s.source_topic_regex)),
                                  (g.repartition_source_topics,
                                   len(s.repartition_source_topics))):
                if any(i < 0 or i >= size for i in indexes):
                    return (f"Copartition group of subtopology {s.subtopology_id} refers to "
                            "a topic that is not among its sources.")
    return None


def required_topics(topology: Topology) -> list[str]:
    """Every topic the topology reads or keeps state in, sorted (what a change in the catalog
    must make the coordinator configure the topology again for)."""
    names = set()
    for s in topology.subtopologies:
        names.update(s.source_topics)
        names.update(t.name for t in s.repartition_source_topics)
        names.update(t.name for t in s.state_changelog_topics)
    return sorted(names)


def configure(topology: Topology, image: TopicImage) -> ConfiguredTopology:
    existing: dict[str, int] = {}
    for name in required_topics(topology):
        found = image.lookup(name)
        if found is not None:
            existing[name] = found[1]
    try:
        _check_source_topics(topology, existing)
        decided = _repartition_counts(topology, existing)
        _enforce_copartitioning(topology, existing, decided)
        _changelog_counts(topology, existing, decided)
    except _ConfigError as e:
        return ConfiguredTopology(topology.epoch, None, {}, (e.status, e.detail))
    count = _counter(existing, decided)
    subtopologies = {}
    wanted: dict[str, InternalTopic] = {}
    for s in topology.subtopologies:
        sources = [*s.source_topics, *(t.name for t in s.repartition_source_topics)]
        subtopologies[s.subtopology_id] = ConfiguredSubtopology(
            s.subtopology_id, max((count(n) or 0 for n in sources), default=0), s.stateful)
        for t in (*s.repartition_source_topics, *s.state_changelog_topics):
            partitions = decided.get(t.name) or existing.get(t.name, 0)
            wanted[t.name] = InternalTopic(t.name, partitions, t.replication_factor or -1,
                                           t.configs)
    to_create = {}
    for name in sorted(wanted):
        topic = wanted[name]
        if name not in existing:
            to_create[name] = topic
        elif existing[name] != topic.partitions:
            detail = (f"Existing topic {name} has different number of partitions: expected "
                      f"{topic.partitions}, found {existing[name]}")
            return ConfiguredTopology(topology.epoch, None, {},
                                      (Status.INCORRECTLY_PARTITIONED_TOPICS, detail))
    status = None
    if to_create:
        status = (Status.MISSING_INTERNAL_TOPICS,
                  f"Internal topics are missing: {summarize(to_create)}")
    return ConfiguredTopology(topology.epoch, subtopologies, to_create, status)


def summarize(names) -> str:
    """Kafka's summary of a list of topics in a status: the first three, then how many more."""
    names = sorted(names)
    if not names:
        return "<none>"
    more = f" and {len(names) - 3} additional topics" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


def _counter(existing: dict[str, int], decided: dict[str, int]):
    def count(name: str) -> int | None:
        return existing[name] if name in existing else decided.get(name)
    return count


def _check_source_topics(topology: Topology, existing: dict[str, int]) -> None:
    missing = sorted({n for s in topology.subtopologies for n in s.source_topics
                      if n not in existing})
    if missing:
        raise _ConfigError(Status.MISSING_SOURCE_TOPICS,
                           f"Source topics {summarize(missing)} are missing.")


def _repartition_counts(topology: Topology, existing: dict[str, int]) -> dict[str, int]:
    decided: dict[str, int] = {}
    for s in topology.subtopologies:
        for t in s.repartition_source_topics:
            if t.partitions:
                decided[t.name] = t.partitions
    count = _counter(existing, decided)
    writers: dict[str, list[Subtopology]] = {}
    for s in topology.subtopologies:
        for name in s.repartition_sink_topics:
            writers.setdefault(name, []).append(s)
    flexible = [t.name for s in topology.subtopologies for t in s.repartition_source_topics
                if not t.partitions]
    if any(name not in writers and count(name) is None for name in flexible):
        raise InvalidTopology("Failed to compute number of partitions for all repartition "
                              "topics, because a repartition source topic is never used as a "
                              "sink topic.")
    progress = True
    while progress:
        progress = False
        for name in flexible:
            if count(name) is not None:
                continue
            counts = [count(n) for w in writers.get(name, ())
                      for n in (*w.source_topics, *(t.name for t in w.repartition_source_topics))]
            known = [c for c in counts if c is not None]
            if known:
                decided[name] = max(known)
                progress = True
    if any(count(n) is None for n in flexible):
        raise InvalidTopology("Failed to compute number of partitions for all repartition "
                              "topics. There may be loops in the topology that cannot be "
                              "resolved.")
    return decided


def _enforce_copartitioning(topology: Topology, existing: dict[str, int],
                            decided: dict[str, int]) -> None:
    fixed = {t.name for s in topology.subtopologies for t in s.repartition_source_topics
             if t.partitions}
    flexible = {t.name for s in topology.subtopologies for t in s.repartition_source_topics
                if not t.partitions}
    count = _counter(existing, decided)
    for s in topology.subtopologies:
        for g in s.copartition_groups:
            names = [s.source_topics[i] for i in g.source_topics]
            names += [s.repartition_source_topics[i].name for i in g.repartition_source_topics]
            user = sorted(n for n in names if n not in fixed and n not in flexible)
            user_counts = {count(n) for n in user}
            if len(user_counts) > 1:
                raise _ConfigError(Status.INCORRECTLY_PARTITIONED_TOPICS,
                                   "Following topics do not have the same number of "
                                   f"partitions: [{', '.join(user)}]")
            fixed_here = sorted(n for n in names if n in fixed)
            fixed_counts = {count(n) for n in fixed_here}
            for n in fixed_here:
                if user_counts and count(n) not in user_counts:
                    raise _ConfigError(
                        Status.INCORRECTLY_PARTITIONED_TOPICS,
                        f"Number of partitions [{count(n)}] of repartition topic [{n}] doesn't "
                        f"match number of partitions [{next(iter(user_counts))}] of the source "
                        "topic.")
            if len(fixed_counts) > 1:
                raise _ConfigError(Status.INCORRECTLY_PARTITIONED_TOPICS,
                                   "Following topics do not have the same number of "
                                   f"partitions: [{', '.join(fixed_here)}]")
            flexible_here = [n for n in names if n in flexible and n not in existing]
            if user_counts or fixed_counts:
                target = next(iter(user_counts or fixed_counts))
            else:
                target = max((count(n) or 0 for n in flexible_here), default=0)
            for n in flexible_here:
                decided[n] = target


def _changelog_counts(topology: Topology, existing: dict[str, int],
                      decided: dict[str, int]) -> None:
    count = _counter(existing, decided)
    for s in topology.subtopologies:
        sources = [*s.source_topics, *(t.name for t in s.repartition_source_topics)]
        tasks = max((count(n) or 0 for n in sources), default=0)
        for t in s.state_changelog_topics:
            decided[t.name] = tasks
