"""A request frame's shape, checked against its schema before kio decodes it.

kio's compiled reader trusts what a frame claims: an array count is turned into an allocation of
that many slots before a single element is read, so 39 bytes claiming four billion topics abort
the whole process. It also reads a null where the schema has a non-nullable array (handlers then
meet None where Kafka guarantees a tuple), and it refuses tagged fields it does not know, where
Kafka skips them so that older brokers keep serving newer clients.

This module walks the frame the way Kafka's generated readers do, without building anything:
- every array count, string and bytes length is checked against the bytes that remain (an
  element takes at least one byte; a fixed-size element its size), as Kafka's readers check;
- a null where the schema does not allow one is malformed;
- unknown tagged fields are dropped: the frame handed on to kio is rewritten without them (the
  rare path; a frame without any is handed on untouched, at no copy).

Anything else wrong is MalformedRequest, which closes the connection (docs/protocol.md).
The walk is compiled once per (schema) into closures; consecutive fixed-size fields are one skip.
"""
from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from functools import cache
from types import NoneType, UnionType
from typing import Union, get_args, get_origin

from roster.protocol.errors import MalformedRequest
from roster.protocol.varint import encode_unsigned, read_unsigned

# walk(frame, position, end, edits) -> position after the value. `edits` is None on the first,
# checking walk; on the rewriting walk it collects (start, stop, replacement) splices.
Walk = Callable[[bytes, int, int, list | None], int]

_FIXED_SIZES = {
    "int8": 1, "bool": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "timedelta_i32": 4,
    "int64": 8, "timedelta_i64": 8, "datetime_i64": 8, "float64": 8, "uuid": 16,
    "error_code": 2,
}
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class _UnknownTag(Exception):
    """Raised by the checking walk: the frame must be rewritten without unknown tagged fields."""


def checked_frame(frame: bytes, schema: type) -> bytes:
    """The frame to hand to kio: `frame` itself, or a copy without unknown tagged fields.
    MalformedRequest when the frame does not have the shape its schema says."""
    walk = _request_walk(schema)
    try:
        walk(frame, 0, len(frame), None)
        return frame
    except _UnknownTag:
        edits: list = []
        walk(frame, 0, len(frame), edits)
        return _spliced(frame, 0, len(frame), edits)
    except (IndexError, struct.error) as exc:  # a fixed-size read past the end
        raise MalformedRequest(f"frame ends inside a field ({exc})") from None


@cache
def _request_walk(schema: type) -> Walk:
    header = _entity_walk(schema.__header_schema__, is_header=True)
    body = _entity_walk(schema)

    def walk(frame: bytes, position: int, end: int, edits) -> int:
        return body(frame, header(frame, position, end, edits), end, edits)
    return walk


# -- primitives ---------------------------------------------------------------------------------

def _uvarint(frame: bytes, position: int, end: int) -> tuple[int, int]:
    try:
        return read_unsigned(frame, position, end)
    except IndexError as exc:
        raise MalformedRequest(str(exc)) from None


def _length(frame: bytes, position: int, end: int, compact: bool, wide: bool) -> tuple[int, int]:
    """A length or count as the field's encoding holds it, -1 for null."""
    if compact:
        value, position = _uvarint(frame, position, end)
        return value - 1, position
    if wide:
        return _INT32.unpack_from(frame, position)[0], position + 4
    return _INT16.unpack_from(frame, position)[0], position + 2


def _fixed(size: int) -> Walk:
    def walk(frame, position, end, edits):
        position += size
        if position > end:
            raise MalformedRequest("frame ends inside a field")
        return position
    return walk


def _sized(name: str, compact: bool, wide: bool, nullable: bool) -> Walk:
    """A string (int16 length when not compact) or bytes/records (int32 length)."""
    def walk(frame, position, end, edits):
        size, position = _length(frame, position, end, compact, wide)
        if size < 0:
            if size == -1 and nullable:
                return position
            raise MalformedRequest(f"{name}: length {size} where the schema allows no null")
        position += size
        if position > end:
            raise MalformedRequest(f"{name}: length {size} runs past the end of the frame")
        return position
    return walk


def _array(name: str, element: Walk, element_size: int, compact: bool, nullable: bool) -> Walk:
    def walk(frame, position, end, edits):
        count, position = _length(frame, position, end, compact, True)
        if count < 0:
            if count == -1 and nullable:
                return position
            raise MalformedRequest(f"{name}: count {count} where the schema allows no null")
        if count * element_size > end - position:  # Kafka's check, before any allocation
            raise MalformedRequest(
                f"{name}: {count} elements claimed, {end - position} bytes remain")
        for _ in range(count):
            position = element(frame, position, end, edits)
        return position
    return walk


def _nullable_entity(entity: Walk) -> Walk:
    def walk(frame, position, end, edits):
        if position >= end:
            raise MalformedRequest("frame ends inside a field")
        if frame[position] >= 0x80:  # int8 marker: negative means null
            return position + 1
        return entity(frame, position + 1, end, edits)
    return walk


