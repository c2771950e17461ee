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

Every request but Heartbeat passes here, Produce included, so the walk must cost little next
to the request's own work. It is therefore generated: for each schema, Python source with the
fields inlined in wire order (consecutive fixed-size fields one addition, an empty tagged-field
section one byte compare, an array of fixed-size elements one multiplication), compiled once
and cached. Nested structs are functions of their own; tagged fields, which are rare, go
through one general routine.
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


@cache
def _request_walk(schema: type) -> Walk:
    header = _GENERATED.entity(schema.__header_schema__, is_header=True)
    body = _GENERATED.entity(schema)

    def walk(frame: bytes, position: int, end: int, edits) -> int:
        return body(frame, header(frame, position, end, edits), end, edits)
    return walk


# -- what generated code calls on its rare paths ------------------------------------------------

def _short() -> None:
    raise MalformedRequest("frame ends inside a field")


def _no_null(name: str, length: int) -> None:
    raise MalformedRequest(f"{name}: length {length} where the schema allows no null")


def _no_null_array(name: str, count: int) -> None:
    raise MalformedRequest(f"{name}: count {count} where the schema allows no null")


def _past_end(name: str, length: int) -> None:
    raise MalformedRequest(f"{name}: length {length} runs past the end of the frame")


def _claimed(name: str, count: int, remaining: int) -> None:
    raise MalformedRequest(f"{name}: {count} elements claimed, {remaining} bytes remain")


def _uvarint(frame: bytes, position: int, end: int) -> tuple[int, int]:
    try:
        return read_unsigned(frame, position, end)
    except IndexError as exc:
        raise MalformedRequest(str(exc)) from None


# -- the generator ------------------------------------------------------------------------------

def _is_nullable(annotation) -> bool:
    return get_origin(annotation) in (UnionType, Union) and NoneType in get_args(annotation)


def _without_none(annotation):
    if _is_nullable(annotation):
        return next(a for a in get_args(annotation) if a is not NoneType)
    return annotation


