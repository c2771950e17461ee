"""Consumer group member sessions, kept as the classic groups keep theirs
(coordinator/classic/sessions.py): a deadline per member and one timer per group, armed for the
earliest; a heartbeat moves its member's deadline later and sets no timer."""
from __future__ import annotations

from roster.coordinator.consumer.model import ConsumerGroup, ConsumerMember
from roster.coordinator.consumer.timers import ConsumerSessionDeadline, session_key
from roster.coordinator.results import Result


def heard_from(group: ConsumerGroup, member_id: str, deadline: int, result: Result) -> None:
    """The member's session ends at `deadline`; the group's timer is armed only when this is
    earlier than what it is armed for."""
    group.session_deadlines[member_id] = deadline
    armed = group.session_timer_ms
    if armed is None or deadline < armed:
        arm(group, deadline, result)


def arm(group: ConsumerGroup, deadline: int, result: Result) -> None:
    group.session_timer_ms = deadline
    result.schedule(session_key(group.group_id), deadline,
                    ConsumerSessionDeadline(group.group_id))


def lapsed(group: ConsumerGroup, now: int) -> ConsumerMember | None:
    """The group's timer fired: the member whose session ended first, if one has by
    `now` (its deadline cleared), and the timer marked unarmed: the caller arms it again
    for the earliest deadline left (rearm; at once if another has ended too: each
    fencing is an operation of its own)."""
    group.session_timer_ms = None
    deadlines = group.session_deadlines
    lapsed = None
    for member_id, deadline in deadlines.items():
        if deadline <= now and (lapsed is None or deadline < deadlines[lapsed]):
            lapsed = member_id
    member = None
    if lapsed is not None:
        del deadlines[lapsed]
        member = group.members.get(lapsed)
    return member


def rearm(group: ConsumerGroup, result: Result) -> None:
    if group.session_deadlines and group.session_timer_ms is None:
        arm(group, min(group.session_deadlines.values()), result)
