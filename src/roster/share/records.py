"""__share_group_state records in Kafka's layout (read off kafka-share-coordinator 4.4.0's
ShareSnapshotKey/Value and ShareUpdateKey/Value schemas), so the topic reads as Kafka's share
coordinator writes it.

Key: int16 record type (0 ShareSnapshot, 1 ShareUpdate), then (not flexible) GroupId string
(int16 length), TopicId uuid (16 bytes), Partition int32. A null value is a tombstone.
Value: int16 version (0), then flexible fields:
  ShareSnapshotValue: SnapshotEpoch int32, StateEpoch int32, LeaderEpoch int32, StartOffset
  int64, CreateTimestamp int64, WriteTimestamp int64, StateBatches[], tagged 0
  DeliveryCompleteCount int32 (default -1);
  ShareUpdateValue: SnapshotEpoch int32, LeaderEpoch int32, StartOffset int64 (-1: unchanged),
  StateBatches[], tagged 0 DeliveryCompleteCount;
  StateBatch: FirstOffset int64, LastOffset int64, DeliveryState int8 (0 available,
  2 acknowledged, 4 archived), DeliveryCount int16, its own (empty) tagged fields.

A snapshot holds a share partition's whole state; an update what one write changed, merged over
the snapshot before it on replay (Kafka's ShareCoordinatorShard does the same).
"""
from __future__ import annotations

import struct
from dataclasses import field

from roster.frozen import frozen
from roster.protocol.varint import encode_unsigned, read_unsigned
from roster.share.partition import StateBatch
from roster.share.states import RecordState

SNAPSHOT, UPDATE = 0, 1
VALUE_VERSION = 0
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_BATCH = struct.Struct(">qqbh")


class ShareRecordError(ValueError):
    """A __share_group_state record roster cannot read."""


@frozen
class ShareRecord:
    """One record: `kind` SNAPSHOT or UPDATE; `topic_id` is anything with 16 `.bytes` (a
    uuid.UUID at the edge) or the 16 bytes themselves (as decoded); `tombstone`: the key's
    state is gone (the group or its offsets were deleted)."""
    kind: int
    group_id: str
    topic_id: object
    partition: int
    start_offset: int = -1
    batches: tuple[StateBatch, ...] = ()
    snapshot_epoch: int = 0
    state_epoch: int = 0
    leader_epoch: int = 0
    create_ms: int = 0
    write_ms: int = 0
    delivery_complete_count: int = -1
    tombstone: bool = False
    extra: dict = field(default_factory=dict, compare=False)

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self), None if self.tombstone else encode_value(self)


def _topic_bytes(topic_id) -> bytes:
    raw = topic_id if isinstance(topic_id, (bytes, bytearray)) else topic_id.bytes
    if len(raw) != 16:
        raise ValueError("a topic id is 16 bytes")
    return bytes(raw)


def encode_key(record: ShareRecord) -> bytes:
    group = record.group_id.encode()
    return (_I16.pack(record.kind) + _I16.pack(len(group)) + group
            + _topic_bytes(record.topic_id) + _I32.pack(record.partition))


def encode_value(record: ShareRecord) -> bytes:
    out = bytearray(_I16.pack(VALUE_VERSION))
    if record.kind == SNAPSHOT:
        out += _I32.pack(record.snapshot_epoch) + _I32.pack(record.state_epoch)
        out += _I32.pack(record.leader_epoch) + _I64.pack(record.start_offset)
        out += _I64.pack(record.create_ms) + _I64.pack(record.write_ms)
    else:
        out += _I32.pack(record.snapshot_epoch) + _I32.pack(record.leader_epoch)
        out += _I64.pack(record.start_offset)
    out += encode_unsigned(len(record.batches) + 1)
    for batch in record.batches:
        out += _BATCH.pack(batch.first_offset, batch.last_offset, int(batch.state),
                           batch.delivery_count)
        out += encode_unsigned(0)
    if record.delivery_complete_count != -1:
        out += encode_unsigned(1) + encode_unsigned(0) + encode_unsigned(4)
        out += _I32.pack(record.delivery_complete_count)
    else:
        out += encode_unsigned(0)
    return bytes(out)


def decode(key: bytes, value: bytes | None) -> ShareRecord:
    try:
        return _decode(key, value)
    except (struct.error, IndexError, UnicodeDecodeError, ValueError) as exc:
        raise ShareRecordError(f"unreadable __share_group_state record: {exc}") from exc


def _decode(key: bytes, value: bytes | None) -> ShareRecord:
    (kind,) = _I16.unpack_from(key, 0)
    if kind not in (SNAPSHOT, UPDATE):
        raise ValueError(f"record type {kind}")
    (length,) = _I16.unpack_from(key, 2)
    group = key[4:4 + length].decode()
    pos = 4 + length
    topic_id = key[pos:pos + 16]
    (partition,) = _I32.unpack_from(key, pos + 16)
    if len(topic_id) != 16:
        raise ValueError("short key")
    if value is None:
        return ShareRecord(kind, group, topic_id, partition, tombstone=True)
    (version,) = _I16.unpack_from(value, 0)
    if version != VALUE_VERSION:
        raise ValueError(f"value version {version}")
    pos = 2
    fields: dict = {}
    if kind == SNAPSHOT:
        (fields["snapshot_epoch"], fields["state_epoch"], fields["leader_epoch"]) = \
            struct.unpack_from(">iii", value, pos)
        pos += 12
        (fields["start_offset"], fields["create_ms"], fields["write_ms"]) = \
            struct.unpack_from(">qqq", value, pos)
        pos += 24
    else:
        (fields["snapshot_epoch"], fields["leader_epoch"], fields["start_offset"]) = \
            struct.unpack_from(">iiq", value, pos)
        pos += 16
    count, pos = read_unsigned(value, pos)
    batches = []
    for _ in range(count - 1):
        first, last, state, delivered = _BATCH.unpack_from(value, pos)
        pos += _BATCH.size
        pos = _skip_tags(value, pos)
        batches.append(StateBatch(first, last, RecordState(state), delivered))
    tags, pos = read_unsigned(value, pos)
    for _ in range(tags):
        tag, pos = read_unsigned(value, pos)
        size, pos = read_unsigned(value, pos)
        if tag == 0:
            (fields["delivery_complete_count"],) = _I32.unpack_from(value, pos)
        pos += size
    return ShareRecord(kind, group, topic_id, partition, batches=tuple(batches), **fields)


def _skip_tags(data: bytes, pos: int) -> int:
    tags, pos = read_unsigned(data, pos)
    for _ in range(tags):
        _, pos = read_unsigned(data, pos)
        size, pos = read_unsigned(data, pos)
        pos += size
    return pos
