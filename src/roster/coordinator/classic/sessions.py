"""Member sessions: when each member (and each pending member id, KIP-394) must be heard from
next, and the one timer per group that watches those deadlines.

A member's deadline is a field of the member; the group's timer is armed for the earliest
deadline. A heartbeat only moves its member's deadline later, so it costs an assignment and a
comparison, and an idle member holds no timer objects at all (a timer per member cost several
hundred bytes per member and a timer operation per heartbeat). When the group's timer fires,
the members whose deadlines have passed are expired in deadline order, and the timer is armed
again for the next earliest deadline: every member still expires exactly one session timeout
after it was last heard from, as with Kafka's per-member timer.

A deadline that passes is cleared, whatever expiry then decides: like Kafka's fired timer, it
is gone until the member is heard from again (a member parked in JoinGroup or SyncGroup is kept
alive, and gets a new deadline when its request is answered).
"""
from __future__ import annotations

from roster.coordinator.classic.group import Group, Member
from roster.coordinator.classic.timers import SessionDeadline, heartbeat_key
from roster.coordinator.results import Result


def reschedule_heartbeat(result: Result, group: Group, member: Member, now: int,
                         timeout_ms: int | None = None) -> None:
    """The member was heard from: its session ends one session timeout (or `timeout_ms`) from
    now."""
    deadline = now + (member.session_timeout_ms if timeout_ms is None else timeout_ms)
    armed = group.session_timer_ms
    if armed is None or deadline < armed:  # a heartbeat moves a deadline later: no timer work
        _arm(result, group, deadline)
    elif deadline == armed:
        # Members rescheduled at the same instant (all of them, when a join phase completes or
        # an assignment is handed out) hold one int rather than one each.
        deadline = armed
    member.session_deadline_ms = deadline


def last_heard(member: Member) -> int | None:
    """When the member was last heard from (its deadline less its session timeout), or None
    once its session has lapsed. Exact for every deadline set above without `timeout_ms`;
    only a new member, whose JoinGroup is parked, has another."""
    deadline = member.session_deadline_ms
    return None if deadline is None else deadline - member.session_timeout_ms


def add_pending(result: Result, group: Group, member_id: str, deadline: int) -> None:
    """A pending member id expires at `deadline` unless it rejoins or leaves first."""
    group.pending_members[member_id] = deadline
    armed = group.session_timer_ms
    if armed is None or deadline < armed:
        _arm(result, group, deadline)


def lapsed(group: Group, now: int) -> list[tuple[int, str, bool]]:
    """(deadline, member id, pending?) of every session that has ended by `now`, earliest first,
    each deadline cleared. The group's timer has fired: it is no longer armed."""
    group.session_timer_ms = None
    due = []
    for member_id, deadline in group.pending_members.items():
        if deadline is not None and deadline <= now:
            due.append((deadline, member_id, True))
            group.pending_members[member_id] = None
    for member in group.members.values():
        deadline = member.session_deadline_ms
        if deadline is not None and deadline <= now:
            due.append((deadline, member.member_id, False))
            member.session_deadline_ms = None
    due.sort()
    return due


def rearm(result: Result, group: Group) -> None:
    """Arm the group's timer for its earliest deadline, if it is not armed for it already."""
    deadlines = [m.session_deadline_ms for m in group.members.values()
                 if m.session_deadline_ms is not None]
    deadlines.extend(d for d in group.pending_members.values() if d is not None)
    if deadlines:
        earliest = min(deadlines)
        if group.session_timer_ms is None or earliest < group.session_timer_ms:
            _arm(result, group, earliest)


def _arm(result: Result, group: Group, deadline: int) -> None:
    group.session_timer_ms = deadline
    result.schedule(heartbeat_key(group.group_id), deadline, SessionDeadline(group.group_id))
