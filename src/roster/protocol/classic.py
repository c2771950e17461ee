"""The request and response versions Kafka 4.0 dropped (KIP-896) and kio therefore has no schema
for, but which tools in the field still send: Produce v0-2, Fetch v0-3, ListOffsets v0,
OffsetCommit v0-1, OffsetFetch v0, CreateTopics v0-1, DeleteTopics v0.

All of them are "classic" (non-flexible) versions: request header v1, response header v0, int16
string lengths, int32 array lengths, no tagged fields. Each layout below is written from Kafka
3.9's message JSON (clients/src/main/resources/common/message/*.json), field names in kio's
snake_case so a handler reads a decoded request exactly as it reads kio's entity of the next
version up, and builds its answer the same way: the encoder takes each field by name from
whatever the handler made (a kio entity of the next version up, or a namespace).

The codec is symmetric (requests and responses both ways) so tests can speak these versions too.
"""
from __future__ import annotations

import datetime
from types import SimpleNamespace
from typing import Any

from roster.protocol.classic_encoding import ClassicReader, ClassicWriter
from roster.protocol.codec import Request
from roster.protocol.errors import MalformedRequest
from roster.protocol.framing import REQUEST_PREFIX, SIZE, RequestPrefix, read_prefix

# field types: the names of ClassicReader's and ClassicWriter's methods, and two more
INT16, INT32, INT64 = "int16", "int32", "int64"
BOOL, STRING, NULLABLE_STRING = "bool", "string", "string?"
NULLABLE_BYTES = "bytes?"   # records: a message set
MILLISECONDS = "int32 ms"   # an int32 of milliseconds, a datetime.timedelta as in kio


class Array(tuple):
    """An array of `item`: a primitive type name, or a tuple of (field name, type) pairs."""

    def __new__(cls, item):
        return super().__new__(cls, (item,))

    @property
    def item(self):
        return self[0]


def _struct(*fields) -> tuple:
    return tuple(fields)


# -- layouts, from Kafka 3.9's JSON -----------------------------------------------------------

_LIST_OFFSETS_V0_REQUEST = _struct(
    ("replica_id", INT32),
    ("topics", Array(_struct(
        ("name", STRING),
        ("partitions", Array(_struct(
            ("partition_index", INT32),
            ("timestamp", INT64),
            ("max_num_offsets", INT32))))))))
_LIST_OFFSETS_V0_RESPONSE = _struct(
    ("topics", Array(_struct(
        ("name", STRING),
        ("partitions", Array(_struct(
            ("partition_index", INT32),
            ("error_code", INT16),
            ("old_style_offsets", Array(INT64)))))))))


def _offset_commit_request(version: int) -> tuple:
    partition = [("partition_index", INT32), ("committed_offset", INT64)]
    if version == 1:
        partition.append(("commit_timestamp", INT64))
    partition.append(("committed_metadata", NULLABLE_STRING))
    group = [("group_id", STRING)]
    if version == 1:
        group += [("generation_id_or_member_epoch", INT32), ("member_id", STRING)]
    return _struct(*group, ("topics", Array(_struct(
        ("name", STRING), ("partitions", Array(_struct(*partition)))))))


_OFFSET_COMMIT_RESPONSE = _struct(  # v0-2 are the same; kio has v2
    ("topics", Array(_struct(
        ("name", STRING),
        ("partitions", Array(_struct(("partition_index", INT32), ("error_code", INT16))))))))
_OFFSET_FETCH_V0_REQUEST = _struct(  # the same as v1
    ("group_id", STRING),
    ("topics", Array(_struct(("name", STRING), ("partition_indexes", Array(INT32))))))
_OFFSET_FETCH_V0_RESPONSE = _struct(  # the same as v1
    ("topics", Array(_struct(
        ("name", STRING),
        ("partitions", Array(_struct(
            ("partition_index", INT32),
            ("committed_offset", INT64),
            ("metadata", NULLABLE_STRING),
            ("error_code", INT16))))))))