class _Source:
    """Lines of Python with an indentation level and fresh local names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1
        self._names = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def fresh(self, stem: str) -> str:
        self._names += 1
        return f"{stem}{self._names}"


class _Generator:
    """Generates, compiles and caches one walk function per schema (and per known tagged
    field); they live in one namespace so that they can call each other by name."""

    def __init__(self) -> None:
        self.namespace: dict = {
            "_I16": struct.Struct(">h").unpack_from, "_I32": struct.Struct(">i").unpack_from,
            "_uv": _uvarint, "_short": _short, "_no_null": _no_null, "_past_end": _past_end,
            "_no_null_array": _no_null_array, "_claimed": _claimed,
        }
        self._names: dict[tuple[type, bool], str] = {}

    def entity(self, schema: type, is_header: bool = False) -> Walk:
        return self.namespace[self._entity_name(schema, is_header)]

    def _entity_name(self, schema: type, is_header: bool = False) -> str:
        key = (schema, is_header)
        if key not in self._names:
            name = f"walk_{len(self._names)}"
            self._names[key] = name
            self._compile(name, self._entity_body(schema, is_header))
        return self._names[key]

    def _compile(self, name: str, source: _Source) -> None:
        text = f"def {name}(f, p, end, edits):\n" + "\n".join(source.lines) + "\n    return p\n"
        exec(compile(text, f"<request shape {name}>", "exec"), self.namespace)  # noqa: S102

    def _entity_body(self, schema: type, is_header: bool) -> _Source:
        out = _Source()
        flexible = schema.__flexible__
        fixed_run = 0
        tagged: dict[int, Walk] = {}
        for field in fields(schema):
            if "tag" in field.metadata:
                tagged[field.metadata["tag"]] = self._tagged_field(field)
                continue
            size = self._fixed_size(field)
            if size is not None:
                fixed_run += size
                continue
            if fixed_run:
                _emit_skip(out, fixed_run)
                fixed_run = 0
            self._emit_field(out, field, flexible and not (is_header and field.name == "client_id"))
        if fixed_run:
            _emit_skip(out, fixed_run)
        if flexible:
            section = f"tags_{len(self.namespace)}"
            self.namespace[section] = _tagged_section(schema.__name__, tagged)
            out("if p >= end: _short()")
            out(f"if f[p]: p = {section}(f, p, end, edits)")
            out("else: p += 1")
        return out

    def _tagged_field(self, field) -> Walk:
        out = _Source()
        self._emit_field(out, field, compact=True)
        name = f"tagged_{len(self.namespace)}"
        self._compile(name, out)
        return self.namespace[name]

    @staticmethod
    def _fixed_size(field) -> int | None:
        annotation = _without_none(field.type)
        if get_origin(annotation) is tuple or is_dataclass(annotation):
            return None
        return _FIXED_SIZES.get(field.metadata.get("kafka_type"))

    def _emit_field(self, out: _Source, field, compact: bool) -> None:
        # The request header's client id keeps its int16 length in flexible versions too: the
        # caller passes compact=False for it.
        nullable = _is_nullable(field.type)
        inner = _without_none(field.type)
        kafka_type = field.metadata.get("kafka_type")
        if get_origin(inner) is tuple:
            element = get_args(inner)[0]
            self._emit_array(out, field.name, _without_none(element), _is_nullable(element),
                             kafka_type, compact, nullable)
        elif is_dataclass(inner):
            walk = self._entity_name(inner)
            if nullable:  # an int8 marker first: negative means null
                out("if p >= end: _short()")
                out("if f[p] >= 0x80: p += 1")
                out(f"else: p = {walk}(f, p + 1, end, edits)")
            else:
                out(f"p = {walk}(f, p, end, edits)")
        elif kafka_type in _FIXED_SIZES:
            _emit_skip(out, _FIXED_SIZES[kafka_type])
        else:
            _emit_sized(out, field.name, kafka_type, compact, nullable)

    def _emit_array(self, out: _Source, name: str, element, element_nullable: bool,
                    kafka_type: str | None, compact: bool, nullable: bool) -> None:
        count = out.fresh("c")
        _emit_length(out, count, compact, wide=True)
        out(f"if {count} < 0:")
        out.depth += 1
        out(f"if {count} != -1: _no_null_array({name!r}, {count})" if nullable
            else f"_no_null_array({name!r}, {count})")
        out.depth -= 1
        out(f"elif {count}:")
        out.depth += 1
        size = None if is_dataclass(element) else _FIXED_SIZES.get(kafka_type)
        # Kafka's check, before anything is allocated: an element takes at least a byte
        out(f"if {count} * {size or 1} > end - p: _claimed({name!r}, {count}, end - p)")
        if size is not None:
            out(f"p += {count} * {size}")
        elif is_dataclass(element):
            out(f"for _ in range({count}): p = {self._entity_name(element)}(f, p, end, edits)")
        else:
            out(f"for _ in range({count}):")
            out.depth += 1
            _emit_sized(out, f"{name}[]", kafka_type, compact, element_nullable)
            out.depth -= 1
        out.depth -= 1


def _emit_skip(out: _Source, size: int) -> None:
    out(f"p += {size}")
    out("if p > end: _short()")


def _emit_length(out: _Source, var: str, compact: bool, wide: bool) -> None:
    """`var` = the length or count at p, -1 for null (compact: an unsigned varint of n + 1)."""
    if compact:
        out("if p >= end: _short()")
        out(f"{var} = f[p] - 1")
        out(f"if {var} < 0x7f: p += 1")
        out("else:")
        out(f"    {var}, p = _uv(f, p, end)")
        out(f"    {var} -= 1")
    else:
        size = 4 if wide else 2
        out(f"if p + {size} > end: _short()")
        out(f"{var} = {'_I32' if wide else '_I16'}(f, p)[0]")
        out(f"p += {size}")


def _emit_sized(out: _Source, name: str, kafka_type: str | None, compact: bool,
                nullable: bool) -> None:
    """A string (int16 length when not compact) or bytes/records (int32 length)."""
    if kafka_type not in ("string", "bytes", "records"):
        raise TypeError(f"no shape known for kafka type {kafka_type!r} ({name})")
    length = out.fresh("n")
    _emit_length(out, length, compact, wide=kafka_type != "string")
    out(f"if {length} < 0:")
    out(f"    if {length} != -1: _no_null({name!r}, {length})" if nullable
        else f"    _no_null({name!r}, {length})")
    out("else:")
    out(f"    p += {length}")
    out(f"    if p > end: _past_end({name!r}, {length})")


_GENERATED = _Generator()


# -- tagged fields (rare: one general routine) -----------------------------------------------

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
