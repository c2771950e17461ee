"""A raw-socket produce load generator: one pre-encoded Produce request, re-sent back to back with
several requests in flight on one connection.

Why: confluent-kafka spends a whole client core building 1 KiB records one by one and tops out
below what this machine's disk takes, so it cannot show whether a broker keeps up with the disk.
Here the client does almost nothing per request. A magic-v2 record batch stays valid when re-sent
unchanged (the broker assigns offsets; the CRC does not cover the base offset), so one batch,
built by kafka-python's record codec, and one request frame, encoded by kio (the codec roster
itself uses), are reused for every request; only the correlation id is patched in.

Every response is checked: its correlation id, its error code, and that its base offset is exactly
one batch after the previous one, so every batch is known to have been appended, in order.
"""
from __future__ import annotations

import datetime
import socket
import struct
import time
from dataclasses import dataclass

from kafka.record.default_records import DefaultRecordBatchBuilder

from roster.log.batch import validate
from roster.protocol.build import element, make
from roster.protocol.codec import decode_request, decode_response, encode_request, request_schema

PRODUCE = 0
API_VERSIONS = 18
# Produce v9 is the first flexible version and what librdkafka 2.x sends to a broker offering it.
PREFERRED_PRODUCE_VERSION = 9
CLIENT_ID = "roster-pipelined-bench"
_INT32 = struct.Struct(">i")
_ERROR_AND_BASE = struct.Struct(">hq")
CORRELATION_AT = 8  # size int32, api_key int16, api_version int16, then the correlation id


