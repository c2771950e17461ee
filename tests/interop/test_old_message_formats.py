"""Fetch v0-3 and Produce v0-2 over a raw socket: the versions that carry the old message formats
(magic 0 and 1), which Kafka 4.0 dropped and roster serves as Kafka 3.9 did, by converting to and
from the magic-2 batches it stores.

Message sets are built and read here with kafka-python's `kafka.record` (pure Python), not with
the compiled aiokafka codec roster converts with; requests and answers go through roster's classic
codec (roster.protocol.classic).
"""
from __future__ import annotations

import datetime
import itertools
import struct
import time
import zlib

import pytest
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from roster.protocol import classic
from roster.protocol.build import element
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode
from tests.interop.test_bad_input import _create
from tests.support import clients
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("old-versions")]

PRODUCE, FETCH = 0, 1
NONE, GZIP, SNAPPY, LZ4 = 0, 1, 2, 3
CODECS = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4"}
BASE_TS = 1_700_000_000_000
_ids = itertools.count(5000)


def call(wire: Wire, api_key: int, version: int, **body):
    correlation_id = next(_ids)
    wire.send_raw(classic.encode_request(api_key, version, correlation_id, "old-client", body))
    got, answer = classic.decode_response(api_key, version, wire.read_frame())
    assert got == correlation_id
    return answer


def message_set(magic: int, codec: int, values: list[tuple[bytes | None, bytes | None, int]]) -> bytes:
    """A message set as an old producer builds it: inner offsets 0..n-1 (the broker assigns)."""
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 30)
    for i, (key, value, timestamp) in enumerate(values):
        builder.append(i if codec else 0, timestamp, key, value)
    return bytes(builder.build())


def produce(wire, version, topic, partition, records, acks=1):
    answer = call(wire, PRODUCE, version, acks=acks, timeout=5000, topic_data=[
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}])
    (part,) = answer.responses[0].partition_responses
    return part


def fetch(wire, version, wanted, max_wait_ms=0, min_bytes=0, max_bytes=0x7FFFFFFF):
    """wanted: {(topic, partition): (offset, partition max bytes)} -> {(topic, partition):
    (error, high watermark, records)}."""
    topics: dict[str, list] = {}
    for (topic, partition), (offset, limit) in wanted.items():
        topics.setdefault(topic, []).append(
            {"partition": partition, "fetch_offset": offset, "partition_max_bytes": limit})
    answer = call(wire, FETCH, version, replica_id=-1, max_wait=max_wait_ms, min_bytes=min_bytes,
                  max_bytes=max_bytes, topics=[{"topic": t, "partitions": p}
                                               for t, p in topics.items()])
    return {(t.topic, p.partition_index): (p.error_code, p.high_watermark, p.records)
            for t in answer.responses for p in t.partitions}


def entries(records: bytes) -> list[LegacyRecordBatch]:
    """The messages (compressed wrappers whole) of a fetched message set, by kafka-python."""
    found = []
    reader = MemoryRecords(records)
    while (batch := reader.next_batch()) is not None:
        assert isinstance(batch, LegacyRecordBatch), type(batch)
        assert batch.validate_crc()
        found.append(batch)
    return found


def decoded(records: bytes, magic: int) -> list[tuple[int, bytes | None, bytes | None, int | None]]:
    rows = []
    for batch in entries(records):
        assert batch.magic == magic
        rows += [(r.offset, r.key, r.value, r.timestamp) for r in batch]
    return rows


def _values(tag: str, count: int) -> list[tuple[bytes, bytes, int]]:
    return [(f"{tag}-k{i}".encode(), f"{tag}-v{i}-".encode() + b"x" * (i * 37 % 200),
             BASE_TS + i * 1000) for i in range(count)]


