"""What the flight recorder writes: one GroupEvent per group generation (a classic generation, a
consumer or streams group epoch), per rebalance that static membership saved, per static member
that left saying it will come back (streams groups' epoch -2), and per deleted group.

Pure: no I/O, no clock. Events are JSON on the wire (`__roster_group_events`, key = group id),
so any Kafka client can read them.
"""
from __future__ import annotations

import json
from dataclasses import field, fields

# the core's words for why a generation began (coordinator/triggers.py), re-exported
from roster.coordinator.triggers import (  # noqa: F401
    ADMIN_REMOVAL,
    GROUP_DELETED,
    LEADER_REJOIN,
    MEMBER_CHANGED,
    MEMBER_JOINED,
    MEMBER_LEFT,
    METADATA_CHANGED,
    OTHER,
    REBALANCE_TIMEOUT,
    SESSION_EXPIRED,
    STATIC_LEAVE,
    STATIC_MEMBER_JOINED,
    STATIC_MEMBER_REPLACED,
    STATIC_REJOIN,
    SUBSCRIPTION_CHANGED,
    TOPOLOGY_CHANGED,
    TRIGGERS,
    Trigger,
)
from roster.frozen import frozen

# GroupEvent.kind
GENERATION = "generation"   # a new generation (classic) or group epoch (consumer)
SAVED = "saved"             # a static member came back in time: no rebalance
AWAY = "away"               # a static member left with epoch -2: no rebalance (yet)
DELETED = "deleted"
FAULT = "fault"             # a fault injected in test mode, or a request it acted on
# what became of a share group's records (share_records_recorder.py): no generation, -1
LOCKS_EXPIRED = "locks_expired"     # acquisition locks ran out, by member and offsets
ARCHIVED = "archived"               # records archived at share.delivery.count.limit
DEAD_LETTERED = "dead_lettered"     # records written to the group's dead-letter topic
RECORD_KINDS = (LOCKS_EXPIRED, ARCHIVED, DEAD_LETTERED)

CLASSIC = "classic"
CONSUMER = "consumer"


@frozen
class Moved:
    """A partition whose owner changed in this generation (consumer protocol), or a streams
    group's task: then `topic` is its subtopology id and `role` says which of the member's tasks
    it was (active, standby, warmup); "" for a partition. `before`/`after` name the holder
    (instance id, else member id; a standby task held by several: their names, comma-joined)."""

    topic: str
    partition: int
    before: str | None
    after: str | None
    unowned_ms: int | None = None
    role: str = ""

    @property
    def handed_over(self) -> bool:
        """From one member to another. A partition's first assignment (no owner before) is
        not a move, nor is one left without an owner."""
        return self.before is not None and self.after is not None


@frozen
class GroupEvent:
    group_id: str
    protocol: str              # the group type's name: classic | consumer | streams
    kind: str                  # generation | saved | away | deleted
    generation: int
    trigger: Trigger
    at_ms: int                 # when the event was decided
    started_ms: int            # when the rebalance began (= at_ms when there was none)
    join_ms: int | None = None     # classic: join phase; consumer: None
    sync_ms: int | None = None     # classic: sync phase (None if it never completed)
    outcome: str = ""              # stable | empty | interrupted | reconciling | ""
    members_before: tuple[tuple[str, str | None], ...] = ()
    members_after: tuple[tuple[str, str | None], ...] = ()
    moved: tuple[Moved, ...] = ()
    triggers_after: int = 0        # further causes that arrived during the same rebalance
    extra: dict = field(default_factory=dict)

    @property
    def duration_ms(self) -> int:
        return self.at_ms - self.started_ms

    def to_json(self) -> bytes:
        # what dataclasses.asdict would give, without its deep copy of every member and moved
        # partition (a 1,000-member generation's event took a tenth of the rebalance's CPU)
        data = {name: getattr(self, name) for name in _EVENT_FIELDS}
        data["trigger"] = {name: getattr(self.trigger, name) for name in _TRIGGER_FIELDS}
        data["moved"] = [{name: getattr(m, name) for name in _MOVED_FIELDS} for m in self.moved]
        return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> GroupEvent:
        raw = json.loads(data)
        raw["trigger"] = Trigger(**raw["trigger"])
        raw["moved"] = tuple(Moved(**m) for m in raw.get("moved", ()))
        raw["members_before"] = tuple(tuple(m) for m in raw.get("members_before", ()))
        raw["members_after"] = tuple(tuple(m) for m in raw.get("members_after", ()))
        return cls(**raw)


_EVENT_FIELDS = tuple(f.name for f in fields(GroupEvent))
_TRIGGER_FIELDS = tuple(f.name for f in fields(Trigger))
_MOVED_FIELDS = tuple(f.name for f in fields(Moved))


def fault_text(extra: dict) -> str:
    """A fault event's one line: what was done (armed, fired, ...), the fault, its outcome."""
    fault = extra.get("fault") or {}
    what = fault.get("kind", "")
    if fault.get("apis"):
        what += " " + ",".join(fault["apis"][:3]) + ("..." if len(fault["apis"]) > 3 else "")
    if fault.get("error"):
        what += f" {fault['error']}"
    if fault.get("topic"):
        what += f" of {fault['topic']}"
    text = f"{extra.get('action', '')} {what}".strip()
    if extra.get("outcome"):
        text += f": {extra['outcome']}"
    if extra.get("client_id"):
        text += f" (client {extra['client_id']})"
    return text
