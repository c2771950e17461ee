"""The hand-written Heartbeat codec agrees with kio, byte for byte, on every version."""
from __future__ import annotations

import pytest

from roster.protocol import heartbeat_wire
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


def test_a_repeated_heartbeat_is_decoded_from_the_memo_per_version():
    frame = kio_request(3)
    assert decode_heartbeat(frame, 3) == decode_heartbeat(frame, 3)
    assert heartbeat_wire._memo[3][frame[8:]][2] == "member-1"
    # The same bytes under a v2 header read differently (no instance id: bytes left over).
    as_v2 = frame[:2] + (2).to_bytes(2, "big") + frame[4:]
    with pytest.raises(MalformedRequest):
        decode_heartbeat(as_v2, 2)
    assert frame[8:] not in heartbeat_wire._memo.get(2, {})


def test_the_memo_is_bounded_and_keeps_neither_failures_nor_long_frames(monkeypatch):
    monkeypatch.setattr(heartbeat_wire, "_memo", {})
    monkeypatch.setattr(heartbeat_wire, "MEMO_ENTRIES", 4)
    for n in range(10):
        decode_heartbeat(kio_request(3, member_id=f"member-{n}"), 3)
        assert len(heartbeat_wire._memo[3]) <= 4
    long = kio_request(3, client_id="c" * (heartbeat_wire.MEMO_TAIL_BYTES + 1))
    assert decode_heartbeat(long, 3)[2] == "member-1"
    assert long[8:] not in heartbeat_wire._memo[3]
    with pytest.raises(MalformedRequest):
        decode_heartbeat(kio_request(3)[:-1], 3)
    assert kio_request(3)[8:-1] not in heartbeat_wire._memo[3]
