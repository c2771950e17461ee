"""The old message formats, for the Fetch and Produce versions that carry them (Fetch v0-3,
Produce v0-2): message sets of magic 0 (Kafka 0.8-0.9) and magic 1 (0.10), converted from
and to the magic-2 record batches roster stores, as Kafka 3.9 did (its
RecordsUtil.downConvert and LazyDownConversionRecords on the way out, LogValidator on the
way in). It reads stored batches with the log's header parser and builds batches with the
record codec, so it sits above log/, beside record_validation.py (what Kafka's LogValidator
does to a magic-2 batch), not in the pure wire layer protocol/.

A message set is a sequence of messages, each `offset int64, size int32, crc uint32 (CRC-32 of
what follows), magic int8, attributes int8, [timestamp int64, magic 1], key bytes, value bytes`.
A compressed message ("wrapper") carries a whole compressed message set as its value: in magic 0
the inner messages have absolute offsets, in magic 1 relative ones (0, 1, ...) and the wrapper
has the absolute offset of the last. Magic 0 has no timestamps and no timestamp type; neither
format has headers, producer ids or control records.

Down-conversion (fetch), for each stored batch:
- control batches are skipped, as Kafka skips them for old fetchers;
- an uncompressed batch becomes one message per record at or after the fetch offset;
- a compressed batch (gzip, snappy, lz4) becomes one wrapper of the same codec holding all its
  records (an old consumer skips those before its offset, as with Kafka); lz4 in magic 0 uses
  the frame header checksum Kafka 0.8-0.9 computed (over the magic number too, KAFKA-3160),
  which kafka-python's codec writes;
- zstd has no old format: a fetch that meets a zstd batch first is answered
  UNSUPPORTED_COMPRESSION_TYPE, as Kafka answered it; one that meets it later stops before it;
  likewise a stored batch whose records do not decode (the log checks a batch's CRC, not its
  records) is answered CORRUPT_MESSAGE, or the answer stops before it;
- record headers are dropped; magic 0 drops timestamps; magic 1 keeps each record's timestamp
  (a LogAppendTime batch's append time), and a wrapper's timestamp is the largest inside, or a
  LogAppendTime batch's append time with the wrapper flagged LogAppendTime (a topic with
  message.timestamp.type=LogAppendTime stores such batches: broker/partitions/record_validation.py).
The result is held to `limit` bytes by whole messages, the first message always included (so a
consumer moves on past a message larger than its limits).

Up-conversion (produce): a v0/v1 message set is validated as LogValidator does (every message's
CRC, inner CRCs of a compressed one, one magic throughout, a compressed set is a single wrapper,
no nested compression, no zstd) and its records become one magic-2 batch with offset deltas 0..n-1
(the log assigns the offsets), compressed with the codec the producer used; the topic's configs
then apply as to any produced batch (broker/partitions/record_validation.py: compression.type,
LogAppendTime, ...). Timestamps: a v1 message keeps its own; a v0 message has none, and Kafka's
LogValidator under CreateTime stores it as NO_TIMESTAMP (-1), so roster does too.
"""
from __future__ import annotations

import struct
import zlib

from roster import record_codec   # loads the codec on first use
from roster.log.batch import parse_header
from roster.protocol.errors import ErrorCode

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08          # LogAppendTime, in magic 1 attributes and magic 2 batches
NO_TIMESTAMP = -1
LOG_OVERHEAD = 12                  # offset int64 + size int32
MAGIC_AT = 16                      # offset, size, crc (or v2's leader epoch), then magic
_ENTRY_HEAD = struct.Struct(">qi")
_CRC = struct.Struct(">I")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_WRAPPER = {0: struct.Struct(">bbii"), 1: struct.Struct(">bbqii")}  # magic..value length
_CRC_AND_REST = struct.Struct(">qiI")
# smallest message: crc, magic, attributes, key length, value length (+ timestamp in magic 1)
_MESSAGE_OVERHEAD = {0: 14, 1: 22}
_UNLIMITED = 0x7FFFFFFF