def test_produce_v0_v1_v2_message_sets_fetch_back_at_every_old_and_new_version(broker):
    """Each codec, produced as an old producer does (v0 and v1 with magic 0, v2 with magic 1),
    read back with Fetch v0-3 (decoded by kafka-python) and v4 (the stored magic-2 batches)."""
    produced = []  # (base offset, produce version, magic, codec, values)
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "formats", 1).error_code == 0
        for version, magic in ((0, 0), (1, 0), (2, 1)):
            for codec in CODECS:
                values = _values(f"p{version}c{codec}", 5)
                answer = produce(wire, version, "formats", 0, message_set(magic, codec, values))
                assert answer.error_code == 0, (version, codec)
                if version == 2:
                    assert answer.log_append_time_ms == -1  # CreateTime
                produced.append((answer.base_offset, version, magic, codec, values))
        assert [p[0] for p in produced] == list(range(0, 60, 5))

        expected = []  # (offset, key, value, timestamp as magic 1 reads it)
        for base, _, magic, _, values in produced:
            expected += [(base + i, key, value, ts if magic == 1 else -1)
                         for i, (key, value, ts) in enumerate(values)]

        for version in (0, 1, 2, 3):
            magic = 0 if version <= 1 else 1
            error, high_watermark, records = fetch(wire, version, {("formats", 0): (0, 1 << 20)})[
                ("formats", 0)]
            assert (error, high_watermark) == (0, 60)
            rows = decoded(records, magic)
            if magic == 0:
                assert rows == [(o, k, v, None) for o, k, v, _ in expected], version
            else:
                assert rows == expected, version
            # each stored batch keeps its codec: one wrapper per compressed batch, one message
            # per record of an uncompressed one
            codecs = [b.compression_type for b in entries(records)]
            assert codecs == [c for _, _, _, c, vals in produced
                              for c in ([c] if c else [NONE] * len(vals))], version

        # what is stored: one magic-2 batch per produce, in the producer's codec, v0's records
        # with no timestamp (-1: Kafka's CreateTime rule for v0), v1's with their own
        entry = element(request_schema(FETCH, 4), "topics")
        part = element(entry, "partitions")
        wanted = entry(topic="formats", partitions=(
            part(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),))
        answer = wire.call(FETCH, 4, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0,
                           max_bytes=1 << 20, isolation_level=0, topics=(wanted,))
        stored = answer.responses[0].partitions[0].records
        reader = MemoryRecords(bytes(stored))
        batches = []
        while (batch := reader.next_batch()) is not None:
            batches.append(batch)
        assert [(b.magic, b.compression_type, b.base_offset) for b in batches] == \
            [(2, c, base) for base, _, _, c, _ in produced]
        assert [(r.offset, r.key, r.value, r.timestamp) for b in batches for r in b] == expected


def test_fetch_from_inside_a_batch(broker):
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "inside", 1).error_code == 0
        assert produce(wire, 2, "inside", 0, message_set(1, NONE, _values("u", 6))).base_offset == 0
        assert produce(wire, 2, "inside", 0, message_set(1, GZIP, _values("g", 6))).base_offset == 6
        for version in (0, 3):
            magic = 0 if version == 0 else 1
            # uncompressed: messages from the fetch offset on
            _, _, records = fetch(wire, version, {("inside", 0): (4, 1 << 20)})[("inside", 0)]
            assert [row[0] for row in decoded(records, magic)] == list(range(4, 12))
            # compressed: the whole wrapper, as Kafka sends it; the consumer skips what it has
            _, _, records = fetch(wire, version, {("inside", 0): (9, 1 << 20)})[("inside", 0)]
            (wrapper,) = entries(records)
            assert wrapper.base_offset == 11  # a wrapper carries its last message's offset
            assert [r.offset for r in wrapper] == list(range(6, 12))


def test_modern_batches_down_convert_headers_dropped_zstd_refused(broker):
    records = clients.sample_records(8, 1, "modern")
    clients.produce_confluent(broker.bootstrap, "modern-lz4", records, "lz4")
    clients.produce_confluent(broker.bootstrap, "modern-zstd", records, "zstd")
    with Wire(broker.bootstrap) as wire:
        for version in (0, 1, 2, 3):
            magic = 0 if version <= 1 else 1
            error, _, got = fetch(wire, version, {("modern-lz4", 0): (0, 1 << 20)})[
                ("modern-lz4", 0)]
            assert error == 0
            rows = decoded(got, magic)
            assert [(o, k, v) for o, k, v, _ in rows] == \
                [(i, r.key, r.value) for i, r in enumerate(records)]
            assert [ts for *_, ts in rows] == \
                [None if magic == 0 else r.timestamp for r in records]
            assert {b.compression_type for b in entries(got)} == {LZ4}
            # zstd has no old format: Kafka answered UNSUPPORTED_COMPRESSION_TYPE
            error, high_watermark, got = fetch(wire, version, {("modern-zstd", 0): (0, 1 << 20)})[
                ("modern-zstd", 0)]
            assert (error, high_watermark, got) == \
                (ErrorCode.unsupported_compression_type.value, 8, b"")


