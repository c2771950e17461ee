"""Why a generation began, in the core's words: the trigger kinds and the Trigger the core
notes in its facts (facts.py). The flight recorder's events (observability/events.py) carry
them as they are, so the edge depends on the core's vocabulary and not the reverse.

Pure: plain values."""
from __future__ import annotations

from roster.frozen import frozen


# Why a generation began (Trigger.kind)
MEMBER_JOINED = "member_joined"
STATIC_MEMBER_JOINED = "static_member_joined"
MEMBER_LEFT = "member_left"
SESSION_EXPIRED = "session_expired"
REBALANCE_TIMEOUT = "rebalance_timeout"
STATIC_MEMBER_REPLACED = "static_member_replaced"
LEADER_REJOIN = "leader_rejoin"
SUBSCRIPTION_CHANGED = "subscription_changed"
METADATA_CHANGED = "metadata_changed"
ADMIN_REMOVAL = "admin_removal"
GROUP_DELETED = "group_deleted"
STATIC_REJOIN = "static_rejoin"      # the trigger of a "saved" event
# a static member left saying it will come back (epoch -2: streams groups): no new epoch, its
# work waits for it (the trigger of an "away" event)
STATIC_LEAVE = "static_leave"
TOPOLOGY_CHANGED = "topology_changed"    # a streams group's topology (a newer epoch)
# a member's own metadata that the assignment reads changed (a streams member's process id,
# rack, client tags or topology epoch)
MEMBER_CHANGED = "member_changed"
OTHER = "other"

TRIGGERS = (MEMBER_JOINED, STATIC_MEMBER_JOINED, MEMBER_LEFT, SESSION_EXPIRED,
            REBALANCE_TIMEOUT, STATIC_MEMBER_REPLACED, LEADER_REJOIN, SUBSCRIPTION_CHANGED,
            METADATA_CHANGED, ADMIN_REMOVAL, GROUP_DELETED, STATIC_REJOIN, STATIC_LEAVE,
            TOPOLOGY_CHANGED, MEMBER_CHANGED, OTHER)


@frozen
class Trigger:
    kind: str
    member_id: str | None = None
    instance_id: str | None = None
    client_reason: str | None = None   # KIP-800: JoinGroup/LeaveGroup reason
    fenced_id: str | None = None       # the member id a static member replaced
    detail: str = ""                   # the coordinator's own words (as logged)
