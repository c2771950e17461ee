"""A hand-written codec for ConsumerGroupHeartbeat (api key 68), v0-1: every member of a
consumer group (KIP-848) sends one every few seconds, and kio's generic reader and writer cost
several times what the coordinator spends on a steady heartbeat.

Request header v2 (flexible); body, in order:
  group_id                 compact string
  member_id                compact string
  member_epoch             int32
  instance_id              compact nullable string
  rack_id                  compact nullable string
  rebalance_timeout_ms     int32
  subscribed_topic_names   compact nullable array of compact strings
  subscribed_topic_regex   compact nullable string (v1)
  server_assignor          compact nullable string
  topic_partitions         compact nullable array of {topic_id uuid, partitions compact int32
                           array, tagged fields}
  tagged fields
Response header v1 (tagged fields); body: throttle_time_ms int32, error_code int16,
error_message compact nullable string, member_id compact nullable string, member_epoch int32,
heartbeat_interval_ms int32, assignment (nullable struct: int8 -1 or 1, then topic_partitions
as in the request, tagged fields), tagged fields. tests/unit/test_consumer_heartbeat_wire.py
checks both against kio, byte for byte.

Between changes a member sends only its group, member id and epoch (and its instance id, if it
is static: the Java client sends it every time), every other field null: after the instance id,
such a request is always the same few bytes (STEADY_TAIL). decode_steady() reads just the fields
of those and leaves every other request to decode();
encode_steady_answer() writes the answer to one (no error, no assignment) in one struct.
"""
from __future__ import annotations

import struct

from roster.protocol.errors import MalformedRequest
from roster.protocol.flexible_reading import (
    compact_count,
    compact_string,
    required,
    skip_tagged_fields,
    text,
)
from roster.protocol.varint import encode_unsigned

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
HEADER_PREFIX_SIZE = 8  # api_key, api_version, correlation_id
REGEX_FROM = 1

# (client_id, group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
#  subscribed_topic_names, subscribed_topic_regex, server_assignor, topic_partitions)
Fields = tuple


def decode(frame: bytes, version: int) -> Fields:
    """The request's fields, from a whole frame (header included, size prefix not); topic ids
    as 16-byte strings."""
    try:
        return _decode(frame, version)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise MalformedRequest(f"cannot decode ConsumerGroupHeartbeat v{version}: {exc}") \
            from exc


def _decode(frame: bytes, version: int) -> Fields:
    (client_length,) = INT16.unpack_from(frame, HEADER_PREFIX_SIZE)
    at = HEADER_PREFIX_SIZE + 2
    client_id = None
    if client_length >= 0:
        client_id = text(frame, at, client_length)
        at += client_length
    at = skip_tagged_fields(frame, at)
    group_id, at = compact_string(frame, at)
    member_id, at = compact_string(frame, at)
    (epoch,) = INT32.unpack_from(frame, at)
    instance_id, at = compact_string(frame, at + 4)
    rack_id, at = compact_string(frame, at)
    (rebalance,) = INT32.unpack_from(frame, at)
    at += 4
    count, at = compact_count(frame, at)
    names = None
    if count >= 0:
        names = []
        for _ in range(count):
            name, at = compact_string(frame, at)
            names.append(required(name))
        names = tuple(names)
    regex = None
    if version >= REGEX_FROM:
        regex, at = compact_string(frame, at)
    assignor, at = compact_string(frame, at)
    count, at = compact_count(frame, at)
    owned = None
    if count >= 0:
        owned = []
        for _ in range(count):
            topic_id = frame[at:at + 16]
            if len(topic_id) != 16:
                raise IndexError("topic id runs past the end of the frame")
            n, at = compact_count(frame, at + 16)
            if n < 0:
                raise IndexError("null partitions")
            partitions = struct.unpack_from(f">{n}i", frame, at)
            at = skip_tagged_fields(frame, at + 4 * n)
            owned.append((bytes(topic_id), partitions))
        owned = tuple(owned)
    at = skip_tagged_fields(frame, at)
    if at != len(frame):
        raise MalformedRequest(f"ConsumerGroupHeartbeat v{version}: {len(frame) - at} bytes "
                               "after the request")
    return (client_id, required(group_id), required(member_id), epoch, instance_id, rack_id,
            rebalance, names, regex, assignor, owned)