def test_limits_count_converted_bytes_and_the_first_message_always_fits(broker):
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "sized", 2).error_code == 0
        big = [(b"k", b"B" * 3000, BASE_TS), (b"k", b"b" * 10, BASE_TS)]
        small = [(b"k", b"s" * 100, BASE_TS + i) for i in range(20)]
        assert produce(wire, 2, "sized", 0, message_set(1, NONE, big)).error_code == 0
        assert produce(wire, 2, "sized", 0, message_set(1, NONE, small)).error_code == 0
        assert produce(wire, 2, "sized", 1, message_set(1, NONE, small)).error_code == 0
        # a partition limit below the first message: that message alone, whole
        _, _, got = fetch(wire, 2, {("sized", 0): (0, 100)})[("sized", 0)]
        assert [r[0] for r in decoded(got, 1)] == [0] and len(got) > 3000
        # a limit of five magic-1 messages of 100-byte values (34 + 2 + 100 bytes each)
        one = 34 + 1 + 100
        _, _, got = fetch(wire, 2, {("sized", 0): (2, 5 * one + 10)})[("sized", 0)]
        assert [r[0] for r in decoded(got, 1)] == [2, 3, 4, 5, 6] and len(got) <= 5 * one + 10
        # v0 messages are 8 bytes shorter (no timestamp)
        _, _, got = fetch(wire, 0, {("sized", 0): (2, 5 * (one - 8))})[("sized", 0)]
        assert [r[0] for r in decoded(got, 0)] == [2, 3, 4, 5, 6]
        # v3's MaxBytes bounds the whole answer; a later partition gets what is left
        both = fetch(wire, 3, {("sized", 0): (2, 1 << 20), ("sized", 1): (0, 1 << 20)},
                     max_bytes=7 * one)
        assert [r[0] for r in decoded(both[("sized", 0)][2], 1)] == list(range(2, 9))
        assert both[("sized", 1)][2] == b""
        both = fetch(wire, 3, {("sized", 0): (18, 1 << 20), ("sized", 1): (0, 1 << 20)},
                     max_bytes=7 * one)
        assert [r[0] for r in decoded(both[("sized", 0)][2], 1)] == [18, 19, 20, 21]
        assert [r[0] for r in decoded(both[("sized", 1)][2], 1)] == [0, 1, 2]


