"""The hand-written ConsumerGroupHeartbeat codec (protocol/consumer_heartbeat_wire.py) against
kio, byte for byte: requests kio encodes decode to the same fields, answers encode to what kio
writes."""
from __future__ import annotations

import datetime
import io
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.serial import entity_writer

from roster.protocol.build import element, make
from roster.protocol.codec import encode_request, request_schema, response_schema
from roster.protocol.consumer_heartbeat_wire import (
    decode,
    decode_steady,
    encode_answer,
    encode_steady_answer,
)
from roster.protocol.errors import ErrorCode, MalformedRequest
from roster.protocol.framing import read_prefix

names = st.text(min_size=0, max_size=12)
maybe = lambda s: st.none() | s  # noqa: E731
owned = st.lists(st.tuples(st.binary(min_size=16, max_size=16),
                           st.lists(st.integers(0, 2**31 - 1), max_size=5)), max_size=4)


def request_frame(version, client_id, group, member, epoch, instance=None, rack=None,
                  rebalance=-1, topics=None, regex=None, assignor=None, parts=None) -> bytes:
    """A ConsumerGroupHeartbeat request as kio encodes it, without the size prefix; `parts` are
    (topic id bytes, partitions) pairs."""
    schema = request_schema(68, version)
    entry = element(schema, "topic_partitions")
    body = make(schema, group_id=group, member_id=member, member_epoch=epoch,
                instance_id=instance, rack_id=rack,
                rebalance_timeout=datetime.timedelta(milliseconds=rebalance),
                subscribed_topic_names=None if topics is None else tuple(topics),
                subscribed_topic_regex=regex, server_assignor=assignor,
                topic_partitions=None if parts is None else tuple(
                    make(entry, topic_id=uuid.UUID(bytes=t), partitions=tuple(ps))
                    for t, ps in parts))
    return encode_request(68, version, 7, client_id, body)[4:]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([0, 1]), maybe(names), st.text(min_size=1, max_size=10), names,
       st.integers(-2, 2**31 - 1), maybe(names), maybe(names), st.integers(-1, 10**6),
       maybe(st.lists(st.text(min_size=1, max_size=8), max_size=4)), maybe(names),
       maybe(names), maybe(owned))
def test_requests_decode_as_kio_encodes_them(version, client_id, group, member, epoch,
                                             instance, rack, rebalance, topics, regex,
                                             assignor, parts):
    frame = request_frame(version, client_id, group, member, epoch, instance, rack, rebalance,
                          topics, regex, assignor, parts)
    assert read_prefix(frame).api_version == version
    fields = decode(frame, version)
    assert fields == (client_id, group, member, epoch, instance, rack, rebalance,
                      None if topics is None else tuple(topics),
                      regex if version >= 1 else None, assignor,
                      None if parts is None else tuple((t, tuple(ps)) for t, ps in parts))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([0, 1]), st.sampled_from([ErrorCode.none, ErrorCode.fenced_member_epoch]),
       maybe(names), maybe(names), st.integers(-2, 2**31 - 1), st.integers(0, 10**6),
       maybe(owned), st.integers(0, 2**31 - 1))
def test_answers_encode_as_kio_writes_them(version, error, message, member, epoch, interval,
                                           parts, correlation):
    schema = response_schema(68, version)
    assignment = None
    if parts is not None:
        entry = element(schema, "assignment")
        topic = element(entry, "topic_partitions")
        assignment = make(entry, topic_partitions=tuple(
            make(topic, topic_id=uuid.UUID(bytes=t), partitions=tuple(ps)) for t, ps in parts))
    body = make(schema, error_code=error, error_message=message, member_id=member,
                member_epoch=epoch, heartbeat_interval=datetime.timedelta(milliseconds=interval),
                assignment=assignment)
    out = io.BytesIO()
    header = schema.__header_schema__
    entity_writer(header)(out, header(correlation_id=correlation))
    entity_writer(schema)(out, body)
    want = out.getvalue()
    got = encode_answer(correlation, error.value, message, member, epoch, interval,
                        None if parts is None else tuple((t, tuple(ps)) for t, ps in parts))
    assert got[4:] == want and int.from_bytes(got[:4], "big") == len(want)


def test_truncated_or_trailing_bytes_are_malformed():
    frame = request_frame(1, "c", "g", "m", 1)
    for broken in (frame[:-1], frame + b"\0", frame[:20]):
        with pytest.raises(MalformedRequest):
            decode(broken, 1)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([0, 1]), maybe(names), st.text(min_size=1, max_size=10), names,
       st.integers(-2, 2**31 - 1), maybe(names), maybe(names), st.sampled_from([-1, 0, 5000]),
       maybe(st.lists(st.text(min_size=1, max_size=8), max_size=2)), maybe(names),
       maybe(names), maybe(owned))
def test_the_steady_reader_takes_exactly_the_requests_with_every_optional_field_null(
        version, client_id, group, member, epoch, instance, rack, rebalance, topics, regex,
        assignor, parts):
    """decode_steady reads what decode reads when every optional field but the instance id is
    null, and leaves every other request (None) to decode."""
    frame = request_frame(version, client_id, group, member, epoch, instance, rack, rebalance,
                          topics, regex, assignor, parts)
    full = decode(frame, version)
    steady = decode_steady(frame, version)
    if full[5:] == (None, -1, None, None, None, None):
        assert steady == full[:5]
    else:
        assert steady is None
    for broken in (frame[:-1], frame + b"\0", frame[:20]):
        assert decode_steady(broken, version) is None


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([0, 1]), st.text(min_size=100, max_size=200), names,
       st.integers(-2, 2**31 - 1))
def test_long_strings_are_left_to_the_general_reader(version, long, short, epoch):
    for group, member, instance in ((long, short or "m", None), (short or "g", long, None),
                                    (short or "g", short or "m", long)):
        frame = request_frame(version, "c", group, member, epoch, instance)
        fields = decode(frame, version)
        steady = decode_steady(frame, version)
        longest = max(len((f or "").encode()) for f in (group, member, instance))
        assert steady is None if longest >= 127 else steady == fields[:5]


@settings(max_examples=200, deadline=None)
@given(names | st.text(min_size=120, max_size=200), st.integers(-2, 2**31 - 1),
       st.integers(0, 10**6), st.integers(0, 2**31 - 1))
def test_the_steady_answer_is_the_general_answer_without_error_or_assignment(
        member, epoch, interval, correlation):
    assert encode_steady_answer(correlation, member, epoch, interval) == \
        encode_answer(correlation, 0, None, member, epoch, interval, None)
