"""Members that a rebalance started by the metadata watch does not wait for (issue 22).

Kafka's join phase waits up to the rebalance timeout (max.poll.interval.ms: 5 minutes by
default) for every member, and a static member keeps its place while it is away. In Kafka only
the leader starts a rebalance for new partitions, so a dead static leader starts none: the
others keep consuming what they have, and only its partitions wait for its session to end.
roster's watch (metadata_watch.py) starts that rebalance itself; if its join phase then waited
for the dead member like any other, every member would revoke everything and wait for minutes
(for a dead dynamic member, until its session ends: still a stall Kafka does not have). The
watch must never leave a group worse off than Kafka would, so during a rebalance it started:

- a member that has not rejoined and has not been heard from for a third of its session
  timeout is *away* (a third: the longest heartbeat interval Kafka's clients advise,
  heartbeat.interval.ms <= session.timeout.ms / 3; every member that is alive is heard from
  more often, and one told REBALANCE_IN_PROGRESS by a heartbeat has that long again to send
  its JoinGroup). The join phase completes without it, as if it had rejoined with the
  subscription it last sent: the new leader assigns around it;
- it is a member of the new generation, and what the leader assigns it waits for it. It is not
  expected to SyncGroup and its session is not renewed: it still ends one session timeout after
  the member was last heard from. A static member back within that session (a restart:
  JoinGroup with its instance id and no member id, KIP-345/814) is a static member rejoining a
  Stable group and gets the assignment kept for it, without a rebalance. If its session ends
  first, it is removed and the group rebalances, as in Kafka. (A dynamic member that restarts
  comes back as a new member, and that rebalances, as in Kafka.)

A member counted as away that was only slow is no worse off: it is in the new generation with
the subscription it last sent, and its JoinGroup gets that generation without a rebalance.

Who is away is looked at when the rebalance starts and then when the next member that has not
rejoined may become away, at most once a second per group (each look scans the members
once; every join asks only whether everyone waited for has joined: Group.all_joined).
"""
from __future__ import annotations

from roster.coordinator.classic import rebalance
from roster.coordinator.classic.group import Group, Member
from roster.coordinator.classic.sessions import last_heard
from roster.coordinator.classic.states import GroupState
from roster.coordinator.classic.timers import AwayCheck, away_key
from roster.coordinator.results import Result

AWAY_AFTER_SESSION_PART = 3   # away once this part of its session passed without a word
CHECK_INTERVAL_MS = 1000


def begin(group: Group) -> None:
    """The rebalance about to start is the watch's: it does not wait for away members."""
    group.away = {}


def away_from(member: Member) -> int:
    """When a member that has not rejoined counts as away."""
    heard = last_heard(member)
    if heard is None:
        return 0
    return heard + member.session_timeout_ms // AWAY_AFTER_SESSION_PART


def check(ctx, group: Group, now: int, result: Result) -> None:
    """Count the members that are away by now; complete the join phase if everyone else has
    rejoined, or look again when the next one may be away."""
    if group.away is None or group.state is not GroupState.PREPARING_REBALANCE:
        return
    upcoming = None
    for member in group.members.values():
        if group.is_joining(member) or member.member_id in group.away:
            continue
        when = away_from(member)
        if when <= now:
            group.away[member.member_id] = None
        elif upcoming is None or when < upcoming:
            upcoming = when
    rebalance.maybe_complete_join(ctx, group, now, result)
    if group.state is GroupState.PREPARING_REBALANCE and upcoming is not None:
        result.schedule(away_key(group.group_id), max(upcoming, now + CHECK_INTERVAL_MS),
                        AwayCheck(group.group_id))