def test_fetch_v0_long_polls_until_a_v0_produce_arrives(broker):
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "waits", 1).error_code == 0
    with Wire(broker.bootstrap) as reader, Wire(broker.bootstrap) as writer:
        correlation_id = next(_ids)
        reader.send_raw(classic.encode_request(FETCH, 0, correlation_id, "old", {
            "replica_id": -1, "max_wait": 20_000, "min_bytes": 1, "topics": [
                {"topic": "waits", "partitions": [
                    {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}))
        started = time.monotonic()
        assert produce(writer, 0, "waits", 0, message_set(0, NONE, [(None, b"late", -1)])) \
            .error_code == 0
        got, answer = classic.decode_response(FETCH, 0, reader.read_frame())
        assert time.monotonic() - started < 10  # woken by the append, not the 20 s deadline
    assert got == correlation_id
    part = answer.responses[0].partitions[0]
    assert decoded(part.records, 0) == [(0, None, b"late", None)]


def _broken_crc(data: bytes) -> bytes:
    corrupt = bytearray(data)
    corrupt[-1] ^= 0xFF
    return bytes(corrupt)


def test_produce_v0_v2_refuses_what_kafka_refused(broker):
    one = message_set(1, NONE, [(b"k", b"v", BASE_TS)])
    gzipped = message_set(1, GZIP, [(b"k", b"v", BASE_TS), (b"k2", b"v2", BASE_TS)])
    inner = message_set(1, NONE, [(b"k", b"v", BASE_TS)])
    bad_inner = bytearray(inner)
    bad_inner[-1] ^= 0xFF  # an inner message whose CRC fails, inside a valid wrapper
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "strict", 1).error_code == 0
        cases = {
            "bad crc": (_broken_crc(one), ErrorCode.corrupt_message),
            "cut short": (one[:-3], ErrorCode.corrupt_message),
            "trailing bytes": (one + b"\0\0\0", ErrorCode.corrupt_message),
            "mixed magic": (one + message_set(0, NONE, [(b"k", b"v", -1)]),
                            ErrorCode.invalid_record),
            "two wrappers": (gzipped + gzipped, ErrorCode.invalid_record),
            "bad inner crc": (_gzip_wrapper(bad_inner), ErrorCode.corrupt_message),
            "zstd": (_wrapper_with(one, codec=4), ErrorCode.unsupported_compression_type),
            "garbage wrapper": (_wrapper_with(b"not gzip at all", codec=GZIP, raw=True),
                                ErrorCode.corrupt_message),
        }
        for name, (records, error) in cases.items():
            answer = produce(wire, 2, "strict", 0, records)
            assert (name, answer.error_code, answer.base_offset) == (name, error.value, -1)
        # nothing was written; a good one still is, at offset 0
        assert produce(wire, 1, "strict", 0, message_set(0, NONE, [(None, b"ok", -1)])) \
            .base_offset == 0
        # a magic-2 batch in a v2 request: taken as it is, as Kafka 3.9 did
        from kafka.record.default_records import DefaultRecordBatchBuilder
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                            producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                            batch_size=1 << 20)
        builder.append(0, timestamp=BASE_TS, key=None, value=b"v2 batch", headers=[])
        assert produce(wire, 2, "strict", 0, bytes(builder.build())).base_offset == 1
        # unknown partitions and topics answer as in every version
        assert produce(wire, 0, "strict", 7, one).error_code == \
            ErrorCode.unknown_topic_or_partition.value
        _, _, got = fetch(wire, 1, {("strict", 0): (0, 1 << 20)})[("strict", 0)]
        assert [(o, v) for o, _, v, _ in decoded(got, 0)] == [(0, b"ok"), (1, b"v2 batch")]
        assert fetch(wire, 1, {("strict", 3): (0, 1 << 20)})[("strict", 3)][0] == \
            ErrorCode.unknown_topic_or_partition.value
        assert fetch(wire, 1, {("strict", 0): (99, 1 << 20)})[("strict", 0)][0] == \
            ErrorCode.offset_out_of_range.value


def _gzip_wrapper(inner: bytes) -> bytes:
    return _wrapper_with(inner, codec=GZIP)


def _wrapper_with(inner: bytes, codec: int, raw: bool = False) -> bytes:
    """A magic-1 wrapper message whose value is `inner`, compressed with gzip unless `raw`."""
    import gzip
    value = inner if raw or codec != GZIP else gzip.compress(inner)
    body = struct.pack(">bbqii", 1, codec, BASE_TS, -1, len(value)) + value
    return struct.pack(">qiI", 0, 4 + len(body), zlib.crc32(body)) + body


def test_produce_v0_acks_0_writes_without_an_answer(broker):
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "quiet", 1).error_code == 0
        wire.send_raw(classic.encode_request(PRODUCE, 0, next(_ids), "old", {
            "acks": 0, "timeout": 1000, "topic_data": [{"name": "quiet", "partition_data": [
                {"index": 0, "records": message_set(0, NONE, [(None, b"fire", -1)])}]}]}))
        # the next answer on the connection is the fetch's: the produce had none
        error, high_watermark, got = fetch(wire, 0, {("quiet", 0): (0, 1 << 20)},
                                           max_wait_ms=5000, min_bytes=1)[("quiet", 0)]
        assert (error, high_watermark) == (0, 1)
        assert decoded(got, 0) == [(0, None, b"fire", None)]


@pytest.mark.parametrize("api_key,version", [(FETCH, 0), (FETCH, 3), (PRODUCE, 0), (PRODUCE, 2)])
def test_a_count_larger_than_the_frame_closes_the_connection(broker, api_key, version):
    header = struct.pack(">hhih", api_key, version, 1, 3) + b"old"
    if api_key == FETCH:
        body = struct.pack(">iii", -1, 0, 0) + (struct.pack(">i", 0) if version >= 3 else b"")
    else:
        body = struct.pack(">hi", 1, 1000)
    frame = header + body + struct.pack(">i", 0x7FFFFFFF)  # topics: two billion, then nothing
    with Wire(broker.bootstrap) as wire:
        wire.send_raw(struct.pack(">i", len(frame)) + frame)
        wire.sock.settimeout(5)
        assert wire.closed_by_peer()
    with Wire(broker.bootstrap) as wire:  # the broker itself is fine
        assert _create(wire, f"after-{api_key}-{version}", 1).error_code == 0


@pytest.mark.parametrize("api_version", [(0, 8, 2), (0, 9), (0, 10, 0), (0, 10, 1)])
def test_kafka_python_pinned_to_an_old_broker_version_produces_and_consumes(broker, api_version):
    """kafka-python with `api_version` set asks no ApiVersions and speaks that release's
    protocol: 0.8.2 Produce v0 / Fetch v0 (magic 0), 0.9 v1 / v1, 0.10.0 v2 / v2 (magic 1),
    0.10.1 v2 / v3. Each codec, produced and read back by the real client."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    tag = "-".join(map(str, api_version))
    for codec in ("none", "gzip", "snappy", "lz4"):
        topic = f"kp-{tag}-{codec}"
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=api_version,
                                 compression_type=None if codec == "none" else codec,
                                 linger_ms=5)
        for i in range(20):
            producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode() * 20, partition=0)
        producer.flush(30)
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, api_version=api_version,
                                 group_id=None, enable_auto_commit=False)
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            for messages in consumer.poll(timeout_ms=500).values():
                got += [(m.offset, m.key, m.value, m.timestamp) for m in messages]
        consumer.close()
        assert [(o, k, v) for o, k, v, _ in got] == \
            [(i, f"k{i}".encode(), f"v{i}".encode() * 20) for i in range(20)], codec
        if api_version < (0, 10):  # magic 0: no timestamps
            assert {ts for *_, ts in got} == {None}
        else:  # magic 1: the producer's create time
            assert all(ts > 1_700_000_000_000 for *_, ts in got)


@pytest.mark.parametrize("fallback", ["0.8.2", "0.9.0", "0.10.0", "0.10.1"])
def test_librdkafka_that_does_not_ask_api_versions_produces_and_consumes(broker, fallback):
    """librdkafka with `api.version.request=false` (its oldest releases' default) speaks what
    `broker.version.fallback` names: below 0.10 magic 0 (Produce and Fetch v0-1), 0.10.x magic 1
    (Produce v2, Fetch v2-3). Each codec, produced and read back by the real client."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    settings = {"bootstrap.servers": broker.bootstrap, "api.version.request": False,
                "broker.version.fallback": fallback}
    for codec in ("none", "gzip", "snappy", "lz4"):
        topic = f"rd-{fallback}-{codec}"
        producer = Producer({**settings, "compression.type": codec, "linger.ms": 5})
        failed = []
        for i in range(20):
            producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode() * 20,
                             partition=0, timestamp=1_700_000_000_000 + i,
                             on_delivery=lambda err, _: err and failed.append(err))
        assert producer.flush(30) == 0 and not failed, failed
        consumer = Consumer({**settings, "group.id": "unused", "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got = []
        deadline = time.monotonic() + 30
        try:
            while len(got) < 20 and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None:
                    assert message.error() is None, message.error()
                    got.append((message.offset(), message.key(), message.value(),
                                message.timestamp()))
        finally:
            consumer.close()
        assert [(o, k, v) for o, k, v, _ in got] == \
            [(i, f"k{i}".encode(), f"v{i}".encode() * 20) for i in range(20)], codec
        if fallback in ("0.8.2", "0.9.0"):  # magic 0: no timestamp
            assert {ts for *_, ts in got} == {(0, 0)}
        else:  # magic 1: the create time given (librdkafka 0.10 fallback sends it)
            assert [ts for *_, ts in got] == [(1, 1_700_000_000_000 + i) for i in range(20)]
