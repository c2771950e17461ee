"""The consumer's embedded protocol (ProtocolType "consumer"): the subscription a member sends
in JoinGroup and the assignment the leader hands out through SyncGroup.

Both use the classic (non-flexible) encoding whatever the JoinGroup/SyncGroup version, and start
with an int16 version. Fields are only ever appended, so a reader that meets a newer version
reads the fields it knows and ignores the rest.

  Subscription v0: topics[string], userData bytes?
               v1: + ownedPartitions[topic, partitions[int32]]   (KIP-429)
               v2: + generationId int32 = -1                     (KIP-792)
               v3: + rackId string?                               (KIP-881)
  Assignment v0-3: assignedPartitions[topic, partitions[int32]], userData bytes?
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

LATEST_VERSION = 3
TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]


class ConsumerProtocolError(ValueError):
    """Bytes that are not a consumer-protocol subscription or assignment."""


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = LATEST_VERSION


@dataclass(frozen=True, slots=True)
class Assignment:
    partitions: TopicPartitions = field(default_factory=tuple)
    user_data: bytes | None = None
    version: int = LATEST_VERSION


class _Out:
    def __init__(self, version: int) -> None:
        self.data = bytearray(struct.pack(">h", version))

    def int32(self, value: int) -> None:
        self.data += struct.pack(">i", value)

    def string(self, value: str | None) -> None:
        if value is None:
            self.data += struct.pack(">h", -1)
            return
        encoded = value.encode()
        self.data += struct.pack(">h", len(encoded)) + encoded

    def bytes_(self, value: bytes | None) -> None:
        if value is None:
            self.int32(-1)
            return
        self.int32(len(value))
        self.data += value

    def topic_partitions(self, value: TopicPartitions) -> None:
        self.int32(len(value))
        for topic, partitions in value:
            self.string(topic)
            self.int32(len(partitions))
            for partition in partitions:
                self.int32(partition)


class _In:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def _unpack(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self._data, self._pos)
        except struct.error:
            raise ConsumerProtocolError("ends early") from None
        self._pos += struct.calcsize(fmt)
        return value

    def at_end(self) -> bool:
        return self._pos >= len(self._data)

    def int16(self) -> int:
        return self._unpack(">h")

    def int32(self) -> int:
        return self._unpack(">i")

    def _take(self, size: int) -> bytes:
        if size < 0 or self._pos + size > len(self._data):
            raise ConsumerProtocolError("ends early")
        chunk = bytes(self._data[self._pos:self._pos + size])
        self._pos += size
        return chunk

    def string(self) -> str | None:
        size = self.int16()
        return None if size < 0 else self._take(size).decode("utf-8", "replace")

    def bytes_(self) -> bytes | None:
        size = self.int32()
        return None if size < 0 else self._take(size)

    def count(self) -> int:
        size = self.int32()
        if size < 0 or size > len(self._data):
            raise ConsumerProtocolError(f"implausible array size {size}")
        return size

    def topic_partitions(self) -> TopicPartitions:
        return tuple((self.string() or "", tuple(self.int32() for _ in range(self.count())))
                     for _ in range(self.count()))


def encode_subscription(subscription: Subscription) -> bytes:
    out = _Out(subscription.version)
    out.int32(len(subscription.topics))
    for topic in subscription.topics:
        out.string(topic)
    out.bytes_(subscription.user_data)
    if subscription.version >= 1:
        out.topic_partitions(subscription.owned_partitions)
    if subscription.version >= 2:
        out.int32(subscription.generation_id)
    if subscription.version >= 3:
        out.string(subscription.rack_id)
    return bytes(out.data)


def decode_subscription(data: bytes) -> Subscription:
    reader = _In(data)
    version = reader.int16()
    if version < 0:
        raise ConsumerProtocolError(f"negative subscription version {version}")
    topics = tuple(reader.string() or "" for _ in range(reader.count()))
    user_data = reader.bytes_()
    owned = reader.topic_partitions() if version >= 1 and not reader.at_end() else ()
    generation = reader.int32() if version >= 2 and not reader.at_end() else -1
    rack = reader.string() if version >= 3 and not reader.at_end() else None
    return Subscription(topics, user_data, owned, generation, rack, version)


def encode_assignment(assignment: Assignment) -> bytes:
    out = _Out(assignment.version)
    out.topic_partitions(assignment.partitions)
    out.bytes_(assignment.user_data)
    return bytes(out.data)


def decode_assignment(data: bytes) -> Assignment:
    if not data:
        return Assignment(version=0)
    reader = _In(data)
    version = reader.int16()
    if version < 0:
        raise ConsumerProtocolError(f"negative assignment version {version}")
    partitions = reader.topic_partitions()
    user_data = reader.bytes_() if not reader.at_end() else None
    return Assignment(partitions, user_data, version)
