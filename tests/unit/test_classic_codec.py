"""roster.protocol.classic: the old versions kio has no schema for, byte for byte."""
from __future__ import annotations

import struct

import pytest

from roster.protocol import classic
from roster.protocol.errors import MalformedRequest
from roster.protocol.framing import read_prefix

COMMIT_V1 = {"group_id": "g", "generation_id_or_member_epoch": 4, "member_id": "m",
             "topics": [{"name": "t", "partitions": [
                 {"partition_index": 2, "committed_offset": 7, "commit_timestamp": 99,
                  "committed_metadata": None}]}]}


def test_offset_commit_v1_bytes_follow_kafkas_layout():
    frame = classic.encode_request(8, 1, 5, "c", COMMIT_V1)
    expected = struct.pack(">hhih", 8, 1, 5, 1) + b"c" + struct.pack(">h", 1) + b"g" + \
        struct.pack(">ih", 4, 1) + b"m" + struct.pack(">ih", 1, 1) + b"t" + \
        struct.pack(">iiqqh", 1, 2, 7, 99, -1)
    assert frame == struct.pack(">i", len(expected)) + expected
    request = classic.decode_request(frame[4:])
    assert (request.api_key, request.api_version, request.correlation_id, request.client_id) == \
        (8, 1, 5, "c")
    (partition,) = request.body.topics[0].partitions
    assert (request.body.generation_id_or_member_epoch, request.body.member_id,
            partition.commit_timestamp, partition.committed_metadata) == (4, "m", 99, None)


def test_missing_fields_take_kafkas_defaults():
    frame = classic.encode_request(8, 0, 1, None, {"group_id": "g", "topics": []})
    body = classic.decode_request(frame[4:]).body
    assert (body.generation_id_or_member_epoch, body.member_id) == (-1, "")
    frame = classic.encode_request(19, 0, 1, None, {"topics": [], "timeout_ms": 10})
    assert classic.decode_request(frame[4:]).body.validate_only is False


def test_list_offsets_v0_response_round_trips():
    body = {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": 0, "old_style_offsets": [9, 4, 0]}]}]}
    frame = classic.encode_response(2, 0, 3, body)
    correlation_id, decoded = classic.decode_response(2, 0, frame[4:])
    assert correlation_id == 3
    assert decoded.topics[0].partitions[0].old_style_offsets == (9, 4, 0)


@pytest.mark.parametrize("cut", range(1, 30))
def test_truncated_or_padded_requests_are_malformed(cut):
    frame = classic.encode_request(8, 1, 5, "c", COMMIT_V1)[4:]
    with pytest.raises(MalformedRequest):
        classic.decode_request(frame[:-cut], read_prefix(frame))
    with pytest.raises(MalformedRequest):
        classic.decode_request(frame + b"\0" * cut, read_prefix(frame))


def test_an_array_count_past_the_frame_is_malformed():
    frame = classic.encode_request(20, 0, 1, "c", {"topic_names": [], "timeout_ms": 1})[4:]
    bomb = frame[:-8] + struct.pack(">i", 2_000_000_000) + frame[-4:]
    with pytest.raises(MalformedRequest):
        classic.decode_request(bomb)


def test_null_where_kafka_allows_none_is_malformed():
    frame = classic.encode_request(20, 0, 1, "c", {"topic_names": [], "timeout_ms": 1})[4:]
    null_array = frame[:-8] + struct.pack(">i", -1) + frame[-4:]
    with pytest.raises(MalformedRequest, match="array size -1"):
        classic.decode_request(null_array)
    frame = classic.encode_request(20, 0, 1, "c", {"topic_names": ["a"], "timeout_ms": 1})[4:]
    null_name = frame[:-7] + struct.pack(">h", -1) + frame[-4:]
    with pytest.raises(MalformedRequest, match="null string"):
        classic.decode_request(null_name)
    # a null client id and null metadata are fine, as in Kafka
    frame = classic.encode_request(8, 1, 5, None, COMMIT_V1)[4:]
    assert classic.decode_request(frame).client_id is None
