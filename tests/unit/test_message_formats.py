"""roster.broker.partitions.message_formats: the old message sets (magic 0/1) converted from and
to magic-2 batches. Message sets are built and read with kafka-python's pure-Python `kafka.record`, a codec
independent of the compiled one roster converts with."""
from __future__ import annotations

import struct
import zlib

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from roster.broker.partitions.message_formats import FormatError, down_convert, up_convert
from roster.protocol.errors import ErrorCode

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
TS = 1_700_000_000_000
UNLIMITED = 1 << 30


def message_set(magic, codec, values, first_offset=0):
    builder = LegacyRecordBatchBuilder(magic, codec, UNLIMITED)
    for i, (key, value, timestamp) in enumerate(values):
        builder.append(first_offset + i if codec else 0, timestamp, key, value)
    return bytes(builder.build())


def stored_batch(base_offset, codec, records, *, attributes_extra=0, max_timestamp=None):
    """A magic-2 batch as the log holds it: records are (offset delta, timestamp, key, value,
    headers)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=UNLIMITED)
    for delta, timestamp, key, value, headers in records:
        builder.append(delta, timestamp=timestamp, key=key, value=value, headers=headers)
    batch = bytearray(builder.build())
    struct.pack_into(">q", batch, 0, base_offset)
    if attributes_extra or max_timestamp is not None:
        (attributes,) = struct.unpack_from(">h", batch, 21)
        struct.pack_into(">h", batch, 21, attributes | attributes_extra)
        if max_timestamp is not None:
            struct.pack_into(">q", batch, 35, max_timestamp)
        struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def read_back(data):
    """[(wrapper or message: magic, codec, offset), [(offset, timestamp, key, value)]]."""
    out = []
    reader = MemoryRecords(data)
    while (batch := reader.next_batch()) is not None:
        assert isinstance(batch, LegacyRecordBatch) and batch.validate_crc()
        out.append(((batch.magic, batch.compression_type, batch.base_offset),
                    [(r.offset, r.timestamp, r.key, r.value) for r in batch]))
    return out


def values(count, tag="r"):
    return [(f"{tag}{i}".encode() if i % 3 else None, f"value-{i}".encode() * (i + 1), TS + i)
            for i in range(count)]


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4])
@pytest.mark.parametrize("magic", [0, 1])
def test_up_then_down_at_each_magic_keeps_keys_values_and_v1_timestamps(magic, codec):
    produced = values(6)
    batch = up_convert(message_set(magic, codec, produced))
    stored = DefaultRecordBatch(batch)
    assert stored.compression_type == codec
    expected_ts = [ts if magic == 1 else -1 for _, _, ts in produced]
    assert [(r.offset, r.timestamp, r.key, r.value) for r in stored] == \
        [(i, ts, k, v) for i, ((k, v, _), ts) in enumerate(zip(produced, expected_ts))]

    at_100 = struct.pack(">q", 100) + batch[8:]
    for to in (0, 1):
        data, error = down_convert(at_100, to, 100, UNLIMITED)
        assert error is ErrorCode.none
        entries = read_back(data)
        rows = [row for _, rows in entries for row in rows]
        assert rows == [(100 + i, ts if to == 1 else None, k, v)
                        for i, ((k, v, _), ts) in enumerate(zip(produced, expected_ts))]
        if codec == NONE:
            assert [head for head, _ in entries] == [(to, NONE, 100 + i) for i in range(6)]
        else:  # one wrapper with the last offset
            assert [head for head, _ in entries] == [(to, codec, 105)]


def test_compressed_batch_with_compaction_gaps_keeps_absolute_offsets():
    records = [(0, TS, b"a", b"1" * 500, []), (3, TS + 5, b"b", b"2" * 500, []),
               (7, TS + 2, b"c", b"3" * 500, [])]
    stored = stored_batch(50, GZIP, records)
    assert stored[22] & 7 == GZIP  # (kafka-python stores small batches uncompressed)
    for to in (0, 1):
        data, _ = down_convert(stored, to, 50, UNLIMITED)
        ((head, rows),) = read_back(data)
        assert head == (to, GZIP, 57)
        assert [r[0] for r in rows] == [50, 53, 57]
        if to == 1:  # the wrapper's timestamp: the largest inside
            (timestamp,) = struct.unpack_from(">q", data, 18)
            assert timestamp == TS + 5


def test_headers_are_dropped_and_log_append_time_carried_into_magic_1():
    records = [(0, TS, b"k", b"v" * 300, [("h", b"x")]), (1, TS + 1, b"k2", b"w" * 300, [])]
    plain = stored_batch(0, NONE, records)
    data, _ = down_convert(plain, 1, 0, UNLIMITED)
    assert [rows for _, rows in read_back(data)] == \
        [[(0, TS, b"k", b"v" * 300)], [(1, TS + 1, b"k2", b"w" * 300)]]
    appended = stored_batch(0, GZIP, records, attributes_extra=0x08, max_timestamp=TS + 99)
    data, _ = down_convert(appended, 1, 0, UNLIMITED)
    ((head, rows),) = read_back(data)
    assert data[17] == GZIP | 0x08  # the wrapper says LogAppendTime
    assert [r[1] for r in rows] == [TS + 99, TS + 99]


def test_control_batches_are_skipped_and_zstd_refused_first_or_stopped_before():
    control = stored_batch(0, NONE, [(0, TS, b"\0\0\0\0", b"", [])], attributes_extra=0x30)
    data_batch = stored_batch(1, NONE, [(0, TS, b"k", b"v", [])])
    zstd = stored_batch(2, ZSTD, [(0, TS, b"k", b"z" * 500, [])])
    assert zstd[22] & 7 == ZSTD
    data, error = down_convert(control + data_batch + zstd, 1, 0, UNLIMITED)
    assert error is ErrorCode.none
    assert [rows for _, rows in read_back(data)] == [[(1, TS, b"k", b"v")]]
    assert down_convert(zstd + data_batch, 1, 2, UNLIMITED) == \
        (b"", ErrorCode.unsupported_compression_type)


def test_limit_counts_whole_converted_messages_and_lets_the_first_through():
    stored = stored_batch(0, NONE, [(i, TS, None, b"x" * 100, []) for i in range(10)])
    one = 12 + 22 + 100  # offset+size, magic-1 overhead, value
    data, _ = down_convert(stored, 1, 0, 10)
    assert len(data) == one
    data, _ = down_convert(stored, 1, 3, 3 * one + one - 1)
    assert [rows[0][0] for _, rows in read_back(data)] == [3, 4, 5]
    data, _ = down_convert(stored, 0, 0, 3 * (one - 8))
    assert len(read_back(data)) == 3
    gz = stored_batch(10, GZIP, [(i, TS, None, b"y" * 100, []) for i in range(5)])
    assert gz[22] & 7 == GZIP
    data, _ = down_convert(stored + gz, 1, 9, one + 1)  # the wrapper does not fit after one
    assert [head for head, _ in read_back(data)] == [(1, NONE, 9)]


@pytest.mark.parametrize("name,data,error", [
    ("short", b"\0" * 10, ErrorCode.corrupt_message),
    ("unknown magic", struct.pack(">qiIbb", 0, 30, 0, 7, 0) + b"\0" * 24, ErrorCode.corrupt_message),
    ("zstd", None, ErrorCode.unsupported_compression_type),
    ("codec 6", None, ErrorCode.corrupt_message),
    ("mixed magic", None, ErrorCode.invalid_record),
    ("two wrappers", None, ErrorCode.invalid_record),
    ("negative inner size", None, ErrorCode.corrupt_message),
    ("nested compression", None, ErrorCode.invalid_record),
    ("null wrapper value", None, ErrorCode.corrupt_message),
    ("bad gzip", None, ErrorCode.corrupt_message),
])
def test_up_convert_refuses_as_kafka_does(name, data, error):
    if data is None:
        data = _bad_sets()[name]
    with pytest.raises(FormatError) as refused:
        up_convert(data)
    assert refused.value.error is error, str(refused.value)


def _message(magic, attributes, key, value, offset=0, timestamp=TS):
    body = struct.pack(">bb", magic, attributes) + (struct.pack(">q", timestamp) if magic else b"")
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


def _bad_sets():
    one = _message(1, 0, b"k", b"v")
    inner = _message(1, 0, b"k", b"v")
    broken_inner = bytearray(inner)
    struct.pack_into(">i", broken_inner, 8, -12)  # a size that would walk backwards forever
    import gzip
    return {
        "zstd": _message(1, ZSTD, None, b"whatever"),
        "codec 6": _message(1, 6, None, b"whatever"),
        "mixed magic": one + _message(0, 0, b"k", b"v"),
        "two wrappers": _message(1, GZIP, None, gzip.compress(inner)) * 2,
        "negative inner size": _message(1, GZIP, None, gzip.compress(bytes(broken_inner))),
        "nested compression": _message(1, GZIP, None, gzip.compress(
            _message(1, GZIP, None, gzip.compress(inner)))),
        "null wrapper value": _message(1, GZIP, None, None),
        "bad gzip": _message(1, GZIP, None, b"not gzip"),
    }


def test_a_v0_wrapper_keeps_no_timestamps_and_inner_offsets_are_ignored():
    # sarama below 0.10 leaves every inner offset at 0; Kafka reassigns them all
    import gzip
    inner = _message(0, 0, b"a", b"1") + _message(0, 0, b"b", b"2")
    batch = DefaultRecordBatch(up_convert(_message(0, GZIP, None, gzip.compress(inner))))
    assert [(r.offset, r.timestamp, r.key) for r in batch] == [(0, -1, b"a"), (1, -1, b"b")]


_VALID = [message_set(m, c, values(4)) for m in (0, 1) for c in (NONE, GZIP, SNAPPY, LZ4)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_VALID), st.data())
def test_mutated_message_sets_are_converted_or_refused_never_crash(valid, data):
    mutated = bytearray(valid)
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert", "size"]))
        if not mutated:
            break
        at = data.draw(st.integers(0, len(mutated) - 1))
        if kind == "flip":
            mutated[at] ^= data.draw(st.integers(1, 255))
        elif kind == "cut":
            del mutated[at:]
        elif kind == "insert":
            mutated[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        else:
            mutated[at:at + 4] = struct.pack(">i", data.draw(st.integers(-(2**31), 2**31 - 1)))
    try:
        converted = up_convert(bytes(mutated))
    except FormatError:
        return
    assert DefaultRecordBatch(converted).validate_crc()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 1), st.sampled_from([NONE, GZIP]),
       st.lists(st.tuples(st.integers(-3, 40), st.integers(-3, 40), st.binary(max_size=40)),
                min_size=1, max_size=4))
def test_crafted_messages_with_valid_crcs_but_wrong_lengths_never_crash(magic, codec, fields):
    """Messages whose CRC is right but whose key/value lengths lie (the CRC cannot catch it)."""
    messages = b""
    for key_length, value_length, payload in fields:
        body = struct.pack(">bb", magic, 0) + (struct.pack(">q", TS) if magic else b"")
        body += struct.pack(">i", key_length) + payload + struct.pack(">i", value_length) + payload
        messages += struct.pack(">qiI", 0, 4 + len(body), zlib.crc32(body)) + body
    if codec == GZIP:
        import gzip
        messages = _message(magic, GZIP, None, gzip.compress(messages))
    try:
        up_convert(messages)
    except FormatError:
        pass


def test_a_stored_batch_whose_records_do_not_decode_is_refused_or_stopped_before():
    """The log checks a batch's CRC, not its records: a producer can store records the codec
    cannot read. A v4+ reader gets them as they are; an old one gets CORRUPT_MESSAGE."""
    good = stored_batch(0, NONE, [(0, TS, b"k", b"v", [])])
    bad = bytearray(stored_batch(1, NONE, [(0, TS, b"k", b"v" * 50, [])]))
    bad[61] = 0x7F  # the first record's length varint: far more than the batch holds
    struct.pack_into(">I", bad, 17, crc32c.crc32c(bytes(bad[21:])))
    assert down_convert(bytes(bad) + good, 1, 1, UNLIMITED) == (b"", ErrorCode.corrupt_message)
    data, error = down_convert(good + bytes(bad), 1, 0, UNLIMITED)
    assert error is ErrorCode.none
    assert [rows for _, rows in read_back(data)] == [[(0, TS, b"k", b"v")]]


_STORED = [stored_batch(0, codec, [(i, TS + i, b"key", b"value %d " % i * 40, [("h", b"x")])
                                   for i in range(5)])
           for codec in (NONE, GZIP, SNAPPY, LZ4)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_STORED), st.data(), st.integers(0, 1))
def test_stored_batches_with_any_records_convert_or_are_refused_never_crash(batch, data, magic):
    """Whatever a producer stored under a right CRC (the records count included), conversion
    answers: message sets or an error code, never an exception."""
    mutated = bytearray(batch)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(57, len(mutated) - 1))
        mutated[at] ^= data.draw(st.integers(1, 255))
    struct.pack_into(">I", mutated, 17, crc32c.crc32c(bytes(mutated[21:])))
    converted, error = down_convert(bytes(mutated), magic, 0, UNLIMITED)
    assert error in (ErrorCode.none, ErrorCode.corrupt_message)
    if converted:
        read_back(converted)
