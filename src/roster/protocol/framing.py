"""Frame-level facts: every Kafka message is an int32 size followed by that many bytes.

A request starts with int16 api_key, int16 api_version, int32 correlation_id in every header
version, so those can be read before knowing which header version applies.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from roster.protocol.errors import MalformedRequest

SIZE = struct.Struct(">i")
REQUEST_PREFIX = struct.Struct(">hhi")


class RequestPrefix(NamedTuple):  # a tuple: built for every request, at a third of the cost
    api_key: int
    api_version: int
    correlation_id: int


_new_tuple = tuple.__new__


def read_size(four_bytes: bytes, max_size: int) -> int:
    """The size of the frame that follows; MalformedRequest when it is negative or too large."""
    return check_size(SIZE.unpack(four_bytes)[0], max_size)


def check_size(size: int, max_size: int) -> int:
    """A frame's size as read from its prefix; MalformedRequest when it is negative, shorter
    than a request header or larger than `max_size`."""
    if size < REQUEST_PREFIX.size:
        raise MalformedRequest(f"frame size {size} is smaller than a request header")
    if size > max_size:
        raise MalformedRequest(
            f"frame size {size} exceeds socket.request.max.bytes ({max_size})")
    return size


def read_prefix(frame: bytes) -> RequestPrefix:
    if len(frame) < REQUEST_PREFIX.size:
        raise MalformedRequest("frame shorter than a request header")
    # what RequestPrefix._make does, without its two Python-level calls (every request)
    return _new_tuple(RequestPrefix, REQUEST_PREFIX.unpack_from(frame, 0))


def with_size(payload: bytes) -> bytes:
    return SIZE.pack(len(payload)) + payload