def build_batch(value: bytes, batch_bytes: int, now_ms: int,
                keyed: bool = False) -> tuple[bytes, int]:
    """(batch, records): as many records of `value` as fit in `batch_bytes`, the way a client with
    batch.size=batch_bytes fills a batch. `keyed`: record i has key b"key-<i>" (a compacted topic
    refuses records without one). Raises ValueError if not even one fits."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=batch_bytes)
    count = 0
    while builder.append(count, timestamp=now_ms, key=b"key-%d" % count if keyed else None,
                         value=value, headers=[]) is not None:
        count += 1
    if count == 0:
        raise ValueError(f"a {len(value)}-byte record does not fit in {batch_bytes} bytes")
    batch = bytes(builder.build())
    validate(batch)  # roster's own check: magic, lengths, CRC32C
    return batch, count


def produce_frame(version: int, topic: str, partition: int, acks: int, batch: bytes) -> bytes:
    """A complete Produce request frame, encoded by kio and decoded back as a check."""
    schema = request_schema(PRODUCE, version)
    topic_entry = element(schema, "topic_data")
    partition_entry = element(topic_entry, "partition_data")
    body = make(schema, transactional_id=None, acks=acks, timeout=datetime.timedelta(seconds=30),
                topic_data=(make(topic_entry, name=topic, partition_data=(
                    make(partition_entry, index=partition, records=batch),)),))
    frame = encode_request(PRODUCE, version, 0, CLIENT_ID, body)
    decoded = decode_request(frame[4:]).body
    if bytes(decoded.topic_data[0].partition_data[0].records) != batch:
        raise AssertionError("kio did not round-trip the Produce request")
    return frame


def _error_and_base_at(version: int, topic: str) -> int:
    """Position (in a response frame, size prefix included) of the error code and base offset of
    the one partition a one-topic, one-partition Produce response carries."""
    name = len(topic.encode())
    if version >= 9:  # flexible: header tagged fields, compact array and string lengths
        # size, correlation id, header tags, topics (1 byte), name, partitions (1 byte), index
        return 4 + 4 + 1 + 1 + (1 + name) + 1 + 4
    return 4 + 4 + 4 + (2 + name) + 4 + 4


@dataclass
class RunStats:
    requests: int
    records: int
    value_bytes: int
    seconds: float


class PipelinedProducer:
    """One connection to a broker, producing to one partition with `depth` requests in flight."""

    def __init__(self, address: str, topic: str, partition: int, acks: int, value: bytes,
                 batch_bytes: int, timeout: float, keyed: bool = False) -> None:
        host, _, port = address.rpartition(":")
        self._sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = bytearray()
        self.topic = topic
        self.version = min(PREFERRED_PRODUCE_VERSION, self._max_version(PRODUCE))
        self.batch, self.records_per_batch = build_batch(value, batch_bytes,
                                                         int(time.time() * 1000), keyed)
        self.value_bytes_per_batch = self.records_per_batch * len(value)
        self._frame = bytearray(produce_frame(self.version, topic, partition, acks, self.batch))
        self._error_at = _error_and_base_at(self.version, topic)
        self._correlation = 0
        self._last_base = None

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> PipelinedProducer:
        return self

    def __exit__(self, *_) -> None:
        self.close()

    # -- wire ----------------------------------------------------------------------------------

    def _read_frame(self) -> memoryview:
        """The next response frame, size prefix included."""
        buffer = self._buffer
        while True:
            if len(buffer) >= 4:
                end = 4 + _INT32.unpack_from(buffer, 0)[0]
                if len(buffer) >= end:
                    frame = bytes(buffer[:end])
                    del buffer[:end]
                    return memoryview(frame)
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            buffer += chunk

    def _max_version(self, api_key: int) -> int:
        schema = request_schema(API_VERSIONS, 0)
        self._sock.sendall(encode_request(API_VERSIONS, 0, 0, CLIENT_ID, schema()))
        _, body = decode_response(API_VERSIONS, 0, bytes(self._read_frame()[4:]))
        for entry in body.api_keys:
            if entry.api_key == api_key:
                return entry.max_version
        raise RuntimeError(f"the broker does not offer api key {api_key}")

    def _send(self) -> None:
        _INT32.pack_into(self._frame, CORRELATION_AT, self._correlation)
        self._correlation += 1
        self._sock.sendall(self._frame)

    def _check(self, frame: memoryview, expected_correlation: int, full: bool) -> None:
        (correlation,) = _INT32.unpack_from(frame, 4)
        if correlation != expected_correlation:
            raise RuntimeError(f"response {correlation} arrived where {expected_correlation} "
                               "was due")
        if full:  # the whole response through kio, not just the fields at known positions
            _, body = decode_response(PRODUCE, self.version, bytes(frame[4:]))
            answer = body.responses[0].partition_responses[0]
            error, base = int(answer.error_code), answer.base_offset
            if (error, base) != _ERROR_AND_BASE.unpack_from(frame, self._error_at):
                raise AssertionError("the fixed-position response check disagrees with kio")
        else:
            error, base = _ERROR_AND_BASE.unpack_from(frame, self._error_at)
        if error:
            raise RuntimeError(f"produce failed with error code {error}")
        if self._last_base is not None and base != self._last_base + self.records_per_batch:
            raise RuntimeError(f"base offset {base} does not follow {self._last_base}")
        self._last_base = base

    # -- load ----------------------------------------------------------------------------------

    def run(self, requests: int, depth: int, give_up_after: float,
            check_every: int = 64) -> RunStats:
        """Send `requests` copies of the request, `depth` at a time, and wait for every answer.
        Every `check_every`-th response is also decoded whole by kio."""
        first = self._correlation
        acked = 0
        start = time.perf_counter()
        give_up = start + give_up_after
        while acked < requests:
            while self._correlation - first < requests and self._correlation - first - acked < depth:
                self._send()
            self._check(self._read_frame(), first + acked, acked % check_every == 0)
            acked += 1
            if time.perf_counter() > give_up:
                raise RuntimeError(f"produce stalled after {acked} of {requests} requests")
        elapsed = time.perf_counter() - start
        return RunStats(requests, requests * self.records_per_batch,
                        requests * self.value_bytes_per_batch, elapsed)
