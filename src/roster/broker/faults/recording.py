"""A fault as a flight recorder event: kind "fault", keyed by the group it names (else
"roster.faults"), what was done in `extra` (action: armed, fired, removed, cleared, or a
coordinator action's name; the rule; the request it acted on)."""
from __future__ import annotations

from roster.coordinator.triggers import OTHER, Trigger
from roster.observability.events import FAULT, GroupEvent

INJECTED = Trigger(OTHER, detail="injected by a test (roster test mode)")


def fault_event(group_id: str, now_ms: int, extra: dict) -> GroupEvent:
    return GroupEvent(group_id=group_id, protocol="faults", kind=FAULT, generation=-1,
                      trigger=INJECTED, at_ms=now_ms, started_ms=now_ms, extra=extra)
