"""The hand-written Heartbeat codec agrees with kio, byte for byte, on every version."""
from __future__ import annotations

import pytest

from roster.protocol.build import make
from roster.protocol.codec import encode_request, encode_response, request_schema, response_schema
from roster.protocol.errors import ErrorCode, MalformedRequest
from roster.protocol.heartbeat_wire import decode_heartbeat, encode_heartbeat_answer

HEARTBEAT = 12
VERSIONS = range(0, 5)


def kio_request(version: int, client_id: str | None = "client-1", **fields) -> bytes:
    values = dict(group_id="group-ü", generation_id=7, member_id="member-1",
                  group_instance_id="instance-1")
    values.update(fields)
    body = make(request_schema(HEARTBEAT, version), **values)
    return encode_request(HEARTBEAT, version, 42, client_id, body)[4:]  # without the size


@pytest.mark.parametrize("version", VERSIONS)
def test_decodes_what_kio_encodes(version):
    assert decode_heartbeat(kio_request(version), version) == (
        "group-ü", 7, "member-1", "instance-1" if version >= 3 else None)


@pytest.mark.parametrize("version", [3, 4])
def test_null_instance_id_and_client_id(version):
    assert decode_heartbeat(kio_request(version, client_id=None, group_instance_id=None,
                                        generation_id=-1, member_id=""), version) == (
        "group-ü", -1, "", None)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("error", [ErrorCode.none, ErrorCode.rebalance_in_progress,
                                   ErrorCode.fenced_instance_id, ErrorCode.unknown_member_id])
def test_answers_what_kio_encodes(version, error):
    expected = encode_response(HEARTBEAT, version, 123456,
                               make(response_schema(HEARTBEAT, version), error_code=error))
    assert encode_heartbeat_answer(version, 123456, error) == expected


def test_unknown_tagged_fields_are_skipped_as_kafka_does():
    frame = kio_request(4)
    # The body ends with an empty tagged-field section (0); replace it with one unknown field.
    with_tag = frame[:-1] + bytes([1, 9, 3]) + b"xyz"
    assert decode_heartbeat(with_tag, 4)[2] == "member-1"


@pytest.mark.parametrize("version", VERSIONS)
def test_truncated_or_padded_frames_are_malformed(version):
    frame = kio_request(version)
    for cut in (9, len(frame) // 2, len(frame) - 1):
        with pytest.raises(MalformedRequest):
            decode_heartbeat(frame[:cut], version)
    with pytest.raises(MalformedRequest):
        decode_heartbeat(frame + b"\0", version)


def test_null_group_id_is_malformed():
    frame = bytearray(kio_request(2))
    at = 8 + 2 + len("client-1")
    frame[at:at + 2 + len("group-ü".encode())] = b"\xff\xff"
    with pytest.raises(MalformedRequest):
        decode_heartbeat(bytes(frame), 2)
