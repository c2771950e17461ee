"""Encode requests from kio's schema classes while recording where each field lands.

kio generates one frozen dataclass per (API, version); each field carries `kafka_type` (for
primitives), an optional `tag`, and a type annotation that says whether it is an array (a
tuple), nullable (`| None`) or a nested entity (a dataclass). That is enough to write the wire
format by hand, and writing it by hand is what lets the mutator know the offset of every array
count, string or bytes length, nullable-struct marker, tagged-field section and integer.

Values are plain Python: an entity is a dict of field name -> value, an array a list, a string
str, bytes bytes, a uuid uuid.UUID, an int int. `tests/unit/test_fuzz_schema.py` checks that
what this module writes decodes with kio and re-encodes to the same bytes, for every advertised
(API, version).
"""
from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cache
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

# kafka_type -> struct format for fixed-size primitives
FIXED = {
    "int8": "b", "int16": "h", "int32": "i", "int64": "q",
    "uint8": "B", "uint16": "H", "uint32": "I", "uint64": "Q",
    "float64": "d", "bool": "?", "error_code": "h",
    "timedelta_i32": "i", "timedelta_i64": "q", "datetime_i64": "q",
}
VARIABLE = ("string", "bytes", "records")


@dataclass(frozen=True, slots=True)
class FieldInfo:
    name: str
    kafka_type: str | None      # None for entities
    entity: type | None         # the nested entity class, if any
    array: bool
    nullable: bool              # the array itself, the string/bytes, or the struct
    tag: int | None


@cache
def field_infos(cls: type) -> tuple[FieldInfo, ...]:
    out = []
    for f in fields(cls):
        t: Any = f.type
        nullable = False
        if get_origin(t) in (UnionType, Union):
            args = [a for a in get_args(t) if a is not NoneType]
            nullable = len(args) != len(get_args(t))
            (t,) = args
        array = get_origin(t) is tuple
        if array:
            t = get_args(t)[0]
            if get_origin(t) in (UnionType, Union):  # tuple[X | None, ...]: treat X
                (t,) = [a for a in get_args(t) if a is not NoneType]
        entity = t if is_dataclass(t) else None
        out.append(FieldInfo(f.name, None if entity else f.metadata.get("kafka_type"), entity,
                             array, nullable, f.metadata.get("tag")))
    return tuple(out)


def defined_tags(cls: type) -> tuple[int, ...]:
    return tuple(sorted(i.tag for i in field_infos(cls) if i.tag is not None))


@dataclass(slots=True)
class Span:
    """One encoded item in a frame (offsets into the frame without its size prefix).

    kind: "count" (array count), "strlen", "byteslen", "marker" (nullable struct), "tags"
    (a tagged-field section's count), "int" (a fixed-size number), "uuid", "entity" (a whole
    nested entity: start/end only). [start, end) is the count/length/marker/number itself;
    data_end is where the data it governs ends (the string's bytes, the array's elements, the
    tagged section).
    """
    kind: str
    start: int
    end: int
    path: str
    flexible: bool = False
    nullable: bool = False
    fmt: str = ""               # struct format of an "int"
    data_end: int = 0
    tags: tuple[int, ...] = ()  # the tags a "tags" section's entity defines
    entity: str = ""
    in_tagged: bool = False     # inside a tagged field's value (whose size prefixes it)


# -- primitive writers --------------------------------------------------------------------------

def uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_uvarint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


