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
from dataclasses import field

from roster.frozen import frozen
from roster.protocol.classic_encoding import ClassicReader, ClassicWriter

LATEST_VERSION = 3
TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]


class ConsumerProtocolError(ValueError):
    """Bytes that are not a consumer-protocol subscription or assignment."""


@frozen
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = LATEST_VERSION


@frozen
class Assignment:
    partitions: TopicPartitions = field(default_factory=tuple)
    user_data: bytes | None = None
    version: int = LATEST_VERSION


def _write_topic_partitions(out: ClassicWriter, value: TopicPartitions) -> None:
    out.int32(len(value))
    for topic, partitions in value:
        out.string(topic)
        out.int32(len(partitions))
        for partition in partitions:
            out.int32(partition)


def _read_topic_partitions(reader: ClassicReader) -> TopicPartitions:
    return tuple((reader.string() or "", tuple(reader.int32() for _ in range(reader.count())))
                 for _ in range(reader.count()))


def _reader(data: bytes) -> ClassicReader:
    return ClassicReader(data, ConsumerProtocolError, lenient_text=True)


def encode_subscription(subscription: Subscription) -> bytes:
    out = ClassicWriter().int16(subscription.version)
    out.int32(len(subscription.topics))
    for topic in subscription.topics:
        out.string(topic)
    out.bytes_(subscription.user_data)
    if subscription.version >= 1:
        _write_topic_partitions(out, subscription.owned_partitions)
    if subscription.version >= 2:
        out.int32(subscription.generation_id)
    if subscription.version >= 3:
        out.string(subscription.rack_id)
    return bytes(out.out)


def decode_subscription(data: bytes) -> Subscription:
    reader = _reader(data)
    version = reader.int16()
    if version < 0:
        raise ConsumerProtocolError(f"negative subscription version {version}")
    topics = tuple(reader.string() or "" for _ in range(reader.count()))
    user_data = reader.bytes_()
    owned = _read_topic_partitions(reader) if version >= 1 and not reader.at_end() else ()
    generation = reader.int32() if version >= 2 and not reader.at_end() else -1
    rack = reader.string() if version >= 3 and not reader.at_end() else None
    return Subscription(topics, user_data, owned, generation, rack, version)


def encode_assignment(assignment: Assignment) -> bytes:
    out = ClassicWriter().int16(assignment.version)
    _write_topic_partitions(out, assignment.partitions)
    out.bytes_(assignment.user_data)
    return bytes(out.out)


def decode_assignment(data: bytes) -> Assignment:
    if not data:
        return Assignment(version=0)
    plain = _decode_plain_assignment(data)
    if plain is not None:
        return plain
    reader = _reader(data)
    version = reader.int16()
    if version < 0:
        raise ConsumerProtocolError(f"negative assignment version {version}")
    partitions = _read_topic_partitions(reader)
    user_data = reader.bytes_() if not reader.at_end() else None
    return Assignment(partitions, user_data, version)


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def _decode_plain_assignment(data: bytes) -> Assignment | None:
    """decode_assignment() of a well-formed assignment with UTF-8 topic names, read with
    struct alone (a ClassicReader costs ~4 us for a one-partition assignment, and the flight
    recorder reads every member's once per generation); None for anything else (nulls, bad
    text, counts past the end, a negative version), which the reader then decodes or refuses
    as it always has."""
    try:
        (version,) = _INT16.unpack_from(data, 0)
        (topic_count,) = _INT32.unpack_from(data, 2)
        at, size = 6, len(data)
        if version < 0 or topic_count < 0 or topic_count > size - at:
            return None
        topics = []
        for _ in range(topic_count):
            (length,) = _INT16.unpack_from(data, at)
            at += 2
            if length < 0 or at + length > size:
                return None
            topic = str(data[at:at + length], "utf-8")
            at += length
            (count,) = _INT32.unpack_from(data, at)
            at += 4
            if count < 0 or at + 4 * count > size:
                return None
            topics.append((topic, struct.unpack_from(f">{count}i", data, at)))
            at += 4 * count
        user_data = None
        if at < size:
            (length,) = _INT32.unpack_from(data, at)
            at += 4
            if length >= 0:
                if at + length > size:
                    return None
                user_data = bytes(data[at:at + length])
    except (struct.error, UnicodeDecodeError):
        return None
    return Assignment(tuple(topics), user_data, version)
