"""A group type the shard builds on first use (GroupTypeRegistration.on_first_use): until then
this stands in its place, holding no group. It answers what the shard asks of every type while
the type has no groups (no ids, nothing listed, nothing to start after loading) from its
declarations alone; anything else (a request of a family it makes, one of its own records
replayed, a view asking for it by name) builds the type first and is the built type's to
answer. The shard then puts the built type where this stood (GroupShard._built)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roster.coordinator.group_type import GroupsById, GroupTypeRegistration
from roster.coordinator.results import Result
from roster.protocol.group_records import Record, UnknownRecord


class UnbuiltType(GroupsById):
    steps: tuple[type, ...] = ()   # it has scheduled nothing: none of its steps exist yet

    def __init__(self, registration: GroupTypeRegistration, build: Callable[[str], Any]) -> None:
        declared = registration.on_first_use
        self.name = registration.name
        self.accepts = declared.accepts
        self.serves = declared.serves
        self._record_types = declared.record_types
        self._build = build
        self.groups: dict = {}

    def own(self, record):
        """One of its records builds the type, which reads it: read back from the log (the
        classic layouts leave it undecoded, its key version known), or one another shard of
        the same broker built in memory (a test's replay), known by its encoded key's version."""
        if type(record) is Record:
            key = record.key
            if type(key) is not UnknownRecord or key.key_version not in self._record_types:
                return None
        elif _key_version(record) not in self._record_types:
            return None
        return self._build(self.name).own(record)

    def listed(self):
        return ()

    def groups_loaded(self, group_ids: list[str], now: int) -> Result:
        return Result()

    def __getattr__(self, name: str):
        # what only a built type can answer (its families' requests: heartbeat, refuse,
        # describe_family; replay after own)
        if name.startswith("_"):   # its own, not yet set (or a protocol's probe)
            raise AttributeError(name)
        return getattr(self._build(self.name), name)


def _key_version(record) -> int | None:
    """The key version of a record of some other type's class, as __consumer_offsets would
    hold it (its encoded key's first two bytes); None when it cannot be encoded."""
    encode = getattr(record, "encode", None)
    if encode is None:
        return None
    key = encode()[0]
    return int.from_bytes(key[:2], "big", signed=True) if len(key) >= 2 else None