class FormatError(Exception):
    """A produced message set Kafka would refuse, with the error code Kafka answers."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


def magic_of(data) -> int | None:
    """The magic byte of the first entry of a message set or record-batch stream."""
    return data[MAGIC_AT] if len(data) > MAGIC_AT else None


def _codecs():
    """kafka-python's codecs, imported on the first compressed message set: importing
    `kafka.codec` runs kafka-python's package __init__ (its whole client), which was the largest
    single import of a broker's start, and only a compressed batch read or written in the old
    formats needs it."""
    from kafka import codec
    return codec


# -- down: stored magic-2 batches -> a message set a Fetch v0-3 reader can parse ----------------

def _compress(codec: int, magic: int, payload: bytes) -> bytes:
    codecs = _codecs()
    if codec == GZIP:
        return codecs.gzip_encode(payload, compresslevel=6)  # Kafka's default level
    if codec == SNAPPY:
        return codecs.snappy_encode(payload)
    if magic == 0:  # lz4 as Kafka 0.8/0.9 framed it
        return codecs.lz4_encode_old_kafka(payload)
    return codecs.lz4_encode(payload)


def _wrapper(magic: int, codec: int, records: list, log_append_time: int | None) -> bytes:
    """One compressed message holding `records` (of one stored batch)."""
    first = records[0].offset
    inner = record_codec.LegacyRecordBatchBuilder(magic, NONE, _UNLIMITED)
    max_timestamp = NO_TIMESTAMP
    for record in records:
        timestamp = record.timestamp
        inner.append(record.offset - first if magic == 1 else record.offset, timestamp,
                     record.key, record.value)
        if timestamp is not None and timestamp > max_timestamp:
            max_timestamp = timestamp
    value = _compress(codec, magic, bytes(inner.build()))
    if magic == 0:
        head = _WRAPPER[0].pack(0, codec, -1, len(value))
    elif log_append_time is not None:
        head = _WRAPPER[1].pack(1, codec | TIMESTAMP_TYPE_BIT, log_append_time, -1, len(value))
    else:
        head = _WRAPPER[1].pack(1, codec, max_timestamp, -1, len(value))
    crc = zlib.crc32(value, zlib.crc32(head))
    return _CRC_AND_REST.pack(records[-1].offset, 4 + len(head) + len(value), crc) + head + value


def down_convert(data, magic: int, fetch_offset: int, limit: int) -> tuple[bytes, ErrorCode]:
    """The magic-`magic` message set for the stored batches in `data` (whole batches, as
    PartitionLog.read returns them) from `fetch_offset` on, at most `limit` bytes of whole
    messages but never empty while there is something to convert; and the partition's error."""
    view = memoryview(data)
    out: list[bytes] = []
    size = 0
    position = 0
    end_of_data = len(view)
    while position < end_of_data:
        header = parse_header(view, position)
        batch_end = position + header.size
        if header.is_control:
            position = batch_end
            continue
        codec = header.compression
        if codec >= ZSTD:  # zstd (and codecs unknown to the old formats)
            if not out:
                return b"", ErrorCode.unsupported_compression_type
            break
        log_append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_BIT else None
        try:
            records = list(record_codec.DefaultRecordBatch(bytes(view[position:batch_end])))
        except Exception:  # noqa: BLE001 - the log checks a batch's CRC, not its records
            # A producer can store a batch whose CRC is right and whose records are not; v4+
            # readers get it as it is, an old reader cannot be given it converted.
            if not out:
                return b"", ErrorCode.corrupt_message
            break
        if codec == NONE:
            messages = record_codec.LegacyRecordBatchBuilder(magic, NONE, _UNLIMITED)
            full = False
            for record in records:
                offset = record.offset
                if offset < fetch_offset:
                    continue
                timestamp = log_append_time if log_append_time is not None else record.timestamp
                key, value = record.key, record.value
                needed = messages.size_in_bytes(offset, timestamp, key, value)
                if size + needed > limit and size:
                    full = True
                    break
                messages.append(offset, timestamp, key, value)
                size += needed
            if messages.size():
                out.append(bytes(messages.build()))
            if full:
                break
        elif records:
            wrapper = _wrapper(magic, codec, records, log_append_time)
            if size + len(wrapper) > limit and out:
                break
            out.append(wrapper)
            size += len(wrapper)
        if size >= limit:
            break
        position = batch_end
    return b"".join(out), ErrorCode.none


# -- up: a produced magic-0/1 message set -> one magic-2 batch ----------------------------------

