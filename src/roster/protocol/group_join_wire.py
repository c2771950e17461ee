"""Hand-written codecs for the classic group protocol's two long polls, JoinGroup (api key 11,
v0-9) and SyncGroup (14, v0-5): in an eager rebalance every member sends one of each, the
leader's JoinGroup answer lists every member's metadata and its SyncGroup carries every
member's assignment, so kio's generic reader and writer cost more than the coordinator's own
work (a 1,000-member rebalance: 2,000 requests, two lists of 1,000 entries).

The decoders read only the common shape: every string a required one is given, no tagged fields
(flexible versions), nothing after the request. Anything else returns None, and the handler
hands the frame to the generic path (kio's decode, admission, answer), which answers it as it
always has. The encoders write every version; tests/unit/test_group_join_wire.py checks both
against kio, byte for byte.

JoinGroup request (header v1; v6+ header v2, flexible), in order:
  group_id string, session_timeout_ms int32, rebalance_timeout_ms int32 (v1+), member_id
  string, group_instance_id nullable string (v5+), protocol_type string, protocols [name string,
  metadata bytes], reason nullable string (v8+)
JoinGroup response: throttle_time_ms int32 (v2+), error_code int16, generation_id int32,
  protocol_type nullable string (v7+), protocol_name string (nullable v7+), leader string,
  skip_assignment bool (v9+), member_id string, members [member_id string, group_instance_id
  nullable string (v5+), metadata bytes]
SyncGroup request (header v1; v4+ header v2, flexible): group_id string, generation_id int32,
  member_id string, group_instance_id nullable string (v3+), protocol_type nullable string
  (v5+), protocol_name nullable string (v5+), assignments [member_id string, assignment bytes]
SyncGroup response: throttle_time_ms int32 (v1+), error_code int16, protocol_type and
  protocol_name nullable strings (v5+), assignment bytes
"""
from __future__ import annotations

import struct
from collections.abc import Iterable

from roster.protocol.varint import encode_unsigned, read_unsigned

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
BOOL = struct.Struct(">?")
SESSION_AND_REBALANCE = struct.Struct(">ii")  # JoinGroup's two timeouts (v1+)
HEADER_PREFIX_SIZE = 8  # api_key, api_version, correlation_id
JOIN_FLEXIBLE_FROM = 6
SYNC_FLEXIBLE_FROM = 4
NO_TAGS = b"\0"  # an empty tagged-field section
THROTTLE_NONE = INT32.pack(0)  # roster never throttles


class _Unusual(Exception):
    """Not the common shape: the generic path decides what to make of it."""


# -- reading ---------------------------------------------------------------------------------
# Each reader takes the frame and a position and returns (value, position after it). A read
# past the end raises struct.error or IndexError; the decoders turn every error into None.

def _string(frame: bytes, at: int) -> tuple[str, int]:
    (length,) = INT16.unpack_from(frame, at)
    at += 2
    end = at + length
    if length < 0 or end > len(frame):
        raise _Unusual
    return str(frame[at:end], "utf-8"), end


def _nullable_string(frame: bytes, at: int) -> tuple[str | None, int]:
    (length,) = INT16.unpack_from(frame, at)
    if length == -1:
        return None, at + 2
    return _string(frame, at)


def _bytes(frame: bytes, at: int) -> tuple[bytes, int]:
    (length,) = INT32.unpack_from(frame, at)
    at += 4
    end = at + length
    if length < 0 or end > len(frame):
        raise _Unusual
    return frame[at:end], end


def _count(frame: bytes, at: int) -> tuple[int, int]:
    (count,) = INT32.unpack_from(frame, at)
    if count < 0:
        raise _Unusual
    return count, at + 4


def _compact_string(frame: bytes, at: int) -> tuple[str, int]:
    length_plus_one, at = read_unsigned(frame, at)
    end = at + length_plus_one - 1
    if length_plus_one == 0 or end > len(frame):
        raise _Unusual
    return str(frame[at:end], "utf-8"), end


def _compact_nullable_string(frame: bytes, at: int) -> tuple[str | None, int]:
    if frame[at] == 0:
        return None, at + 1
    return _compact_string(frame, at)


