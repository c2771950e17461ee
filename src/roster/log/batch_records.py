"""The records inside a magic-v2 batch, as compaction reads and rewrites them.

Compaction must look at each record's offset, timestamp and key, and write back a batch holding
some of them without changing anything a consumer or a producer relies on. Kafka's cleaner
(MemoryRecords.filterTo) fixes what such a batch looks like, and so does this module:

  * the base offset, producer id, epoch, base sequence, partition leader epoch, codec,
    timestamp type and transactional/control bits stay; so does **lastOffsetDelta**, even when
    the batch's last records were removed, so the producer's last sequence number (base sequence
    + lastOffsetDelta) survives and an idempotent producer is never told it is out of sequence;
  * each surviving record keeps its offset delta, so offsets never change;
  * KIP-534: the first time a batch that keeps a tombstone is cleaned, its delete horizon
    (cleaning time + delete.retention.ms) is written into baseTimestamp and attribute bit 6 is
    set; the records' timestamp deltas are rewritten relative to it, so every record keeps its
    timestamp. A later pass removes the tombstones once the horizon has passed;
  * a batch none of whose records survives may still be kept as an *empty* batch (header only,
    recordsCount 0), when it carries a producer's last sequence or ends the cleaned range.

Records are copied byte for byte when the base timestamp does not change; compressed batches
are decompressed and recompressed with their own codec (kafka-python's codec functions, the
ones roster.record_codec's builder uses).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c
from kafka.codec import (
    gzip_decode,
    gzip_encode,
    lz4_decode,
    lz4_encode,
    snappy_decode,
    snappy_encode,
    zstd_decode,
    zstd_encode,
)

from roster.log.batch import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    CRC_COVERAGE_START,
    LENGTH_FIELD_END,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
)
from roster.protocol.varint import read_zigzag

DELETE_HORIZON_BIT = 0x40   # KIP-534: baseTimestamp holds the batch's delete horizon

_DECODE = {1: gzip_decode, 2: snappy_decode, 3: lz4_decode, 4: zstd_decode}
_ENCODE = {1: gzip_encode, 2: snappy_encode, 3: lz4_encode, 4: zstd_encode}
# the header after the CRC: attributes .. recordsCount
_TAIL = struct.Struct(">hiqqqhii")
_HEAD = struct.Struct(">qiibI")   # baseOffset, batchLength, leaderEpoch, magic, crc


@dataclass(slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    tombstone: bool
    start: int          # the record's bytes in the payload: [start, end)
    tail: int           # where its offsetDelta begins (after the timestamp delta)
    end: int


def has_delete_horizon(header: BatchHeader) -> bool:
    return bool(header.attributes & DELETE_HORIZON_BIT)


def payload(header: BatchHeader, batch) -> bytes:
    """The records section of `batch`, decompressed. Raises on a codec error."""
    body = batch[BATCH_HEADER_SIZE:header.size]
    codec = header.compression
    if codec == 0:
        return bytes(body)
    decode = _DECODE.get(codec)
    if decode is None:
        raise ValueError(f"unknown compression codec {codec}")
    return decode(bytes(body))


def records(header: BatchHeader, data: bytes) -> list[Record]:
    """Every record of the (decompressed) payload `data`. Raises ValueError/IndexError when a
    record runs past its length or the payload has bytes after the last record."""
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    log_append_time = header.attributes & TIMESTAMP_TYPE_BIT
    out = []
    pos = 0
    for _ in range(header.records_count):
        start = pos
        length, pos = read_zigzag(data, pos)
        end = pos + length
        timestamp_delta, tail = read_zigzag(data, pos + 1)
        offset_delta, pos = read_zigzag(data, tail)
        key_length, pos = read_zigzag(data, pos)
        if key_length >= 0:
            key = data[pos:pos + key_length]
            pos += key_length
        else:
            key = None
        value_length, pos = read_zigzag(data, pos)
        if length < 0 or pos + max(value_length, 0) > end or end > len(data):
            raise ValueError("a record runs past its length")
        timestamp = header.max_timestamp if log_append_time else base_timestamp + timestamp_delta
        out.append(Record(base_offset + offset_delta, timestamp, key, value_length < 0,
                          start, tail, end))
        pos = end
    if pos != len(data):
        raise ValueError(f"{len(data) - pos} bytes after the last record")
    return out


def rebuilt(header: BatchHeader, data: bytes, kept: list[Record],
            delete_horizon_ms: int | None) -> bytes:
    """A batch like `header`'s holding only `kept` (records of `data`, in order). With
    `delete_horizon_ms`, the batch gets that horizon (bit 6 set, baseTimestamp = horizon);
    without, it keeps the horizon it has, if any. With no record kept, an empty batch."""
    attributes = header.attributes
    base_timestamp = header.base_timestamp
    parts: list[bytes] = []
    if delete_horizon_ms is not None and kept:
        attributes |= DELETE_HORIZON_BIT
        base_timestamp = delete_horizon_ms
        for record in kept:
            # the timestamp delta is relative to baseTimestamp, which changes: re-encode it
            attribute_byte = data[record.start + _varint_size(data, record.start)]
            rest = data[record.tail:record.end]
            delta = (0 if header.attributes & TIMESTAMP_TYPE_BIT
                     else record.timestamp - base_timestamp)
            body = bytes((attribute_byte,)) + _zigzag(delta) + rest
            parts.append(_zigzag(len(body)) + body)
    else:
        parts = [data[record.start:record.end] for record in kept]
    if kept:
        max_timestamp = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_BIT \
            else max(record.timestamp for record in kept)
    else:
        max_timestamp = header.max_timestamp
        base_timestamp = header.max_timestamp if not has_delete_horizon(header) else base_timestamp
    body = b"".join(parts)
    codec = attributes & COMPRESSION_MASK
    if codec and kept:
        body = _ENCODE[codec](body)
    elif codec:
        attributes &= ~COMPRESSION_MASK  # an empty batch has no records to compress
    tail = _TAIL.pack(attributes, header.last_offset_delta, base_timestamp, max_timestamp,
                      header.producer_id, header.producer_epoch, header.base_sequence, len(kept))
    crc = crc32c.crc32c(body, crc32c.crc32c(tail))
    length = BATCH_HEADER_SIZE - LENGTH_FIELD_END + len(body)
    head = _HEAD.pack(header.base_offset, length, header.partition_leader_epoch, 2, crc)
    assert len(head) == CRC_COVERAGE_START
    return head + tail + body


def _varint_size(data: bytes, at: int) -> int:
    size = 1
    while data[at] & 0x80:
        at += 1
        size += 1
    return size


def _zigzag(value: int) -> bytes:
    encoded = (value << 1) ^ (value >> 63)
    out = bytearray()
    while encoded > 0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
    return bytes(out)
