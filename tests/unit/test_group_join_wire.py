"""The hand-written JoinGroup and SyncGroup codecs agree with kio, byte for byte, on every
version; what they do not read (tagged fields, nulls where a value is required, truncated or
padded frames) they leave to the generic path (None)."""
from __future__ import annotations

import datetime
import random

import pytest

from roster.protocol.build import element, make
from roster.protocol.codec import (
    decode_request,
    encode_request,
    encode_response,
    request_schema,
    response_schema,
)
from roster.protocol.errors import ErrorCode, MalformedRequest
from roster.protocol.group_join_wire import (
    decode_join,
    decode_sync,
    encode_join_answer,
    encode_sync_answer,
)

JOIN_GROUP = 11
SYNC_GROUP = 14
JOIN_VERSIONS = range(0, 10)
SYNC_VERSIONS = range(0, 6)
METADATA = bytes(range(256)) * 2   # longer than one varint byte


def ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def join_request(version: int, client_id: str | None = "client-ü", protocols=None,
                 **fields) -> bytes:
    schema = request_schema(JOIN_GROUP, version)
    entry = element(schema, "protocols")
    values = dict(group_id="group-ü", session_timeout=ms(45_000), rebalance_timeout=ms(300_000),
                  member_id="member-1", group_instance_id="instance-1", protocol_type="consumer",
                  reason="rejoin")
    values.update(fields)
    if protocols is None:
        protocols = (("range", METADATA), ("roundrobin", b""))
    body = make(schema, protocols=tuple(make(entry, name=n, metadata=m) for n, m in protocols),
                **values)
    return encode_request(JOIN_GROUP, version, 42, client_id, body)[4:]


def sync_request(version: int, assignments=None, **fields) -> bytes:
    schema = request_schema(SYNC_GROUP, version)
    entry = element(schema, "assignments")
    values = dict(group_id="group-ü", generation_id=7, member_id="member-1",
                  group_instance_id="instance-1", protocol_type="consumer",
                  protocol_name="range")
    values.update(fields)
    if assignments is None:
        assignments = tuple((f"member-{i}", bytes([i]) * (i * 40)) for i in range(5))
    body = make(schema, assignments=tuple(make(entry, member_id=m, assignment=a)
                                          for m, a in assignments), **values)
    return encode_request(SYNC_GROUP, version, 42, "client", body)[4:]


@pytest.mark.parametrize("version", JOIN_VERSIONS)
def test_join_decodes_what_kio_encodes(version):
    assert decode_join(join_request(version), version) == (
        "client-ü", "group-ü", 45_000, 300_000 if version >= 1 else None, "member-1",
        "instance-1" if version >= 5 else None, "consumer",
        (("range", METADATA), ("roundrobin", b"")), "rejoin" if version >= 8 else None)


@pytest.mark.parametrize("version", [5, 6, 8, 9])
def test_join_nulls_where_allowed(version):
    fields = decode_join(join_request(version, client_id=None, group_instance_id=None,
                                      reason=None, member_id="", protocols=()), version)
    assert fields == (None, "group-ü", 45_000, 300_000, "", None, "consumer", (), None)


@pytest.mark.parametrize("version", SYNC_VERSIONS)
def test_sync_decodes_what_kio_encodes(version):
    assert decode_sync(sync_request(version), version) == (
        "group-ü", 7, "member-1", "instance-1" if version >= 3 else None,
        "consumer" if version >= 5 else None, "range" if version >= 5 else None,
        tuple((f"member-{i}", bytes([i]) * (i * 40)) for i in range(5)))


@pytest.mark.parametrize("version", [3, 4, 5])
def test_sync_nulls_where_allowed(version):
    fields = decode_sync(sync_request(version, assignments=(), group_instance_id=None,
                                      protocol_type=None, protocol_name=None), version)
    assert fields == ("group-ü", 7, "member-1", None, None, None, ())


