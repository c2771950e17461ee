"""A hand-written codec for Heartbeat (api key 12), v0-4: the one request every member sends
every few seconds, so the broker's busiest. Going through kio's generic reader and writer costs
several times what the group logic does; these layouts are fixed and small.

Request header v1 (v0-3) or v2 (v4, flexible); body, in order:
  group_id            string (v4: compact string)
  generation_id       int32
  member_id           string (v4: compact string)
  group_instance_id   nullable string, v3+ (v4: compact nullable string)
  tagged fields       v4
Response header v0 (v0-3) or v1 (v4, tagged fields); body: throttle_time_ms int32 (v1+),
error_code int16, tagged fields (v4). tests/unit/test_heartbeat_wire.py checks every version
byte for byte against kio.
"""
from __future__ import annotations

import struct
from functools import cache

from roster.protocol.errors import MalformedRequest
from roster.protocol.flexible_reading import compact_string, required, skip_tagged_fields, text

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
GENERATION_AND_LENGTH = struct.Struct(">ih")  # generation_id, then member_id's length
HEADER_PREFIX_SIZE = 8  # api_key, api_version, correlation_id
FLEXIBLE_FROM = 4


# (group_id, generation_id, member_id, group_instance_id): a plain tuple
HeartbeatFields = tuple[str, int, str, str | None]

# A member's heartbeats are the same bytes each time but for the correlation id: the fields
# decoded from what follows it are kept, so a steady member's heartbeat is decoded once. The
# memo is keyed by those bytes per version (a v2 and a v3 frame may share them and read
# differently); only frames that decoded cleanly, and whose bytes after the correlation id are
# at most MEMO_TAIL_BYTES (a real heartbeat's are a few hundred at most), enter it. It is
# emptied when it reaches MEMO_ENTRIES, more than the members a broker like this serves, so it
# holds a few megabytes at most: members of a new generation, or a client that varies its
# frames, cost a decode and no more memory.
MEMO_ENTRIES = 16_384
MEMO_TAIL_BYTES = 512
_memo: dict[int, dict[bytes, HeartbeatFields]] = {}


def decode_heartbeat(frame: bytes, version: int) -> HeartbeatFields:
    """The request's fields, from a whole frame (header included, size prefix not)."""
    tail = frame[HEADER_PREFIX_SIZE:]
    memo = _memo.get(version)
    if memo is not None:
        fields = memo.get(tail)
        if fields is not None:
            return fields
    else:
        memo = _memo[version] = {}
    try:
        if version >= FLEXIBLE_FROM:
            fields = _decode_flexible(frame)
        else:
            fields = _decode_classic(frame, version)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise MalformedRequest(f"cannot decode Heartbeat v{version}: {exc}") from exc
    if len(tail) <= MEMO_TAIL_BYTES:
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()
        memo[tail] = fields
    return fields


def _decode_classic(frame: bytes, version: int) -> HeartbeatFields:
    # Inline rather than through _string(): this runs for every heartbeat of every member. A
    # string that claims to run past the end leaves `at` beyond it, which _expect_end rejects.
    (client_id_length,) = INT16.unpack_from(frame, HEADER_PREFIX_SIZE)
    at = HEADER_PREFIX_SIZE + 2 + max(client_id_length, 0)
    (group_length,) = INT16.unpack_from(frame, at)
    at += 2
    group_id = frame[at:at + group_length].decode()
    at += group_length
    generation, member_length = GENERATION_AND_LENGTH.unpack_from(frame, at)
    at += 6
    member_id = frame[at:at + member_length].decode()
    at += member_length
    if group_length < 0 or member_length < 0:
        raise IndexError("null where a string is required")
    instance_id = None
    if version >= 3:
        instance_id, at = _string(frame, at)
    _expect_end(frame, at, version)
    return group_id, generation, member_id, instance_id


def _decode_flexible(frame: bytes) -> HeartbeatFields:
    _, at = _string(frame, HEADER_PREFIX_SIZE)  # client id stays a classic string in header v2
    at = skip_tagged_fields(frame, at)
    group_id, at = compact_string(frame, at)
    (generation,) = INT32.unpack_from(frame, at)
    member_id, at = compact_string(frame, at + 4)
    instance_id, at = compact_string(frame, at)
    at = skip_tagged_fields(frame, at)
    _expect_end(frame, at, FLEXIBLE_FROM)
    return required(group_id), generation, required(member_id), instance_id


def _string(frame: bytes, at: int) -> tuple[str | None, int]:
    (length,) = INT16.unpack_from(frame, at)
    at += 2
    if length < 0:
        return None, at
    return text(frame, at, length), at + length


def _expect_end(frame: bytes, at: int, version: int) -> None:
    if at != len(frame):
        raise MalformedRequest(f"Heartbeat v{version}: {len(frame) - at} bytes after the request")


def encode_heartbeat_answer(version: int, correlation_id: int, error_code: int) -> bytes:
    """The whole response frame, size prefix included."""
    return INT32.pack(correlation_id).join(_frame_around_correlation_id(version, error_code))


@cache
def _frame_around_correlation_id(version: int, error_code: int) -> tuple[bytes, bytes]:
    """The response's bytes before and after its correlation id: only that id varies."""
    body = b""
    if version >= 1:
        body += INT32.pack(0)  # throttle_time_ms: roster never throttles
    body += INT16.pack(error_code)
    if version >= FLEXIBLE_FROM:
        body = b"\0" + body + b"\0"  # empty tagged fields after the header and after the body
    return INT32.pack(4 + len(body)), body