def _compact_bytes(frame: bytes, at: int) -> tuple[bytes, int]:
    length_plus_one, at = read_unsigned(frame, at)
    end = at + length_plus_one - 1
    if length_plus_one == 0 or end > len(frame):
        raise _Unusual
    return frame[at:end], end


def _compact_count(frame: bytes, at: int) -> tuple[int, int]:
    count_plus_one, at = read_unsigned(frame, at)
    if count_plus_one == 0:
        raise _Unusual
    return count_plus_one - 1, at


def _no_tags(frame: bytes, at: int) -> int:
    if frame[at] != 0:
        raise _Unusual
    return at + 1


def _client_id(frame: bytes, flexible: bool) -> tuple[str | None, int]:
    """The request header's client id (a classic string even in header v2), and where the body
    begins."""
    client_id, at = _nullable_string(frame, HEADER_PREFIX_SIZE)
    return client_id, _no_tags(frame, at) if flexible else at


def _expect_end(frame: bytes, at: int) -> None:
    if at != len(frame):
        raise _Unusual


# -- JoinGroup -------------------------------------------------------------------------------

# (client_id, group_id, session_timeout_ms, rebalance_timeout_ms (None at v0), member_id,
#  group_instance_id, protocol_type, protocols ((name, metadata), ...), reason)
JoinFields = tuple


def decode_join(frame: bytes, version: int) -> JoinFields | None:
    """The request's fields from a whole frame (header included, size prefix not), or None when
    it is not of the common shape."""
    try:
        return _decode_join(frame, version)
    except (_Unusual, struct.error, IndexError, UnicodeDecodeError):
        return None


def _decode_join(frame: bytes, version: int) -> JoinFields:
    if version < JOIN_FLEXIBLE_FROM:
        return _decode_join_classic(frame, version)
    return _decode_join_flexible(frame, version)


def _decode_join_flexible(frame: bytes, version: int) -> JoinFields:
    """v6-9 (the Java client's v9): compact strings, tagged fields."""
    client_id, at = _client_id(frame, flexible=True)
    group_id, at = _compact_string(frame, at)
    session_ms, rebalance_ms = SESSION_AND_REBALANCE.unpack_from(frame, at)
    member_id, at = _compact_string(frame, at + 8)
    instance_id, at = _compact_nullable_string(frame, at)
    protocol_type, at = _compact_string(frame, at)
    protocols, at = _join_protocols(frame, at, flexible=True)
    reason = None
    if version >= 8:
        reason, at = _compact_nullable_string(frame, at)
    at = _no_tags(frame, at)
    _expect_end(frame, at)
    return (client_id, group_id, session_ms, rebalance_ms, member_id, instance_id,
            protocol_type, protocols, reason)


def _decode_join_classic(frame: bytes, version: int) -> JoinFields:
    """_decode_join for v0-5 (librdkafka's v5, kafka-python's), every string read inline: a
    call per field would cost as much as the rest of the decode."""
    unpack_int16, unpack_int32 = INT16.unpack_from, INT32.unpack_from
    (length,) = unpack_int16(frame, HEADER_PREFIX_SIZE)
    at = HEADER_PREFIX_SIZE + 2
    client_id = None
    if length >= 0:
        client_id = frame[at:at + length]
        at += length
    elif length != -1:
        raise _Unusual
    (group_length,) = unpack_int16(frame, at)
    at += 2
    group_id = frame[at:at + group_length]
    at += group_length
    (session_ms,) = unpack_int32(frame, at)
    at += 4
    rebalance_ms = None
    if version >= 1:
        (rebalance_ms,) = unpack_int32(frame, at)
        at += 4
    (member_length,) = unpack_int16(frame, at)
    at += 2
    member_id = frame[at:at + member_length]
    at += member_length
    instance_id = None
    if version >= 5:
        (length,) = unpack_int16(frame, at)
        at += 2
        if length >= 0:
            instance_id = str(frame[at:at + length], "utf-8")
            at += length
        elif length != -1:
            raise _Unusual
    (type_length,) = unpack_int16(frame, at)
    at += 2
    protocol_type = frame[at:at + type_length]
    at += type_length
    if min(group_length, member_length, type_length) < 0 or at > len(frame):
        raise _Unusual   # a null where a string is required, or strings past the end
    protocols, at = _join_protocols(frame, at, False)
    _expect_end(frame, at)
    return (None if client_id is None else str(client_id, "utf-8"), str(group_id, "utf-8"),
            session_ms, rebalance_ms, str(member_id, "utf-8"), instance_id,
            str(protocol_type, "utf-8"), protocols, None)


