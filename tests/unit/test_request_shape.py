"""The shape check in front of kio: claimed counts and lengths are held to the bytes a frame has,
nulls to what the schema allows, and unknown tagged fields are skipped as Kafka skips them.

A miss here does not fail a test politely: kio's reader aborts the whole test process on an
array count it cannot allocate. That is the point of running these in-process.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roster.broker.handlers import build_registry
from roster.protocol import classic, newer_versions
from roster.protocol.build import element, make
from roster.protocol.codec import decode_request, encode_request, request_schema
from roster.protocol.errors import MalformedRequest
from roster.protocol.request_shape import checked_frame

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
DELETE_GROUPS, DELETE_TOPICS, METADATA, OFFSET_COMMIT, JOIN_GROUP = 42, 20, 3, 8, 11

# The frame from the report: DeleteTopics v5 claiming ~12 billion topic names in 39 bytes.
DELETE_TOPICS_BOMB = bytes.fromhex(
    "000000230014000500000efe00096163632d70726f626500ffffffff2d746f706963000003e800")


def _golden_requests() -> list[bytes]:
    return [bytes.fromhex(json.loads(path.read_text())["request_hex"])
            for path in sorted(GOLDEN.glob("*/*.json"))]


def test_every_served_version_has_a_shape():
    """A schema the walk cannot describe would surface as an internal error on first use."""
    for spec in build_registry():
        first = spec.decoded_from if spec.decoded_from is not None else spec.min_version
        for version in range(first, spec.max_version + 1):
            if classic.has_layout(spec.key, version):
                continue  # decoded by roster.protocol.classic, which checks counts itself
            version = newer_versions.kio_version(spec.key, version)  # the same request
            schema = request_schema(spec.key, version)
            assert schema is not None, (spec.name, version)
            frame = encode_request(spec.key, version, 1, "shape", _empty(schema))[4:]
            assert checked_frame(frame, schema) is frame


def _empty(schema):
    """The schema's entity with every array empty and every other field at a neutral value."""
    from dataclasses import fields
    values = {}
    for field in fields(schema):
        values[field.name] = _neutral(schema, field)
    return schema(**values)


def _neutral(schema, field):
    import datetime
    import uuid
    from typing import get_args, get_origin
    annotation = field.type
    args = get_args(annotation)
    if get_origin(annotation) is tuple or any(get_origin(a) is tuple for a in args):
        return ()
    kafka_type = field.metadata.get("kafka_type")
    if kafka_type is None:
        return _empty(element(schema, field.name))
    return {"string": "", "bytes": b"", "records": None, "bool": False, "uuid": uuid.UUID(int=0),
            "timedelta_i32": datetime.timedelta(0), "timedelta_i64": datetime.timedelta(0),
            "float64": 0.0}.get(kafka_type, 0)


def test_golden_frames_pass_untouched():
    frames = _golden_requests()
    assert frames
    for frame in frames:
        schema = request_schema(*struct.unpack(">hh", frame[:4]))
        assert checked_frame(frame, schema) is frame


def test_a_count_beyond_the_frame_is_malformed_before_any_allocation():
    with pytest.raises(MalformedRequest, match="topic_names: .* elements claimed"):
        decode_request(DELETE_TOPICS_BOMB[4:])


@pytest.mark.parametrize("count", [b"\x7f\xff\xff\xff", b"\x00\x00\x10\x00"])
def test_legacy_array_counts_are_held_to_the_remaining_bytes(count):
    # DeleteGroups v1: int32 count of group names, then nothing.
    frame = bytes.fromhex("002a000100000001ffff") + count
    with pytest.raises(MalformedRequest, match="elements claimed"):
        decode_request(frame)


def test_a_string_length_beyond_the_frame_is_malformed():
    frame = bytes.fromhex("002a000100000001ffff" "00000001" "7fff" "6162")
    with pytest.raises(MalformedRequest, match="runs past the end"):
        decode_request(frame)


@pytest.mark.parametrize("frame", [
    bytes.fromhex("002a000100000001ffff" "ffffffff"),  # legacy: count -1
    bytes.fromhex("002a0002000000010000" "00" "00" "00"),  # compact: count 0 means null
])
def test_null_where_the_schema_needs_an_array_is_malformed(frame):
    with pytest.raises(MalformedRequest, match="allows no null"):
        decode_request(frame)


def test_null_where_the_schema_allows_it_decodes():
    # Metadata v12: a null topics array means "all topics".
    schema = request_schema(METADATA, 12)
    frame = encode_request(METADATA, 12, 7, "c", make(
        schema, topics=None, allow_auto_topic_creation=False,
        include_topic_authorized_operations=False))[4:]
    assert decode_request(frame).body.topics is None


def _with_unknown_tags(frame: bytes, where: int) -> bytes:
    """`frame` with its tagged-field section at `where` (a 0 byte) replaced by two unknown tags."""
    assert frame[where] == 0
    unknown = bytes([2, 100, 3]) + b"abc" + bytes([0x81, 0x01, 1]) + b"z"  # tags 100 and 129
    return frame[:where] + unknown + frame[where + 1:]


def _delete_groups_v2(*names: str) -> bytes:
    schema = request_schema(DELETE_GROUPS, 2)
    return encode_request(DELETE_GROUPS, 2, 9, "client", make(schema, groups_names=names))[4:]


def test_unknown_tagged_fields_are_skipped_in_the_header_and_the_body():
    plain = _delete_groups_v2("a", "b")
    header_end = 2 + 2 + 4 + 2 + len("client")
    body_end = len(plain) - 1
    for where in (header_end, body_end):
        tagged = _with_unknown_tags(plain, where)
        assert decode_request(tagged) == decode_request(plain)


def test_unknown_tagged_fields_inside_array_elements_are_skipped():
    schema = request_schema(OFFSET_COMMIT, 9)
    topic = element(schema, "topics")
    partition = element(topic, "partitions")
    plain = encode_request(OFFSET_COMMIT, 9, 3, None, make(
        schema, group_id="g", generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=(make(topic, name="t", partitions=tuple(
            make(partition, partition_index=i, committed_offset=i, committed_leader_epoch=-1,
                 committed_metadata="m") for i in range(3))),)))[4:]
    # Each partition ends with its own empty tagged section: give the second one unknown tags.
    second_partition_end = plain.index(b"\x00\x00\x00\x01") + 4 + 8 + 4 + 2
    tagged = _with_unknown_tags(plain, second_partition_end)
    assert decode_request(tagged) == decode_request(plain)


def test_a_tagged_field_that_runs_past_the_frame_is_malformed():
    plain = _delete_groups_v2("a")
    broken = plain[:-1] + bytes([1, 100, 50]) + b"x"
    with pytest.raises(MalformedRequest, match="tagged field 100 runs past the end"):
        decode_request(broken)


def test_overlong_varints_are_malformed():
    frame = bytes.fromhex("002a0002000000010000" "00") + b"\xff" * 6
    with pytest.raises(MalformedRequest, match="varint"):
        decode_request(frame)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_real_frames_never_get_past_the_check_unsafely(data):
    """Truncations and overwritten bytes of real clients' frames: decoding either succeeds or
    raises MalformedRequest; nothing else, and never an abort."""
    frames = _golden_requests()
    frame = data.draw(st.sampled_from(frames))
    body = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(8, len(body) - 1))
        body[position] = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, 0x01]))
    cut = data.draw(st.integers(8, len(body)))
    try:
        decode_request(bytes(body[:cut]))
    except MalformedRequest:
        pass
