"""__transaction_state records in Kafka's layout (TransactionLogKey / TransactionLogValue), so
a Kafka tool reading the topic, or a broker replaying it, sees what Kafka writes.

Key: version int16 (0), transactional id (int16-length string). Value: version int16, then v0
(classic encoding) or v1 (flexible: compact arrays/strings and tagged fields 0
PreviousProducerId, 1 NextProducerId, 2 ClientTransactionVersion). roster writes v1, as Kafka 4
does, and reads both. A null value is a tombstone: the transactional id expired.
"""
from __future__ import annotations

import struct

from roster.frozen import frozen
from roster.protocol.varint import encode_unsigned, read_unsigned
from roster.transactions.state import NO_PRODUCER_ID, TxnMetadata, TxnState

KEY_VERSION = 0
VALUE_VERSION = 1
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_HEAD = struct.Struct(">qhib")       # producer id, epoch, timeout, status
_TIMES = struct.Struct(">qq")        # last update, start


class TxnRecordError(ValueError):
    """A __transaction_state record roster cannot read."""


@frozen
class TxnRecord:
    transactional_id: str
    metadata: TxnMetadata | None      # None: tombstone

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self.transactional_id), (
            None if self.metadata is None else encode_value(self.metadata))


def encode_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode()
    return _I16.pack(KEY_VERSION) + _I16.pack(len(raw)) + raw


def encode_value(m: TxnMetadata) -> bytes:
    out = bytearray(_I16.pack(VALUE_VERSION))
    out += _HEAD.pack(m.producer_id, m.producer_epoch, m.timeout_ms, int(m.state))
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(m.partitions):
        by_topic.setdefault(topic, []).append(partition)
    out += encode_unsigned(len(by_topic) + 1)
    for topic, partitions in by_topic.items():
        name = topic.encode()
        out += encode_unsigned(len(name) + 1) + name
        out += encode_unsigned(len(partitions) + 1)
        out += b"".join(_I32.pack(p) for p in partitions)
        out += encode_unsigned(0)                      # the entry's tagged fields
    out += _TIMES.pack(m.last_update_ms, m.start_ms)
    tags = []
    if m.previous_producer_id != NO_PRODUCER_ID:
        tags.append((0, _I64.pack(m.previous_producer_id)))
    if m.next_producer_id != NO_PRODUCER_ID:
        tags.append((1, _I64.pack(m.next_producer_id)))
    if m.client_transaction_version != 0:
        tags.append((2, _I16.pack(m.client_transaction_version)))
    out += encode_unsigned(len(tags))
    for tag, data in tags:
        out += encode_unsigned(tag) + encode_unsigned(len(data)) + data
    return bytes(out)


def decode(key: bytes, value: bytes | None) -> TxnRecord:
    try:
        return _decode(key, value)
    except (struct.error, IndexError, UnicodeDecodeError, ValueError) as exc:
        raise TxnRecordError(f"unreadable __transaction_state record: {exc}") from exc


def _decode(key: bytes, value: bytes | None) -> TxnRecord:
    (version,) = _I16.unpack_from(key, 0)
    if version != KEY_VERSION:
        raise TxnRecordError(f"unknown key version {version}")
    (length,) = _I16.unpack_from(key, 2)
    transactional_id = key[4:4 + length].decode()
    if value is None:
        return TxnRecord(transactional_id, None)
    (version,) = _I16.unpack_from(value, 0)
    if version not in (0, 1):
        raise TxnRecordError(f"unknown value version {version}")
    flexible = version == 1
    producer_id, epoch, timeout_ms, status = _HEAD.unpack_from(value, 2)
    at = 2 + _HEAD.size
    partitions = set()
    count, at = _length(value, at, flexible)
    for _ in range(max(count, 0)):
        size, at = _length(value, at, flexible, string=True)
        topic = value[at:at + size].decode()
        at += size
        n, at = _length(value, at, flexible)
        for _ in range(n):
            partitions.add((topic, _I32.unpack_from(value, at)[0]))
            at += 4
        if flexible:
            at = _skip_tags(value, at)
    last_update_ms, start_ms = _TIMES.unpack_from(value, at)
    at += _TIMES.size
    tagged = {}
    if flexible:
        n, at = read_unsigned(value, at)
        for _ in range(n):
            tag, at = read_unsigned(value, at)
            size, at = read_unsigned(value, at)
            tagged[tag] = value[at:at + size]
            at += size
    return TxnRecord(transactional_id, TxnMetadata(
        transactional_id, producer_id, epoch, timeout_ms, TxnState(status),
        frozenset(partitions), start_ms, last_update_ms,
        previous_producer_id=_I64.unpack(tagged[0])[0] if 0 in tagged else NO_PRODUCER_ID,
        next_producer_id=_I64.unpack(tagged[1])[0] if 1 in tagged else NO_PRODUCER_ID,
        client_transaction_version=_I16.unpack(tagged[2])[0] if 2 in tagged else 0))


def _length(data: bytes, at: int, flexible: bool, string: bool = False) -> tuple[int, int]:
    """An array's (or string's) length: compact (uvarint, +1) or classic (int32 / int16)."""
    if flexible:
        raw, at = read_unsigned(data, at)
        return raw - 1, at
    if string:
        return _I16.unpack_from(data, at)[0], at + 2
    return _I32.unpack_from(data, at)[0], at + 4


def _skip_tags(data: bytes, at: int) -> int:
    n, at = read_unsigned(data, at)
    for _ in range(n):
        _, at = read_unsigned(data, at)
        size, at = read_unsigned(data, at)
        at += size
    return at
