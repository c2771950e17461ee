"""An injected error, in the answer shape of the API it is injected into.

An API whose spec can refuse a request as a whole (`spec.refuse`, Kafka's getErrorResponse)
answers through it: that is the answer the broker would give for real. For the others
(Produce, Fetch, Metadata, ListOffsets, DescribeGroups, ...) the answer is built from the
response schema: every `error_code` field carries the error, and each array of the answer
that mirrors an array of the request (topics, partitions, groups, coordinator keys) gets one
entry per requested entry, with the entry's names and indexes copied; every other field is
the schema's default, -1 for numbers (offsets, epochs, node ids), empty for strings and
arrays. That is what a client parses an error answer into, whatever else it would hold.
"""
from __future__ import annotations

import datetime
import types
import typing
import uuid
from dataclasses import MISSING, fields, is_dataclass
from functools import cache

from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode

# the request's array an answer's array mirrors, when the names differ
MIRRORS = {"responses": ("topic_data", "topics", "topic_names", "resources"),
           "partition_responses": ("partition_data",),
           "coordinators": ("coordinator_keys",),
           "results": ("groups_names", "topics", "resources", "transactional_ids", "creations",
                       "filters", "alterations", "deletions"),
           "filter_results": ("filters",), "transaction_states": ("transactional_ids",)}
# a request entry's field an answer entry copies, when the names differ
COPIES = {"partition_index": ("partition", "index"), "index": ("partition_index",),
          "name": ("topic", "topic_name"), "group_id": ("key",), "key": ("group_id",)}
# the identifying fields an answer entry copies from the request entry it answers
IDENTIFIERS = frozenset({"name", "topic", "topic_name", "topic_id", "partition_index",
                         "partition", "index", "group_id", "key", "key_type", "member_id",
                         "group_instance_id", "transactional_id", "resource_type",
                         "resource_name", "protocol_type", "protocol_name"})
# a list of plain ids (group ids, coordinator keys) answered entity by entity: the field
# of the answer's entry that holds the id
ID_FIELDS = ("group_id", "key", "name", "transactional_id")
ZERO_INTS = frozenset({"session_id", "heartbeat_interval_ms", "port"})


def error_answer(spec, request, error: ErrorCode):
    """The answer body refusing `request` (decoded: codec.Request) with `error`."""
    if spec.refuse is not None:
        return spec.refuse(request, error)
    return build(response_schema(request.api_key, request.api_version), request.body, error)


def build(schema: type, asked, error: ErrorCode):
    """An entity of `schema` answering the request entity (or plain id) `asked` with
    `error`."""
    values = {}
    for name, kind, entity, array, nullable, has_default, default in _fields(schema):
        if kind == "error_code":
            values[name] = error
            continue
        source = _source(asked, name)
        if entity is not None and array:
            entries = _mirrored(asked, name)
            values[name] = (() if entries is None
                            else tuple(build(entity, entry, error) for entry in entries))
        elif entity is not None:
            inner = source if source is not _NONE and is_dataclass(source) else None
            values[name] = None if nullable and inner is None else build(entity, inner, error)
        elif name in IDENTIFIERS and source is not _NONE and (source is not None or nullable):
            values[name] = source
        elif isinstance(asked, str) and name in ID_FIELDS:
            values[name] = asked
        elif has_default:
            values[name] = default
        else:
            values[name] = _zero(name, kind, array, nullable)
    return schema(**values)


_NONE = object()


def _source(asked, name: str):
    if asked is None or isinstance(asked, str):
        return _NONE
    for candidate in (name, *COPIES.get(name, ())):
        value = getattr(asked, candidate, _NONE)
        if value is not _NONE:
            return value
    return _NONE


def _mirrored(asked, name: str):
    if asked is None or isinstance(asked, str):
        return None
    for candidate in (name, *MIRRORS.get(name, ())):
        value = getattr(asked, candidate, None)
        if isinstance(value, tuple):
            return value
    return None


def _zero(name: str, kind: str | None, array: bool, nullable: bool):
    if array:
        return ()
    if nullable:
        return None
    if kind in ("int8", "int16", "int32", "int64"):
        return 0 if name in ZERO_INTS or name.endswith("error_code") else -1
    if kind in ("uint8", "uint16", "uint32", "uint64", "float64"):
        return 0
    if kind == "bool":
        return False
    if kind == "string":
        return ""
    if kind == "bytes":
        return b""
    if kind == "uuid":
        return uuid.UUID(int=0)
    if kind in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(0)
    if kind == "datetime_i64":
        return datetime.datetime.fromtimestamp(0, datetime.timezone.utc)
    return b""   # records


@cache
def _fields(schema: type) -> tuple:
    """(name, kafka_type, nested entity, array, nullable, has_default, default) per field."""
    out = []
    hints = typing.get_type_hints(schema)
    for f in fields(schema):
        annotation = hints[f.name]
        nullable = False
        if typing.get_origin(annotation) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            nullable = len(args) != len(typing.get_args(annotation))
            annotation = args[0]
        array = typing.get_origin(annotation) is tuple
        if array:
            annotation = typing.get_args(annotation)[0]
            if typing.get_origin(annotation) in (typing.Union, types.UnionType):
                annotation = next(a for a in typing.get_args(annotation)
                                  if a is not type(None))
        entity = annotation if is_dataclass(annotation) else None
        if f.default is not MISSING:
            has_default, default = True, f.default
        elif f.default_factory is not MISSING:
            has_default, default = True, f.default_factory()
        else:
            has_default, default = False, None
        out.append((f.name, f.metadata.get("kafka_type"), entity, array, nullable,
                    has_default, default))
    return tuple(out)
