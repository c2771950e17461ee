"""JoinGroup and SyncGroup of the common shape take their own codec (raw path); any other shape
(here: an unknown tagged field) goes through kio's decode, admission and handler. Both answer
the same bytes."""
from __future__ import annotations

import datetime

import pytest

from roster.protocol.build import element, make
from roster.protocol.codec import decode_response, encode_request, request_schema
from roster.protocol.errors import ErrorCode
from tests.support.wire import Wire

pytestmark = pytest.mark.interop

JOIN_GROUP, SYNC_GROUP = 11, 14
UNKNOWN_TAG = bytes([1, 9, 3]) + b"xyz"   # one tagged field Kafka does not define


def join(version: int, group_id: str, member_id: str) -> bytes:
    schema = request_schema(JOIN_GROUP, version)
    protocol = element(schema, "protocols")
    body = make(schema, group_id=group_id, session_timeout=datetime.timedelta(seconds=10),
                rebalance_timeout=datetime.timedelta(seconds=10), member_id=member_id,
                group_instance_id=None, protocol_type="consumer", reason=None,
                protocols=(make(protocol, name="range", metadata=b"\0\1subscription"),))
    return encode_request(JOIN_GROUP, version, 7, "raw-path-test", body)


def sync(version: int, group_id: str, protocol_type: str | None) -> bytes:
    schema = request_schema(SYNC_GROUP, version)
    entry = element(schema, "assignments")
    body = make(schema, group_id=group_id, generation_id=3, member_id="m-1",
                group_instance_id=None, protocol_type=protocol_type, protocol_name="range",
                assignments=(make(entry, member_id="m-1", assignment=b"\0\1assignment"),))
    return encode_request(SYNC_GROUP, version, 8, "raw-path-test", body)


def with_unknown_tag(frame: bytes) -> bytes:
    """The frame with its body's empty tagged-field section replaced by one unknown field."""
    body = frame[4:-1] + UNKNOWN_TAG
    return len(body).to_bytes(4, "big") + body


def answer(wire: Wire, frame: bytes) -> bytes:
    wire.send_raw(frame)
    return wire.read_frame()


@pytest.mark.parametrize("make_frame, api_key, version, error", [
    (lambda: join(9, "", "m-1"), JOIN_GROUP, 9, ErrorCode.invalid_group_id),   # admission
    (lambda: join(6, "nobody", "m-1"), JOIN_GROUP, 6, ErrorCode.unknown_member_id),  # core
    (lambda: sync(4, "nobody", None), SYNC_GROUP, 4, ErrorCode.unknown_member_id),
    (lambda: sync(5, "", "consumer"), SYNC_GROUP, 5, ErrorCode.invalid_group_id),
    # v5 without a protocol type: validate() refuses it on the generic path, either way
    (lambda: sync(5, "nobody", None), SYNC_GROUP, 5, ErrorCode.inconsistent_group_protocol),
], ids=["join-admission", "join-core", "sync-core", "sync-admission", "sync-validate"])
def test_raw_and_generic_paths_answer_alike(broker, make_frame, api_key, version, error):
    frame = make_frame()
    with Wire(broker.bootstrap) as wire:
        raw = answer(wire, frame)
        generic = answer(wire, with_unknown_tag(frame))
    assert raw == generic
    assert decode_response(api_key, version, raw)[1].error_code == error