def _create_topics_request(version: int) -> tuple:
    topic = _struct(
        ("name", STRING),
        ("num_partitions", INT32),
        ("replication_factor", INT16),
        ("assignments", Array(_struct(("partition_index", INT32), ("broker_ids", Array(INT32))))),
        ("configs", Array(_struct(("name", STRING), ("value", NULLABLE_STRING)))))
    fields = [("topics", Array(topic)), ("timeout_ms", INT32)]
    if version == 1:
        fields.append(("validate_only", BOOL))
    return _struct(*fields)


def _create_topics_response(version: int) -> tuple:
    topic = [("name", STRING), ("error_code", INT16)]
    if version == 1:
        topic.append(("error_message", NULLABLE_STRING))
    return _struct(("topics", Array(_struct(*topic))))


_DELETE_TOPICS_V0_REQUEST = _struct(("topic_names", Array(STRING)), ("timeout_ms", INT32))
_DELETE_TOPICS_V0_RESPONSE = _struct(
    ("responses", Array(_struct(("name", STRING), ("error_code", INT16)))))

def _produce_request(version: int) -> tuple:  # v0-2 are the same; v3 adds transactional_id
    return _struct(
        ("acks", INT16),
        ("timeout", MILLISECONDS),
        ("topic_data", Array(_struct(
            ("name", STRING),
            ("partition_data", Array(_struct(("index", INT32), ("records", NULLABLE_BYTES))))))))


def _produce_response(version: int) -> tuple:
    partition = [("index", INT32), ("error_code", INT16), ("base_offset", INT64)]
    if version >= 2:
        partition.append(("log_append_time_ms", INT64))
    fields = [("responses", Array(_struct(
        ("name", STRING), ("partition_responses", Array(_struct(*partition))))))]
    if version >= 1:
        fields.append(("throttle_time", MILLISECONDS))
    return _struct(*fields)


def _fetch_request(version: int) -> tuple:
    fields = [("replica_id", INT32), ("max_wait", MILLISECONDS), ("min_bytes", INT32)]
    if version >= 3:
        fields.append(("max_bytes", INT32))
    fields.append(("topics", Array(_struct(
        ("topic", STRING),
        ("partitions", Array(_struct(
            ("partition", INT32), ("fetch_offset", INT64), ("partition_max_bytes", INT32))))))))
    return _struct(*fields)


def _fetch_response(version: int) -> tuple:
    fields = [("throttle_time", MILLISECONDS)] if version >= 1 else []
    fields.append(("responses", Array(_struct(
        ("topic", STRING),
        ("partitions", Array(_struct(
            ("partition_index", INT32),
            ("error_code", INT16),
            ("high_watermark", INT64),
            ("records", NULLABLE_BYTES))))))))
    return _struct(*fields)


# (api key, version) -> (request layout, response layout)
_LAYOUTS: dict[tuple[int, int], tuple[tuple, tuple]] = {
    **{(0, v): (_produce_request(v), _produce_response(v)) for v in range(3)},
    **{(1, v): (_fetch_request(v), _fetch_response(v)) for v in range(4)},
    (2, 0): (_LIST_OFFSETS_V0_REQUEST, _LIST_OFFSETS_V0_RESPONSE),
    (8, 0): (_offset_commit_request(0), _OFFSET_COMMIT_RESPONSE),
    (8, 1): (_offset_commit_request(1), _OFFSET_COMMIT_RESPONSE),
    (9, 0): (_OFFSET_FETCH_V0_REQUEST, _OFFSET_FETCH_V0_RESPONSE),
    (19, 0): (_create_topics_request(0), _create_topics_response(0)),
    (19, 1): (_create_topics_request(1), _create_topics_response(1)),
    (20, 0): (_DELETE_TOPICS_V0_REQUEST, _DELETE_TOPICS_V0_RESPONSE),
}
# Top-level request fields a version lacks that handlers read, at Kafka's defaults.
_REQUEST_DEFAULTS: dict[tuple[int, int], dict[str, Any]] = {
    (0, 0): {"transactional_id": None},
    (0, 1): {"transactional_id": None},
    (0, 2): {"transactional_id": None},
    # no MaxBytes before v3: Kafka 3.9 took Int.MaxValue
    **{(1, v): {"max_bytes": 0x7FFFFFFF, "isolation_level": 0} for v in range(3)},
    (1, 3): {"isolation_level": 0},
    (8, 0): {"generation_id_or_member_epoch": -1, "member_id": ""},
    (19, 0): {"validate_only": False},
}