def _join_protocols(frame: bytes, at: int, flexible: bool) -> tuple[tuple, int]:
    protocols = []
    if flexible:
        count, at = _compact_count(frame, at)
        for _ in range(count):
            name, at = _compact_string(frame, at)
            metadata, at = _compact_bytes(frame, at)
            at = _no_tags(frame, at)
            protocols.append((name, metadata))
    else:
        count, at = _count(frame, at)
        for _ in range(count):
            name, at = _string(frame, at)
            metadata, at = _bytes(frame, at)
            protocols.append((name, metadata))
    return tuple(protocols), at


# (member_id, group_instance_id, metadata) of each member listed in the leader's answer
JoinMemberFields = tuple[str, str | None, bytes]


def encode_join_answer(version: int, correlation_id: int, error_code: int, generation: int,
                       protocol_type: str | None, protocol_name: str | None, leader: str,
                       skip_assignment: bool, member_id: str,
                       members: Iterable[JoinMemberFields]) -> bytes:
    """The whole response frame, size prefix included. `protocol_name` None is written as ""
    before v7 (not nullable there), as the generic answer does."""
    flexible = version >= JOIN_FLEXIBLE_FROM
    string = _write_compact_string if flexible else _write_string
    parts = [THROTTLE_NONE] if version >= 2 else []
    parts.append(INT16.pack(error_code) + INT32.pack(generation))
    if version >= 7:
        parts.append(string(protocol_type))
    elif protocol_name is None:
        protocol_name = ""
    parts.append(string(protocol_name))
    parts.append(string(leader))
    if version >= 9:
        parts.append(BOOL.pack(skip_assignment))
    parts.append(string(member_id))
    if flexible:
        _append_members_flexible(parts, members, version)
        parts.append(NO_TAGS)
    else:
        _append_members_classic(parts, members, version)
    return _frame(correlation_id, flexible, parts)


def _append_members_classic(parts: list, members: Iterable[JoinMemberFields],
                            version: int) -> None:
    count_at = len(parts)
    parts.append(b"")  # the count, once known
    count = 0
    with_instance = version >= 5
    for member_id, instance_id, metadata in members:
        parts.append(_write_string(member_id))
        if with_instance:
            parts.append(_write_string(instance_id))
        parts.append(INT32.pack(len(metadata)))
        parts.append(metadata)
        count += 1
    parts[count_at] = INT32.pack(count)


def _append_members_flexible(parts: list, members: Iterable[JoinMemberFields],
                             version: int) -> None:
    count_at = len(parts)
    parts.append(b"")  # the count, once known
    count = 0
    for member_id, instance_id, metadata in members:  # v6+: the instance id is always there
        parts.append(_write_compact_string(member_id))
        parts.append(_write_compact_string(instance_id))
        parts.append(_compact_length(len(metadata)))
        parts.append(metadata)
        parts.append(NO_TAGS)
        count += 1
    parts[count_at] = _compact_length(count)


# -- SyncGroup -------------------------------------------------------------------------------

# (group_id, generation_id, member_id, group_instance_id, protocol_type, protocol_name,
#  assignments ((member_id, assignment), ...))
SyncFields = tuple


def decode_sync(frame: bytes, version: int) -> SyncFields | None:
    """The request's fields from a whole frame (header included, size prefix not), or None when
    it is not of the common shape."""
    try:
        return _decode_sync(frame, version)
    except (_Unusual, struct.error, IndexError, UnicodeDecodeError):
        return None


