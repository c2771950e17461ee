"""Versions Kafka 4.4 serves that kio (roster's schema library) has no schema for yet, written by
hand from Kafka 4.4's message JSON (clients/src/main/resources/common/message/*.json):

- DeleteGroups v3: the request is v2's (flexible: request header v2, GroupsNames compact
  array of compact strings, tagged fields); the response adds ErrorMessage, a compact nullable
  string after each result's ErrorCode ("the error message, or null if there was no error"):
    response header v1 (correlation id, tagged fields)
    throttle_time_ms int32
    results compact array of {group_id compact string, error_code int16,
                              error_message compact nullable string, tagged fields}
    tagged fields

A request is decoded with kio's schema of the newest version it knows whose request is the
same, so a handler reads it exactly as that version's; the answer is written from whatever the
handler made (a kio entity of that version or a namespace), fields taken by name. The codec is
symmetric (requests and responses both ways) so tests can speak these versions too.
"""
from __future__ import annotations

import dataclasses
import datetime
import struct
from typing import Any

from roster.protocol.api_keys import ApiKey
from roster.protocol.codec import Request, decode_request as kio_decode_request
from roster.protocol.codec import encode_request as kio_encode_request
from roster.protocol.errors import ErrorCode, MalformedRequest
from roster.protocol.flexible_reading import compact_count, compact_string
from roster.protocol.framing import SIZE, RequestPrefix, read_prefix
from roster.protocol.varint import encode_unsigned, read_unsigned

# (api key, version) -> the version kio knows whose request body and header are the same
SAME_REQUEST = {(ApiKey.DELETE_GROUPS, 3): 2}

_VERSION_AT = 2   # a request frame (after its size): int16 api key, then int16 api version


def has_layout(api_key: int, version: int) -> bool:
    return (api_key, version) in SAME_REQUEST


def kio_version(api_key: int, version: int) -> int:
    """The version whose kio schemas a handler builds its answer with."""
    return SAME_REQUEST.get((api_key, version), version)


def decode_request(frame: bytes, prefix: RequestPrefix | None = None) -> Request:
    prefix = prefix or read_prefix(frame)
    older = SAME_REQUEST.get((prefix.api_key, prefix.api_version))
    if older is None:
        raise MalformedRequest(
            f"no layout for api key {prefix.api_key} version {prefix.api_version}")
    request = kio_decode_request(frame, prefix._replace(api_version=older))
    return dataclasses.replace(request, api_version=prefix.api_version)


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None,
                   body: Any) -> bytes:
    """`body` is a kio request entity of the same-request version."""
    frame = bytearray(kio_encode_request(api_key, SAME_REQUEST[api_key, version],
                                         correlation_id, client_id, body))
    struct.pack_into(">h", frame, SIZE.size + _VERSION_AT, version)
    return bytes(frame)


def _compact_string(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    data = value.encode()
    return encode_unsigned(len(data) + 1) + data


def encode_response(api_key: int, version: int, correlation_id: int, body: Any) -> bytes:
    if (api_key, version) != (ApiKey.DELETE_GROUPS, 3):
        raise ValueError(f"no layout for api key {api_key} version {version} responses")
    out = bytearray(struct.pack(">ib", correlation_id, 0))
    out += struct.pack(">i", int(body.throttle_time.total_seconds() * 1000))
    out += encode_unsigned(len(body.results) + 1)
    for result in body.results:
        out += _compact_string(result.group_id)
        out += struct.pack(">h", int(result.error_code))
        out += _compact_string(getattr(result, "error_message", None)) + b"\x00"
    out += b"\x00"
    return SIZE.pack(len(out)) + bytes(out)


@dataclasses.dataclass(frozen=True, slots=True)
class DeletableGroupResult:
    group_id: str
    error_code: ErrorCode
    error_message: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    throttle_time: datetime.timedelta   # as kio's entities
    results: tuple[DeletableGroupResult, ...]


def _skip_tags(frame: bytes, at: int) -> int:
    count, at = read_unsigned(frame, at)
    for _ in range(count):
        _, at = read_unsigned(frame, at)            # the tag
        size, at = read_unsigned(frame, at)
        at += size
    return at


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, Any]:
    """(correlation id, the answer) of a response frame without its size."""
    if (api_key, version) != (ApiKey.DELETE_GROUPS, 3):
        raise ValueError(f"no layout for api key {api_key} version {version} responses")
    try:
        (correlation_id,) = struct.unpack_from(">i", frame, 0)
        at = _skip_tags(frame, 4)
        (throttle,) = struct.unpack_from(">i", frame, at)
        count, at = compact_count(frame, at + 4)
        results = []
        for _ in range(count):
            group_id, at = compact_string(frame, at)
            (error,) = struct.unpack_from(">h", frame, at)
            message, at = compact_string(frame, at + 2)
            at = _skip_tags(frame, at)
            results.append(DeletableGroupResult(group_id or "", ErrorCode(error), message))
    except (IndexError, struct.error, ValueError) as exc:
        raise MalformedRequest(f"cannot decode DeleteGroups v3 response: {exc}") from exc
    return correlation_id, DeleteGroupsResponse(datetime.timedelta(milliseconds=throttle),
                                                 tuple(results))
