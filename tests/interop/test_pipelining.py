"""Requests sent back to back on one connection: answered one at a time, in order, whatever
their size or how the bytes arrive, and a request that waits holds back the ones behind it."""
from __future__ import annotations

import datetime
import socket
import struct

import pytest

from roster.protocol.build import element, make
from roster.protocol.codec import decode_response, encode_request, request_schema
from roster.protocol.errors import ErrorCode
from tests.support.records import build_batch
from tests.support.wire import Wire

pytestmark = pytest.mark.interop

PRODUCE, FETCH, METADATA, HEARTBEAT, API_VERSIONS, CREATE_TOPICS = 0, 1, 3, 12, 18, 19


def frame(api_key: int, version: int, correlation_id: int, **fields) -> bytes:
    body = make(request_schema(api_key, version), **fields)
    return encode_request(api_key, version, correlation_id, "pipelining-test", body)


def api_versions(correlation_id: int) -> bytes:
    return frame(API_VERSIONS, 3, correlation_id, client_software_name="t",
                 client_software_version="1")


def heartbeat(correlation_id: int) -> bytes:
    return frame(HEARTBEAT, 3, correlation_id, group_id="nobody-here", generation_id=1,
                 member_id="m", group_instance_id=None)


def produce(correlation_id: int, topic: str, records: bytes) -> bytes:
    schema = request_schema(PRODUCE, 9)
    topic_entry = element(schema, "topic_data")
    partition_entry = element(topic_entry, "partition_data")
    return frame(PRODUCE, 9, correlation_id, transactional_id=None, acks=1,
                 timeout=datetime.timedelta(seconds=5),
                 topic_data=(topic_entry(name=topic, partition_data=(
                     partition_entry(index=0, records=records),)),))


def fetch(correlation_id: int, topic: str, wait_s: float) -> bytes:
    schema = request_schema(FETCH, 12)
    entry = element(schema, "topics")
    part = element(entry, "partitions")
    return frame(FETCH, 12, correlation_id, replica_id=-1,
                 max_wait=datetime.timedelta(seconds=wait_s), min_bytes=1, max_bytes=1 << 20,
                 isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                 forgotten_topics_data=(), topics=(make(entry, topic=topic, partitions=(make(
                     part, partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),))


def create_topic(wire: Wire, name: str) -> None:
    schema = request_schema(CREATE_TOPICS, 5)
    topic = element(schema, "topics")
    answer = wire.call(CREATE_TOPICS, 5, timeout=datetime.timedelta(seconds=5),
                       validate_only=False, topics=(topic(
                           name=name, num_partitions=1, replication_factor=1, assignments=(),
                           configs=()),))
    assert answer.topics[0].error_code == ErrorCode.none


def correlation_id(answer_frame: bytes) -> int:
    return struct.unpack_from(">i", answer_frame)[0]


def test_a_burst_of_mixed_requests_is_answered_in_order(broker):
    burst = []
    for n in range(1, 301):
        burst.append(api_versions(n) if n % 3 == 0 else heartbeat(n))
    with Wire(broker.bootstrap) as wire:
        wire.send_raw(b"".join(burst))
        for n in range(1, 301):
            answer = wire.read_frame()
            assert correlation_id(answer) == n
            if n % 3:
                _, body = decode_response(HEARTBEAT, 3, answer)
                assert body.error_code == ErrorCode.unknown_member_id


def test_requests_trickling_in_one_byte_at_a_time(broker):
    stream = api_versions(1) + heartbeat(2) + api_versions(3)
    with Wire(broker.bootstrap) as wire:
        wire.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # one byte per segment
        for i in range(len(stream)):
            wire.send_raw(stream[i:i + 1])
        assert [correlation_id(wire.read_frame()) for _ in range(3)] == [1, 2, 3]


def test_frames_larger_than_the_receive_buffer_pipelined_with_small_ones(broker):
    big = build_batch([bytes([i]) * 100_000 for i in range(9)])  # ~900 kB, one batch
    assert len(big) > 256 * 1024
    with Wire(broker.bootstrap) as wire:
        create_topic(wire, "big")
        wire.send_raw(produce(10, "big", big) + api_versions(11) + produce(12, "big", big))
        answers = [wire.read_frame() for _ in range(3)]
    assert [correlation_id(a) for a in answers] == [10, 11, 12]
    offsets = [decode_response(PRODUCE, 9, answers[i])[1].responses[0].partition_responses[0]
               for i in (0, 2)]
    assert [(p.error_code, p.base_offset) for p in offsets] == [(0, 0), (0, 9)]


def test_a_parked_long_poll_holds_back_the_requests_behind_it(broker):
    with Wire(broker.bootstrap) as wire, Wire(broker.bootstrap) as producer:
        create_topic(producer, "quiet")
        # The Fetch parks (nothing to read); the ApiVersions behind it must not overtake it.
        wire.send_raw(fetch(1, "quiet", wait_s=30) + api_versions(2))
        wire.sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            wire.read_frame()  # nothing answered while the Fetch waits
        wire.sock.settimeout(10)
        producer.send_raw(produce(5, "quiet", build_batch([b"wake up"])))
        assert correlation_id(producer.read_frame()) == 5
        first, second = wire.read_frame(), wire.read_frame()
    assert (correlation_id(first), correlation_id(second)) == (1, 2)
    _, answer = decode_response(FETCH, 12, first)
    assert answer.responses[0].partitions[0].high_watermark == 1


def test_answers_before_a_bad_frame_are_sent_before_the_connection_closes(broker):
    unknown_api = struct.pack(">ihhi", 8, 999, 0, 3)
    with Wire(broker.bootstrap) as wire:
        wire.send_raw(api_versions(1) + heartbeat(2) + unknown_api + api_versions(4))
        assert [correlation_id(wire.read_frame()) for _ in range(2)] == [1, 2]
        assert wire.closed_by_peer()
