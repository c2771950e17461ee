"""The topic catalog as the group coordinators read it: names, ids and partition counts, and
the catalog's version (the consumer and streams types' TopicImage), without the partitions'
logs."""
from __future__ import annotations

import uuid

from roster.broker.partitions.topics import ROSTER_INTERNAL_TOPICS


class LiveTopics:
    """The broker's topic catalog as the consumer coordinator reads it (model.TopicImage)."""

    __slots__ = ("_topics",)

    def __init__(self, topics) -> None:
        self._topics = topics

    def lookup(self, name: str) -> tuple[bytes, int] | None:
        topic = self._topics.get(name)
        return None if topic is None else (topic.topic_id.bytes, len(topic.partitions))

    def name_of(self, topic_id: bytes) -> str | None:
        topic = self._topics.by_id(uuid.UUID(bytes=topic_id))
        return None if topic is None else topic.name

    def names(self):
        # Kafka resolves a regex against every topic, its internal ones included (4.4 assigns
        # __consumer_offsets to a member whose regex matches it); roster's own are not Kafka's
        return [t.name for t in self._topics if t.name not in ROSTER_INTERNAL_TOPICS]

    def version(self) -> int:
        return self._topics.version
