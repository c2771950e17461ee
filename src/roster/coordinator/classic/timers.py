"""Timer keys and the events they carry. Scheduling a key again replaces its timer; an event that
finds nothing to do (its member or generation is gone) does nothing.

Member sessions use one timer per group, not one per member: each member keeps its own session
deadline (see sessions.py), and the group's timer is armed for the earliest of them.
"""
from __future__ import annotations

from roster.frozen import frozen



def heartbeat_key(group_id: str) -> str:
    """The group's session timer. Named "heartbeat" so that, at equal deadlines, it sorts before
    the group's join and sync timers, as every member's own heartbeat timer used to."""
    return f"heartbeat:{group_id}"


def join_key(group_id: str) -> str:
    return f"join:{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync:{group_id}"


def away_key(group_id: str) -> str:
    return f"away:{group_id}"


@frozen
class SessionDeadline:
    """The earliest session deadline of the group's members (and pending member ids) has come."""

    group_id: str


@frozen
class JoinDeadline:
    """The join phase's deadline. During an initial rebalance, `delay_ms`/`remaining_ms` carry
    the delay arithmetic (KIP-134); otherwise both are None."""

    group_id: str
    delay_ms: int | None = None
    remaining_ms: int | None = None


@frozen
class SyncDeadline:
    group_id: str
    generation: int


@frozen
class AwayCheck:
    """During a rebalance the metadata watch started: look for static members that are away
    (coordinator/classic/away.py)."""

    group_id: str
