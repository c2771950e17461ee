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

Records are decoded and re-encoded by roster.record_codec's compiled codec (aiokafka's; a
Python walk over every record is about 15 times slower, and the cleaner reads every record of the
log twice), the header fields it does not know (lastOffsetDelta, the timestamp type, the leader
epoch) patched in afterwards. Batches with a delete horizon, whose records' timestamp deltas must
be relative to it, go through `records` and `rebuilt` here instead, which copy each record's
bytes and re-encode only its timestamp delta; compressed ones are decompressed and recompressed
with their own codec (kafka-python's codec functions).
"""
from __future__ import annotations

import struct
from functools import cache

from roster import record_codec   # loads the codec and crc32c on first use
from roster.log.batch import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    CRC_COVERAGE_START,
    LENGTH_FIELD_END,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
)
from roster.protocol.varint import encode_zigzag, read_zigzag

DELETE_HORIZON_BIT = 0x40   # KIP-534: baseTimestamp holds the batch's delete horizon

_CODECS = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@cache
def _codec(codec: int, direction: str):
    """kafka-python's codec function, imported on the first compressed batch: importing
    kafka.codec runs kafka-python's package __init__ (its whole client), which cost a
    broker's start about a third of its import time when done at module level."""
    from kafka import codec as codecs
    return getattr(codecs, f"{_CODECS[codec]}_{direction}")
# the header after the CRC: attributes .. recordsCount
_TAIL = struct.Struct(">hiqqqhii")
_HEAD = struct.Struct(">qiibI")   # baseOffset, batchLength, leaderEpoch, magic, crc
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_UINT32 = struct.Struct(">I")
_LEADER_EPOCH_AT, _CRC_AT, _ATTRIBUTES_AT, _LAST_OFFSET_DELTA_AT = 12, 17, 21, 23
_KEPT_ATTRIBUTES = ~COMPRESSION_MASK   # the builder sets the codec; everything else is copied


# A record, as `records` returns it: a tuple (cheaper to build than an object, and the cleaner
# builds one per record it reads) with these fields:
OFFSET, TIMESTAMP, KEY, TOMBSTONE, START, TAIL, END = range(7)
# START..END are the record's bytes in the payload; TAIL is where its offsetDelta begins (after
# the timestamp delta, which is what a new baseTimestamp changes).


def has_delete_horizon(header: BatchHeader) -> bool:
    return bool(header.attributes & DELETE_HORIZON_BIT)


def payload(header: BatchHeader, batch) -> bytes:
    """The records section of `batch`, decompressed. Raises on a codec error."""
    body = batch[BATCH_HEADER_SIZE:header.size]
    codec = header.compression
    if codec == 0:
        return bytes(body)
    if codec not in _CODECS:
        raise ValueError(f"unknown compression codec {codec}")
    return _codec(codec, "decode")(bytes(body))


def records(header: BatchHeader, data: bytes) -> list[tuple]:
    """(offset, timestamp, key, is tombstone, start, tail, end) of every record of the
    (decompressed) payload `data`. Raises ValueError/IndexError when a record runs past its
    length or the payload has bytes after the last record. (Only batches with a delete horizon
    are walked here; the others go through the compiled codec.)"""
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    fixed_timestamp = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_BIT else None
    out = []
    pos = 0
    for _ in range(header.records_count):
        start = pos
        length, pos = read_zigzag(data, pos)
        end = pos + length
        timestamp_delta, tail = read_zigzag(data, pos + 1)   # after the attributes byte
        offset_delta, pos = read_zigzag(data, tail)
        key_length, pos = read_zigzag(data, pos)
        key = data[pos:pos + key_length] if key_length >= 0 else None
        pos += max(key_length, 0)
        value_length, pos = read_zigzag(data, pos)
        if length < 0 or end > len(data) or pos + max(value_length, 0) > end:
            raise ValueError("a record runs past its length")
        out.append((base_offset + offset_delta,
                    base_timestamp + timestamp_delta if fixed_timestamp is None
                    else fixed_timestamp, key, value_length < 0, start, tail, end))
        pos = end
    if pos != len(data):
        raise ValueError(f"{len(data) - pos} bytes after the last record")
    return out


def rebuilt(header: BatchHeader, data: bytes, kept: list[tuple],
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
            attributes_at = read_zigzag(data, record[START])[1]   # after the length
            delta = (0 if header.attributes & TIMESTAMP_TYPE_BIT
                     else record[TIMESTAMP] - base_timestamp)
            body = data[attributes_at:attributes_at + 1] + encode_zigzag(delta) + \
                data[record[TAIL]:record[END]]
            parts.append(encode_zigzag(len(body)) + body)
    else:
        parts = [data[record[START]:record[END]] for record in kept]
    if kept:
        max_timestamp = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_BIT \
            else max(record[TIMESTAMP] for record in kept)
    else:
        max_timestamp = header.max_timestamp
        base_timestamp = header.max_timestamp if not has_delete_horizon(header) else base_timestamp
    body = b"".join(parts)
    codec = attributes & COMPRESSION_MASK
    if codec and kept:
        body = _codec(codec, "encode")(body)
    elif codec:
        attributes &= ~COMPRESSION_MASK  # an empty batch has no records to compress
    tail = _TAIL.pack(attributes, header.last_offset_delta, base_timestamp, max_timestamp,
                      header.producer_id, header.producer_epoch, header.base_sequence, len(kept))
    crc = record_codec.crc32c(body, record_codec.crc32c(tail))
    length = BATCH_HEADER_SIZE - LENGTH_FIELD_END + len(body)
    head = _HEAD.pack(header.base_offset, length, header.partition_leader_epoch, 2, crc)
    assert len(head) == CRC_COVERAGE_START
    return head + tail + body


def decoded(batch) -> list:
    """The batch's records as roster.record_codec's record objects (offset, timestamp, key,
    value, headers). Raises on a codec error or damaged records."""
    return list(record_codec.DefaultRecordBatch(batch))


def rebuilt_from(header: BatchHeader, kept: list) -> bytes:
    """A batch like `header`'s (no delete horizon) holding the decoded records `kept`, each at
    its own offset delta and timestamp, encoded by the compiled codec; base offset, leader
    epoch, attributes other than the codec, producer fields and lastOffsetDelta as `header`
    has them. `kept` must not be empty (an empty batch comes from `rebuilt`)."""
    builder = record_codec.DefaultRecordBatchBuilder(
        magic=2, compression_type=header.compression, is_transactional=header.is_transactional,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence, batch_size=1 << 62)
    base = header.base_offset
    for record in kept:
        builder.append(record.offset - base, timestamp=record.timestamp, key=record.key,
                       value=record.value, headers=record.headers)
    out = bytearray(builder.build())
    _INT64_BASE.pack_into(out, 0, base)
    _INT32.pack_into(out, _LEADER_EPOCH_AT, header.partition_leader_epoch)
    attributes = (header.attributes & _KEPT_ATTRIBUTES) | \
        (_INT16.unpack_from(out, _ATTRIBUTES_AT)[0] & COMPRESSION_MASK)
    _INT16.pack_into(out, _ATTRIBUTES_AT, attributes)
    _INT32.pack_into(out, _LAST_OFFSET_DELTA_AT, header.last_offset_delta)
    if header.attributes & TIMESTAMP_TYPE_BIT:  # LogAppendTime: the batch's time stays
        _INT64_BASE.pack_into(out, 35, header.max_timestamp)
    _UINT32.pack_into(out, _CRC_AT, record_codec.crc32c(memoryview(out)[CRC_COVERAGE_START:]))
    return bytes(out)


_INT64_BASE = struct.Struct(">q")