@pytest.mark.parametrize("version", JOIN_VERSIONS)
def test_join_leaves_unusual_frames_to_the_generic_path(version):
    frame = join_request(version)
    for cut in (9, len(frame) // 2, len(frame) - 1):
        assert decode_join(frame[:cut], version) is None
    assert decode_join(frame + b"\0", version) is None
    if version >= 6:   # an unknown tagged field where the body's empty section was
        assert decode_join(frame[:-1] + bytes([1, 9, 3]) + b"xyz", version) is None


@pytest.mark.parametrize("version", SYNC_VERSIONS)
def test_sync_leaves_unusual_frames_to_the_generic_path(version):
    frame = sync_request(version)
    for cut in (9, len(frame) // 2, len(frame) - 1):
        assert decode_sync(frame[:cut], version) is None
    assert decode_sync(frame + b"\0", version) is None
    if version >= 4:
        assert decode_sync(frame[:-1] + bytes([1, 9, 3]) + b"xyz", version) is None


def test_null_group_id_and_bad_text_go_the_generic_way():
    frame = bytearray(join_request(2))
    at = 8 + 2 + len("client-ü".encode())
    assert decode_join(bytes(frame[:at]) + b"\xff\xff" + bytes(frame[at + 2 + 8:]), 2) is None
    frame[at + 2] = 0xFF   # not UTF-8
    assert decode_join(bytes(frame), 2) is None
    null_client = join_request(2, client_id=None)
    assert decode_join(null_client, 2)[0] is None
    assert decode_join(null_client[:8] + b"\xff\xfe" + null_client[10:], 2) is None   # length -2


MEMBERS = (("member-1", "instance-1", METADATA), ("member-2", None, b""),
           ("m" * 200, "i" * 130, b"x"))


@pytest.mark.parametrize("version", JOIN_VERSIONS)
@pytest.mark.parametrize("members", [(), MEMBERS], ids=["follower", "leader"])
@pytest.mark.parametrize("error, protocol_name", [(ErrorCode.none, "range"),
                                                  (ErrorCode.unknown_member_id, None)])
def test_join_answers_what_kio_encodes(version, members, error, protocol_name):
    schema = response_schema(JOIN_GROUP, version)
    entry = element(schema, "members")
    kio_name = "" if protocol_name is None and version < 7 else protocol_name
    expected = encode_response(JOIN_GROUP, version, 123456, make(
        schema, error_code=error, generation_id=12, protocol_type="consumer",
        protocol_name=kio_name, leader="member-1", skip_assignment=True, member_id="member-2",
        members=tuple(make(entry, member_id=m, group_instance_id=i, metadata=d)
                      for m, i, d in members)))
    assert encode_join_answer(version, 123456, error.value, 12, "consumer", protocol_name,
                              "member-1", True, "member-2", iter(members)) == expected


@pytest.mark.parametrize("version", SYNC_VERSIONS)
@pytest.mark.parametrize("error, protocol_type, assignment", [
    (ErrorCode.none, "consumer", METADATA), (ErrorCode.rebalance_in_progress, None, b"")])
def test_sync_answers_what_kio_encodes(version, error, protocol_type, assignment):
    expected = encode_response(SYNC_GROUP, version, -5, make(
        response_schema(SYNC_GROUP, version), error_code=error, protocol_type=protocol_type,
        protocol_name=protocol_type and "range", assignment=assignment))
    assert encode_sync_answer(version, -5, error.value, protocol_type,
                              protocol_type and "range", assignment) == expected


def kio_join_fields(frame: bytes, version: int):
    """What the generic path makes of a JoinGroup frame, in decode_join's shape (None: it
    refuses the frame)."""
    try:
        request = decode_request(frame)
    except MalformedRequest:
        return None
    body = request.body
    rebalance = getattr(body, "rebalance_timeout", None)
    return (request.client_id, body.group_id,
            round(body.session_timeout.total_seconds() * 1000),
            None if rebalance is None else round(rebalance.total_seconds() * 1000),
            body.member_id, getattr(body, "group_instance_id", None), body.protocol_type,
            tuple((p.name, p.metadata) for p in body.protocols), getattr(body, "reason", None))


def kio_sync_fields(frame: bytes, version: int):
    try:
        request = decode_request(frame)
    except MalformedRequest:
        return None
    body = request.body
    return (body.group_id, body.generation_id, body.member_id,
            getattr(body, "group_instance_id", None), getattr(body, "protocol_type", None),
            getattr(body, "protocol_name", None),
            tuple((a.member_id, a.assignment) for a in body.assignments))


def mutations(frame: bytes, seed: int, count: int = 300):
    """Frames with one to three bytes changed (lengths, counts, nulls and text among them)."""
    rng = random.Random(seed)
    for _ in range(count):
        mutated = bytearray(frame)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(8, len(mutated))   # the api key, version and id stay
            mutated[at] = rng.choice((0, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        yield bytes(mutated)


@pytest.mark.parametrize("version", JOIN_VERSIONS)
def test_join_reads_what_it_accepts_as_kio_does(version):
    """Whatever the codec accepts, kio accepts too and reads the same fields."""
    for frame in mutations(join_request(version), seed=version):
        fields = decode_join(frame, version)
        if fields is not None:
            assert fields == kio_join_fields(frame, version)


@pytest.mark.parametrize("version", SYNC_VERSIONS)
def test_sync_reads_what_it_accepts_as_kio_does(version):
    for frame in mutations(sync_request(version), seed=100 + version):
        fields = decode_sync(frame, version)
        if fields is not None:
            assert fields == kio_sync_fields(frame, version)