def _decode_sync(frame: bytes, version: int) -> SyncFields:
    flexible = version >= SYNC_FLEXIBLE_FROM
    string = _compact_string if flexible else _string
    nullable_string = _compact_nullable_string if flexible else _nullable_string
    _, at = _client_id(frame, flexible)
    group_id, at = string(frame, at)
    (generation,) = INT32.unpack_from(frame, at)
    member_id, at = string(frame, at + 4)
    instance_id = protocol_type = protocol_name = None
    if version >= 3:
        instance_id, at = nullable_string(frame, at)
    if version >= 5:
        protocol_type, at = nullable_string(frame, at)
        protocol_name, at = nullable_string(frame, at)
    if flexible:
        assignments, at = _sync_assignments_flexible(frame, at)
        at = _no_tags(frame, at)
    else:
        assignments, at = _sync_assignments_classic(frame, at)
    _expect_end(frame, at)
    return (group_id, generation, member_id, instance_id, protocol_type, protocol_name,
            assignments)


def _sync_assignments_classic(frame: bytes, at: int) -> tuple[tuple, int]:
    count, at = _count(frame, at)
    assignments = []
    append = assignments.append
    unpack_int16, unpack_int32, size = INT16.unpack_from, INT32.unpack_from, len(frame)
    # The leader's lists every member, so _string and _bytes are inlined here. A negative
    # length, or one past the end (the slice comes up short), is left to the generic path.
    for _ in range(count):
        (length,) = unpack_int16(frame, at)
        at += 2
        member_id = frame[at:at + length]
        at += length
        (assignment_length,) = unpack_int32(frame, at)
        at += 4
        assignment = frame[at:at + assignment_length]
        at += assignment_length
        if length < 0 or assignment_length < 0 or at > size:
            raise _Unusual
        append((str(member_id, "utf-8"), assignment))
    return tuple(assignments), at


def _sync_assignments_flexible(frame: bytes, at: int) -> tuple[tuple, int]:
    count, at = _compact_count(frame, at)
    assignments = []
    append = assignments.append
    for _ in range(count):
        member_id, at = _compact_string(frame, at)
        assignment, at = _compact_bytes(frame, at)
        at = _no_tags(frame, at)
        append((member_id, assignment))
    return tuple(assignments), at


def encode_sync_answer(version: int, correlation_id: int, error_code: int,
                       protocol_type: str | None, protocol_name: str | None,
                       assignment: bytes) -> bytes:
    """The whole response frame, size prefix included."""
    flexible = version >= SYNC_FLEXIBLE_FROM
    parts = [THROTTLE_NONE] if version >= 1 else []
    parts.append(INT16.pack(error_code))
    if version >= 5:
        parts.append(_write_compact_string(protocol_type))
        parts.append(_write_compact_string(protocol_name))
    if flexible:
        parts += (_compact_length(len(assignment)), assignment, NO_TAGS)
    else:
        parts += (INT32.pack(len(assignment)), assignment)
    return _frame(correlation_id, flexible, parts)


# -- writing ---------------------------------------------------------------------------------

def _frame(correlation_id: int, flexible: bool, body: list[bytes]) -> bytes:
    """Size prefix and response header (v1, with its empty tagged fields, when flexible) in
    front of the body's parts."""
    header = INT32.pack(correlation_id) + NO_TAGS if flexible else INT32.pack(correlation_id)
    size = len(header) + sum(map(len, body))
    return b"".join((INT32.pack(size), header, *body))


def _write_string(value: str | None) -> bytes:
    if value is None:
        return b"\xff\xff"
    encoded = value.encode()
    return INT16.pack(len(encoded)) + encoded


def _write_compact_string(value: str | None) -> bytes:
    if value is None:
        return b"\0"
    encoded = value.encode()
    return _compact_length(len(encoded)) + encoded


_SMALL_LENGTHS = tuple(bytes((n + 1,)) for n in range(0x7F))  # one varint byte: n + 1 < 0x80


def _compact_length(length: int) -> bytes:
    """A compact length or count (the unsigned varint of length + 1)."""
    if length < 0x7F:
        return _SMALL_LENGTHS[length]
    return encode_unsigned(length + 1)
