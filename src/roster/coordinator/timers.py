"""Timer keys and the events they carry. Scheduling a key again replaces its timer, so a
heartbeat simply re-arms its member's key; an event for a member that is gone does nothing."""
from __future__ import annotations

from dataclasses import dataclass


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat:{group_id}:{member_id}"


def join_key(group_id: str) -> str:
    return f"join:{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync:{group_id}"


@dataclass(frozen=True, slots=True)
class HeartbeatExpired:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class JoinDeadline:
    """The join phase's deadline. During an initial rebalance, `delay_ms`/`remaining_ms` carry
    the delay arithmetic (KIP-134); otherwise both are None."""

    group_id: str
    delay_ms: int | None = None
    remaining_ms: int | None = None


@dataclass(frozen=True, slots=True)
class SyncDeadline:
    group_id: str
    generation: int