def _messages(buffer, magic: int | None, what: str) -> list[tuple]:
    """(magic, attributes, timestamp, key, value) of each message of the message set `buffer`,
    every one checked as Kafka checks it: whole, a known magic (`magic` throughout, or the
    first's when None), key and value exactly filling it, and its CRC. FormatError otherwise."""
    found = []
    position = 0
    end = len(buffer)
    while position < end:
        if end - position <= MAGIC_AT:
            raise FormatError(ErrorCode.corrupt_message,
                              f"{what}: {end - position} bytes after the last message")
        _, size = _ENTRY_HEAD.unpack_from(buffer, position)
        this_magic = buffer[position + MAGIC_AT]
        if magic is None and this_magic in _MESSAGE_OVERHEAD:
            magic = this_magic
        if this_magic != magic:
            if this_magic in _MESSAGE_OVERHEAD:
                raise FormatError(ErrorCode.invalid_record,
                                  f"{what}: messages of magic {magic} and {this_magic}")
            raise FormatError(ErrorCode.corrupt_message, f"{what}: unknown magic {this_magic}")
        message_end = position + LOG_OVERHEAD + size
        if size < _MESSAGE_OVERHEAD[magic] or message_end > end:
            raise FormatError(ErrorCode.corrupt_message,
                              f"{what}: a message of size {size} does not fit")
        (crc,) = _CRC.unpack_from(buffer, position + LOG_OVERHEAD)
        if zlib.crc32(buffer[position + MAGIC_AT:message_end]) != crc:
            raise FormatError(ErrorCode.corrupt_message, f"{what}: a message fails its CRC")
        attributes = buffer[position + MAGIC_AT + 1]
        field = position + MAGIC_AT + 2
        timestamp = NO_TIMESTAMP
        if magic == 1:
            (timestamp,) = _INT64.unpack_from(buffer, field)
            field += 8
        key_and_value = []
        for _ in range(2):
            if field + 4 > message_end:
                raise FormatError(ErrorCode.corrupt_message,
                                  f"{what}: a message ends inside its key or value length")
            (length,) = _INT32.unpack_from(buffer, field)
            field += 4
            if length < -1 or field + max(length, 0) > message_end:
                raise FormatError(ErrorCode.corrupt_message,
                                  f"{what}: a key or value runs past its message")
            key_and_value.append(None if length == -1 else bytes(buffer[field:field + length]))
            field += max(length, 0)
        if field != message_end:
            raise FormatError(ErrorCode.corrupt_message, f"{what}: bytes after a message's value")
        found.append((magic, attributes, timestamp, *key_and_value))
        position = message_end
    return found


def _decompress(codec: int, magic: int, value: bytes | None) -> bytes:
    if value is None:
        raise FormatError(ErrorCode.corrupt_message, "a compressed message has a null value")
    codecs = _codecs()
    try:
        if codec == GZIP:
            return codecs.gzip_decode(value)
        if codec == SNAPPY:
            return codecs.snappy_decode(value)
        if magic == 0:
            return codecs.lz4_decode_old_kafka(value)
        return codecs.lz4_decode(value)
    except Exception as exc:  # noqa: BLE001 - whatever a codec raises on bad data
        raise FormatError(ErrorCode.corrupt_message,
                          f"cannot decompress the message set: {exc!r}") from None


def up_convert(data) -> bytes:
    """One magic-2 batch (offset deltas from 0, no producer id) holding the records of the
    magic-0/1 message set `data`. Raises FormatError as Kafka's LogValidator refuses."""
    outer = _messages(memoryview(data), None, "the message set")
    if not outer:
        raise FormatError(ErrorCode.invalid_record, "an empty message set")
    magic = outer[0][0]
    codecs_used = [attributes & CODEC_MASK for _, attributes, *_ in outer]
    if ZSTD in codecs_used:
        raise FormatError(ErrorCode.unsupported_compression_type,
                          f"zstd needs message format v2; this message set is magic {magic}")
    if any(c > ZSTD for c in codecs_used):
        raise FormatError(ErrorCode.corrupt_message,
                          f"unknown compression codec {max(codecs_used)}")
    compressed = [c for c in codecs_used if c != NONE]
    if compressed and len(outer) > 1:
        raise FormatError(ErrorCode.invalid_record,
                          "a compressed message set must be a single wrapper message")
    codec = compressed[0] if compressed else NONE
    records = outer
    if codec != NONE:
        _, attributes, wrapper_timestamp, _, value = outer[0]
        records = _messages(_decompress(codec, magic, value), magic,
                            "the compressed message set")
        if any(attributes & CODEC_MASK for _, attributes, *_ in records):
            raise FormatError(ErrorCode.invalid_record,
                              "a compressed message set holds a compressed message")
        if not records:
            raise FormatError(ErrorCode.invalid_record, "a compressed message holds no messages")
        if magic == 1 and attributes & TIMESTAMP_TYPE_BIT:  # inner messages take the wrapper's
            records = [(m, a, wrapper_timestamp, k, v) for m, a, _, k, v in records]
    batch = record_codec.DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=_UNLIMITED)
    for delta, (_, _, timestamp, key, value) in enumerate(records):
        batch.append(delta, timestamp=timestamp, key=key, value=value, headers=[])
    return bytes(batch.build())


__all__ = ["FormatError", "down_convert", "magic_of", "up_convert"]