def has_layout(api_key: int, version: int) -> bool:
    return (api_key, version) in _LAYOUTS


# -- reading ----------------------------------------------------------------------------------

class _Bad(ValueError):
    """What the shared classic reader raises here; turned into MalformedRequest."""


def _value(reader: ClassicReader, kind):
    if isinstance(kind, Array):
        count = reader.count()  # no array in these versions is nullable: -1 is refused too
        return tuple(_value(reader, kind.item) for _ in range(count))
    if isinstance(kind, tuple):
        return SimpleNamespace(**{name: _value(reader, sub) for name, sub in kind})
    if kind in (STRING, NULLABLE_STRING):
        text = reader.string()
        if text is None and kind == STRING:
            raise _Bad("null string")
        return text
    if kind == BOOL:
        return reader.int8() != 0
    if kind == NULLABLE_BYTES:
        return reader.bytes_()
    if kind == MILLISECONDS:
        return datetime.timedelta(milliseconds=reader.int32())
    return getattr(reader, kind)()


def _decode(data: bytes, pos: int, *kinds) -> list:
    """The values of `kinds` in turn, from `pos` to the very end of `data`."""
    reader = ClassicReader(memoryview(data)[pos:], _Bad)
    try:
        values = [_value(reader, kind) for kind in kinds]
    except _Bad as exc:
        raise MalformedRequest(str(exc)) from None
    if not reader.at_end():
        raise MalformedRequest("bytes left after the body")
    return values


def decode_request(frame: bytes, prefix: RequestPrefix | None = None) -> Request:
    """A whole request frame (without its size) at one of the versions above."""
    prefix = prefix or read_prefix(frame)
    key = (prefix.api_key, prefix.api_version)
    if key not in _LAYOUTS:
        raise MalformedRequest(f"no layout for api key {prefix.api_key} v{prefix.api_version}")
    try:  # request header v1: the prefix, then the client id
        client_id, body = _decode(frame, REQUEST_PREFIX.size, NULLABLE_STRING, _LAYOUTS[key][0])
    except MalformedRequest as exc:
        raise MalformedRequest(
            f"cannot decode api key {prefix.api_key} v{prefix.api_version}: {exc}") from None
    for name, value in _REQUEST_DEFAULTS.get(key, {}).items():
        setattr(body, name, value)
    return Request(prefix.api_key, prefix.api_version, prefix.correlation_id, client_id, body)


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, SimpleNamespace]:
    """(correlation id, body) of a response frame without its size prefix (header v0)."""
    correlation_id, body = _decode(frame, 0, INT32, _LAYOUTS[(api_key, version)][1])
    return correlation_id, body


# -- writing ----------------------------------------------------------------------------------

def _field(source, name: str):
    return source[name] if isinstance(source, dict) else getattr(source, name)


def _write(out: ClassicWriter, kind, value) -> None:
    if isinstance(kind, Array):
        out.int32(len(value))
        for element in value:
            _write(out, kind.item, element)
    elif isinstance(kind, tuple):
        for name, sub in kind:
            _write(out, sub, _field(value, name))
    elif kind in (STRING, NULLABLE_STRING):
        out.string(value)
    elif kind == BOOL:
        out.int8(1 if value else 0)
    elif kind == NULLABLE_BYTES:
        out.bytes_(value)
    elif kind == MILLISECONDS:
        out.int32(value if isinstance(value, int) else round(value.total_seconds() * 1000))
    else:
        getattr(out, kind)(int(value))


def _framed(out: ClassicWriter) -> bytes:
    return SIZE.pack(len(out.out)) + bytes(out.out)


def encode_response(api_key: int, version: int, correlation_id: int, body: Any) -> bytes:
    """A complete response frame, size prefix included (response header v0)."""
    out = ClassicWriter().int32(correlation_id)
    _write(out, _LAYOUTS[(api_key, version)][1], body)
    return _framed(out)


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None,
                   body: Any) -> bytes:
    """A complete request frame, size prefix included (request header v1); `body` is a dict or
    an object with the layout's field names."""
    out = ClassicWriter().int16(api_key).int16(version).int32(correlation_id).string(client_id)
    _write(out, _LAYOUTS[(api_key, version)][0], body)
    return _framed(out)