# after instance_id: rack_id null, rebalance_timeout_ms -1, subscribed topic names null, (v1:
# regex null,) server_assignor, topic_partitions null, no tagged fields
STEADY_TAIL = {0: b"\0\xff\xff\xff\xff\0\0\0\0", 1: b"\0\xff\xff\xff\xff\0\0\0\0\0"}


def decode_steady(frame: bytes, version: int
                  ) -> tuple[str | None, str, str, int, str | None] | None:
    """(client_id, group_id, member_id, member_epoch, instance_id) of a request whose other
    fields are all null and whose strings are short (lengths in one varint byte, no tagged
    fields in the header); None for any other request: decode() reads it, and reports what is
    malformed."""
    tail = STEADY_TAIL.get(version)
    if tail is None or not frame.endswith(tail):
        return None
    try:
        (client_length,) = INT16.unpack_from(frame, HEADER_PREFIX_SIZE)
        at = HEADER_PREFIX_SIZE + 2
        client_id = None
        if client_length >= 0:
            client_id = str(frame[at:at + client_length], "utf-8")
            at += client_length
        if frame[at]:                  # header tagged fields
            return None
        size = frame[at + 1] - 1       # a compact string's length + 1, one byte up to 127
        if not 0 <= size < 127:
            return None
        at += 2
        group_id = str(frame[at:at + size], "utf-8")
        at += size
        size = frame[at] - 1
        if not 0 <= size < 127:
            return None
        member_id = str(frame[at + 1:at + 1 + size], "utf-8")
        at += 1 + size
        (epoch,) = INT32.unpack_from(frame, at)
        size = frame[at + 4] - 1       # the instance id: null (-1) or short
        if not -1 <= size < 127:
            return None
        at += 5
        instance_id = None
        if size >= 0:
            instance_id = str(frame[at:at + size], "utf-8")
            at += size
    except (struct.error, IndexError, UnicodeDecodeError):
        return None
    if at + len(tail) != len(frame):
        return None
    return client_id, group_id, member_id, epoch, instance_id


# the answer to a steady heartbeat: size, correlation id, header tags (0), throttle time (0),
# error code (0), error message (null: 0), member id (compact string: length + 1, bytes), member
# epoch, heartbeat interval, assignment (null: -1), tags (0); one struct per member id length
_steady_answers: dict[int, struct.Struct] = {}


def encode_steady_answer(correlation_id: int, member_id: str, member_epoch: int,
                         heartbeat_interval_ms: int) -> bytes:
    """The whole response frame, size prefix included: no error, no assignment."""
    data = member_id.encode()
    size = len(data)
    layout = _steady_answers.get(size)
    if layout is None:
        if size >= 127:   # a longer length takes more than one varint byte
            return encode_answer(correlation_id, 0, None, member_id, member_epoch,
                                 heartbeat_interval_ms, None)
        layout = _steady_answers[size] = struct.Struct(f">iiBihBB{size}siiBB")
    return layout.pack(layout.size - 4, correlation_id, 0, 0, 0, 0, size + 1, data,
                       member_epoch, heartbeat_interval_ms, 0xFF, 0)


def _compact(value: str | None) -> bytes:
    if value is None:
        return b"\0"
    data = value.encode()
    return encode_unsigned(len(data) + 1) + data


def encode_answer(correlation_id: int, error_code: int, error_message: str | None,
                  member_id: str | None, member_epoch: int, heartbeat_interval_ms: int,
                  assignment) -> bytes:
    """The whole response frame, size prefix included. assignment: None or
    ((16-byte topic id, (partitions...)), ...). The same layout for v0 and v1."""
    parts = [INT32.pack(correlation_id), b"\0", INT32.pack(0), INT16.pack(error_code),
             _compact(error_message), _compact(member_id),
             INT32.pack(member_epoch), INT32.pack(heartbeat_interval_ms)]
    if assignment is None:
        parts.append(b"\xff")
    else:
        parts.append(b"\x01")
        parts.append(encode_unsigned(len(assignment) + 1))
        for topic_id, partitions in assignment:
            parts.append(topic_id)
            parts.append(encode_unsigned(len(partitions) + 1))
            parts.append(struct.pack(f">{len(partitions)}i", *partitions))
            parts.append(b"\0")
        parts.append(b"\0")
    parts.append(b"\0")
    body = b"".join(parts)
    return INT32.pack(len(body)) + body
