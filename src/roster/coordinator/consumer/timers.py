"""The consumer group coordinator's timer events and its one continuation, each marked for the
shard's dispatch by being listed in ConsumerCoordinator.steps; and the timer keys."""
from __future__ import annotations

from roster.frozen import frozen



@frozen
class ConsumerSessionDeadline:
    """The group's session timer: the earliest member deadline has come."""

    group_id: str


@frozen
class ConsumerRebalanceDeadline:
    group_id: str
    member_id: str
    member_epoch: int


@frozen
class ConsumerWritten:
    """Release `reply` to `token` once the records are written; if they are not (the shard
    has put the group back as it was), answer `error` instead."""

    group_id: str
    token: object
    reply: object
    fenced: tuple[str, ...] = ()       # the members removed: a session again if unwritten
    # classic groups the operation made (a downgrade): unwritten, they are dropped, and the
    # requests parked in them meanwhile are answered the error
    classic_made: tuple = ()


TIMER_RETRY_MS = 500


def session_key(group_id: str) -> str:
    return f"consumer-sessions:{group_id}"


def rebalance_key(group_id: str, member_id: str) -> str:
    return f"consumer-rebalance:{group_id}:{member_id}"
