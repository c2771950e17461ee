"""The topic catalog as the group coordinators read it: names, ids and partition counts, and
the catalog's version (the consumer and streams types' TopicImage), without the partitions'
logs."""
from __future__ import annotations

import uuid


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
        return [t.name for t in self._topics if not t.internal]

    def version(self) -> int:
        return self._topics.version


class DescribableTopics:
    """A catalog whose listing holds only the topics `may_describe(name)` allows: what a
    consumer group's regexes resolve against when the member whose heartbeat resolves them may
    not DESCRIBE every topic (Kafka 4.4, KAFKA-18813). Lookups by name or id are the whole
    catalog's: topics subscribed by name were admitted with the request, and the assignment
    reads the metadata of every member's topics."""

    __slots__ = ("_image", "_may_describe")

    def __init__(self, image, may_describe) -> None:
        self._image = image
        self._may_describe = may_describe

    def lookup(self, name: str) -> tuple[bytes, int] | None:
        return self._image.lookup(name)

    def name_of(self, topic_id: bytes) -> str | None:
        return self._image.name_of(topic_id)

    def names(self):
        return [name for name in self._image.names() if self._may_describe(name)]

    def version(self) -> int:
        return self._image.version()
