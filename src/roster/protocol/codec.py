"""Request decoding and response encoding through kio, with schema lookups cached.

kio generates one frozen dataclass per (API, version) from Kafka's message schemas, including
which header version each uses (flexible versions carry tagged fields); the versions it has not
generated yet are made the same way in protocol/schema_extensions.py, looked up first. Looking a schema up costs
~2 us, so every lookup here is cached; the decode itself runs in kio's Rust extension.
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from roster.frozen import frozen
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import MalformedRequest
from roster.protocol.framing import SIZE, RequestPrefix, read_prefix
from roster.protocol.request_shape import checked_frame

# the APIs some of whose versions protocol/schema_extensions.py declares: its dataclasses (and
# the kio streams schemas they build on) are made on the first lookup of one of these, not at
# every start of a broker or a client that never speaks them
_EXTENDED = frozenset({ApiKey.STREAMS_GROUP_DESCRIBE, ApiKey.STREAMS_GROUP_HEARTBEAT,
                       ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE})


def _extended(api_key: int, api_version: int):
    """(request schema, response schema) of protocol/schema_extensions.py, else None."""
    if api_key not in _EXTENDED:
        return None
    from roster.protocol.schema_extensions import SCHEMAS
    return SCHEMAS.get((api_key, api_version))

_SIZE_AND_CORRELATION = struct.Struct(">ii")


@frozen
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any  # the kio request entity
    # what the dispatcher's admission step found (broker/network/admission.py): per-element refusals
    # and resolved topics, for the handlers whose spec declares resources
    admission: Any = None


@cache
def request_schema(api_key: int, api_version: int) -> type | None:
    extended = _extended(api_key, api_version)
    if extended is not None:
        return extended[0]
    try:
        return load_request_schema(api_key, api_version)
    except Exception:  # kio raises its own index errors for unknown keys and versions
        return None


@cache
def response_schema(api_key: int, api_version: int) -> type:
    extended = _extended(api_key, api_version)
    return extended[1] if extended is not None else load_response_schema(api_key, api_version)


@cache
def _reader(schema: type):
    return entity_reader(schema)


@cache
def _writer(schema: type):
    return entity_writer(schema)


def decode_request(frame: bytes, prefix: RequestPrefix | None = None) -> Request:
    """Decode a whole request frame (without its size) at a version kio knows."""
    prefix = prefix or read_prefix(frame)
    schema = request_schema(prefix.api_key, prefix.api_version)
    if schema is None:
        raise MalformedRequest(
            f"no schema for api key {prefix.api_key} version {prefix.api_version}")
    frame = checked_frame(frame, schema)  # kio trusts claimed counts: check them first
    try:
        header, used = _reader(schema.__header_schema__)(frame, 0)
        body, _ = _reader(schema)(frame, used)
    except (SerialError, ValueError, TypeError, OverflowError, KeyError) as exc:
        raise MalformedRequest(
            f"cannot decode api key {prefix.api_key} v{prefix.api_version}: {exc}") from exc
    return Request(prefix.api_key, prefix.api_version, prefix.correlation_id,
                   header.client_id, body)


def _framed(out: io.BytesIO) -> bytes:
    """The frame written into `out` after 4 placeholder bytes, with its size filled in.

    getvalue() hands over BytesIO's own buffer when nothing else holds it, where bytes() of
    getbuffer() copied the whole frame (for a 1 MiB Fetch response, ~0.9 ms on this machine)."""
    size = out.tell() - SIZE.size
    out.seek(0)
    out.write(SIZE.pack(size))
    return out.getvalue()


class EncodedBody(bytes):
    """A response body a handler encoded itself (for a hot path kio's generic writer is too slow
    for); encode_response only puts the header and size in front of it."""


@cache
def _header_after_correlation_id(api_key: int, api_version: int) -> bytes:
    """What the response header holds after the correlation id: nothing (header v0) or an empty
    tagged-field section (v1), taken from kio's own encoding of the header."""
    header_schema = response_schema(api_key, api_version).__header_schema__
    out = io.BytesIO()
    _writer(header_schema)(out, header_schema(correlation_id=0))
    return out.getvalue()[4:]


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """A complete response frame, size prefix included. `body` is a kio entity or EncodedBody."""
    if type(body) is EncodedBody:
        rest = _header_after_correlation_id(api_key, api_version)
        return _SIZE_AND_CORRELATION.pack(4 + len(rest) + len(body), correlation_id) + rest + body
    schema = response_schema(api_key, api_version)
    header_schema = schema.__header_schema__
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    _writer(header_schema)(out, header_schema(correlation_id=correlation_id))
    _writer(schema)(out, body)
    return _framed(out)


def encode_request(api_key: int, api_version: int, correlation_id: int,
                   client_id: str | None, body: Any) -> bytes:
    """A complete request frame, size prefix included (used by roster's own clients and tests)."""
    schema = request_schema(api_key, api_version)
    if schema is None:
        raise ValueError(f"no schema for api key {api_key} version {api_version}")
    header_schema = schema.__header_schema__
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    _writer(header_schema)(out, header_schema(
        request_api_key=api_key, request_api_version=api_version,
        correlation_id=correlation_id, client_id=client_id))
    _writer(schema)(out, body)
    return _framed(out)


def decode_response(api_key: int, api_version: int, frame: bytes) -> tuple[int, Any]:
    """(correlation id, body) of a response frame without its size prefix."""
    schema = response_schema(api_key, api_version)
    header, used = _reader(schema.__header_schema__)(frame, 0)
    body, _ = _reader(schema)(frame, used)
    return header.correlation_id, body
