"""Build kio entities for any version from one description of the newest version.

A handler serving versions 0..N describes its answer once, with the newest field names; `make`
keeps the fields the requested version has and drops the rest, and `element` finds the nested
entity class of a field at that version (kio generates separate classes per version).
"""
from __future__ import annotations

import datetime
import types
import typing
from functools import cache
from typing import Any

NO_THROTTLE = datetime.timedelta(0)


@cache
def field_names(schema: type) -> frozenset[str]:
    return frozenset(schema.__dataclass_fields__)


@cache
def element(schema: type, field: str) -> type:
    """The entity class of `field` (unwrapping `tuple[X, ...]` and `X | None`)."""
    annotation = typing.get_type_hints(schema)[field]
    while True:
        origin = typing.get_origin(annotation)
        if origin is tuple or origin in (typing.Union, types.UnionType):
            annotation = next(a for a in typing.get_args(annotation)
                              if a is not Ellipsis and a is not type(None))
            continue
        return annotation


def make(schema: type, **values: Any) -> Any:
    """schema(**values) without the fields this version lacks; throttle_time defaults to zero."""
    names = field_names(schema)
    kept = {k: v for k, v in values.items() if k in names}
    if "throttle_time" in names and "throttle_time" not in kept:
        kept["throttle_time"] = NO_THROTTLE
    return schema(**kept)


def per_partition(schema: type, wanted_topics, answer) -> tuple:
    """The `topics` of a response that answers each requested partition on its own (ListOffsets,
    DeleteRecords, OffsetDelete): answer(topic entry index, topic entry, requested partition)
    -> that partition's fields."""
    topic_entry = element(schema, "topics")
    partition_entry = element(topic_entry, "partitions")
    return tuple(make(topic_entry, name=wanted.name, partitions=tuple(
        make(partition_entry, **answer(t, wanted, requested))
        for requested in wanted.partitions)) for t, wanted in enumerate(wanted_topics))