# -- entities -----------------------------------------------------------------------------------

def _is_nullable(annotation) -> bool:
    return get_origin(annotation) in (UnionType, Union) and NoneType in get_args(annotation)


def _without_none(annotation):
    if _is_nullable(annotation):
        return next(a for a in get_args(annotation) if a is not NoneType)
    return annotation


def _field_walk(field, flexible: bool, is_header: bool) -> tuple[Walk, int | None]:
    """The walk of one field, and its size when that is fixed."""
    annotation = field.type
    nullable = _is_nullable(annotation)
    inner = _without_none(annotation)
    kafka_type = field.metadata.get("kafka_type")
    # The request header's client id keeps its int16 length in flexible versions too.
    compact = flexible and not (is_header and field.name == "client_id")
    if get_origin(inner) is tuple:
        element_type = get_args(inner)[0]
        element_nullable = _is_nullable(element_type)
        element_type = _without_none(element_type)
        if is_dataclass(element_type):
            element, size = _entity_walk(element_type), None
        else:
            element, size = _primitive(f"{field.name}[]", kafka_type, compact, element_nullable)
        return _array(field.name, element, size or 1, compact, nullable), None
    if is_dataclass(inner):
        entity = _entity_walk(inner)
        return (_nullable_entity(entity) if nullable else entity), None
    return _primitive(field.name, kafka_type, compact, nullable)


def _primitive(name: str, kafka_type: str | None, compact: bool,
               nullable: bool) -> tuple[Walk, int | None]:
    if kafka_type in _FIXED_SIZES:
        size = _FIXED_SIZES[kafka_type]
        return _fixed(size), size
    if kafka_type == "string":
        return _sized(name, compact, False, nullable), None
    if kafka_type in ("bytes", "records"):
        return _sized(name, compact, True, nullable), None
    raise TypeError(f"no shape known for kafka type {kafka_type!r} ({name})")


@cache
def _entity_walk(schema: type, is_header: bool = False) -> Walk:
    flexible = schema.__flexible__
    steps: list[Walk] = []
    fixed_run = 0  # consecutive fixed-size fields, walked as one skip
    tagged: dict[int, Walk] = {}
    for field in fields(schema):
        walk, size = _field_walk(field, flexible, is_header)
        if "tag" in field.metadata:
            tagged[field.metadata["tag"]] = walk
            continue
        if size is not None:
            fixed_run += size
            continue
        if fixed_run:
            steps.append(_fixed(fixed_run))
            fixed_run = 0
        steps.append(walk)
    if fixed_run:
        steps.append(_fixed(fixed_run))
    if flexible:
        steps.append(_tagged_section(schema.__name__, tagged))
    if len(steps) == 1:
        return steps[0]
    steps_tuple = tuple(steps)

    def walk(frame, position, end, edits):
        for step in steps_tuple:
            position = step(frame, position, end, edits)
        return position
    return walk


def _tagged_section(name: str, known: dict[int, Walk]) -> Walk:
    """A flexible struct's tagged fields: known ones are walked within their declared size,
    unknown ones skipped (and, on the rewriting walk, cut out)."""
    def walk(frame, position, end, edits):
        start = position
        count, position = _uvarint(frame, position, end)
        if count > end - position:
            raise MalformedRequest(f"{name}: {count} tagged fields claimed past the end")
        kept: list[bytes] = []
        changed = False
        for _ in range(count):
            field_start = position
            tag, position = _uvarint(frame, position, end)
            size, position = _uvarint(frame, position, end)
            field_end = position + size
            if field_end > end:
                raise MalformedRequest(f"{name}: tagged field {tag} runs past the end")
            value = known.get(tag)
            if value is None:
                if edits is None:
                    raise _UnknownTag
                changed = True
            elif edits is None:
                _walk_within(value, frame, position, field_end, None, name, tag)
            else:
                inner: list = []
                _walk_within(value, frame, position, field_end, inner, name, tag)
                if inner:
                    changed = True
                    payload = _spliced(frame, position, field_end, inner)
                    kept.append(encode_unsigned(tag) + encode_unsigned(len(payload)) + payload)
                else:
                    kept.append(frame[field_start:field_end])
            position = field_end
        if changed:
            edits.append((start, position, encode_unsigned(len(kept)) + b"".join(kept)))
        return position
    return walk


def _walk_within(value: Walk, frame: bytes, position: int, end: int, edits, name: str,
                 tag: int) -> None:
    try:
        value(frame, position, end, edits)
    except MalformedRequest as exc:
        raise MalformedRequest(f"{name}: tagged field {tag}: {exc}") from None


def _spliced(frame: bytes, start: int, stop: int, edits: list) -> bytes:
    parts = []
    for edit_start, edit_stop, replacement in edits:
        parts.append(frame[start:edit_start])
        parts.append(replacement)
        start = edit_stop
    parts.append(frame[start:stop])
    return b"".join(parts)