@dataclass
class Encoder:
    buf: bytearray = field(default_factory=bytearray)
    spans: list[Span] = field(default_factory=list)

    def add(self, kind: str, start: int, path: str, **info) -> Span:
        span = Span(kind, start, len(self.buf), path, **info)
        self.spans.append(span)
        return span

    def fixed(self, kafka_type: str, value, path: str) -> None:
        fmt = ">" + FIXED[kafka_type]
        if kafka_type in ("datetime_i64",) and value is None:
            value = -1
        start = len(self.buf)
        self.buf += struct.pack(fmt, value)
        if kafka_type not in ("bool", "float64"):
            self.add("int", start, path, fmt=fmt)

    def uuid_(self, value: uuid.UUID | None, path: str) -> None:
        start = len(self.buf)
        self.buf += (value or uuid.UUID(int=0)).bytes
        self.add("uuid", start, path)

    def length_prefixed(self, kind: str, data: bytes | None, flexible: bool, nullable: bool,
                        path: str, legacy_fmt: str) -> None:
        start = len(self.buf)
        if flexible:
            self.buf += uvarint(0 if data is None else len(data) + 1)
        else:
            self.buf += struct.pack(legacy_fmt, -1 if data is None else len(data))
        span = self.add(kind, start, path, flexible=flexible, nullable=nullable,
                        fmt="" if flexible else legacy_fmt)
        if data is not None:
            self.buf += data
        span.data_end = len(self.buf)

    def string(self, value: str | None, flexible: bool, nullable: bool, path: str) -> None:
        self.length_prefixed("strlen", None if value is None else value.encode(), flexible,
                             nullable, path, ">h")

    def bytes_(self, value: bytes | None, flexible: bool, nullable: bool, path: str) -> None:
        self.length_prefixed("byteslen", value, flexible, nullable, path, ">i")

    # -- entities ---------------------------------------------------------------------------

    def entity(self, cls: type, value: dict, path: str, is_header: bool = False) -> None:
        flexible = cls.__flexible__
        start = len(self.buf)
        tagged = []
        for info in field_infos(cls):
            if info.tag is not None:
                tagged.append(info)
                continue
            if is_header and info.name == "client_id":  # always a classic nullable string
                self.string(value.get("client_id"), False, True, f"{path}.client_id")
                continue
            self.field(info, value.get(info.name), flexible, f"{path}.{info.name}")
        if flexible:
            self.tagged_section(cls, value, tagged, path)
        self.add("entity", start, path, entity=cls.__name__)

    def tagged_section(self, cls: type, value: dict, tagged: list[FieldInfo], path: str) -> None:
        present = [i for i in sorted(tagged, key=lambda i: i.tag) if value.get(i.name) is not None]
        start = len(self.buf)
        self.buf += uvarint(len(present))
        span = self.add("tags", start, path + ".<tags>", flexible=True,
                        tags=defined_tags(cls), entity=cls.__name__)
        for info in present:
            inner = Encoder()
            # kio writes a tagged field with its non-nullable writer (present means not null)
            inner.field(FieldInfo(info.name, info.kafka_type, info.entity, info.array, False,
                                  None), value[info.name], True, f"{path}.{info.name}")
            self.buf += uvarint(info.tag) + uvarint(len(inner.buf))
            for inner_span in inner.spans:
                inner_span.in_tagged = True
            self.splice_in(inner)
        span.data_end = len(self.buf)

    def splice_in(self, inner: Encoder) -> None:
        base = len(self.buf)
        self.buf += inner.buf
        for s in inner.spans:
            s.start += base
            s.end += base
            if s.data_end:
                s.data_end += base
            self.spans.append(s)

    def field(self, info: FieldInfo, value, flexible: bool, path: str) -> None:
        if info.array:
            start = len(self.buf)
            if flexible:
                self.buf += uvarint(0 if value is None else len(value) + 1)
            else:
                self.buf += struct.pack(">i", -1 if value is None else len(value))
            span = self.add("count", start, path, flexible=flexible, nullable=info.nullable,
                            fmt="" if flexible else ">i")
            for n, item in enumerate(value or ()):
                self.single(info, item, flexible, f"{path}[{n}]", element=True)
            span.data_end = len(self.buf)
            return
        self.single(info, value, flexible, path)

    def single(self, info: FieldInfo, value, flexible: bool, path: str,
               element: bool = False) -> None:
        nullable = info.nullable and not element
        if info.entity is not None:
            if nullable:
                start = len(self.buf)
                self.buf += struct.pack(">b", -1 if value is None else 1)
                self.add("marker", start, path, nullable=True)
                if value is None:
                    return
            self.entity(info.entity, value, path)
            return
        kind = info.kafka_type
        if kind == "string":
            self.string(value, flexible, nullable, path)
        elif kind in ("bytes", "records"):
            self.bytes_(value, flexible, nullable, path)
        elif kind == "uuid":
            self.uuid_(value, path)
        elif kind in FIXED:
            self.fixed(kind, value, path)
        else:
            raise NotImplementedError(f"{path}: kafka_type {kind!r}")


def header_value(api_key: int, api_version: int, correlation_id: int,
                 client_id: str | None) -> dict:
    return {"request_api_key": api_key, "request_api_version": api_version,
            "correlation_id": correlation_id, "client_id": client_id}


def encode_request(schema: type, header: dict, body: dict) -> tuple[bytes, list[Span]]:
    """(frame without its size prefix, spans) for `body` at `schema`, behind its header."""
    enc = Encoder()
    enc.entity(schema.__header_schema__, header, "header", is_header=True)
    enc.entity(schema, body, "body")
    return bytes(enc.buf), enc.spans


def sized(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame)) + frame
