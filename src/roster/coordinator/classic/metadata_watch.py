"""The coordinator watches the partitions of what a classic consumer group subscribes to
(roster's answer to KIP-814's stated gap: "the leader can not detect metadata changes (e.g. new
partition added) while it is offline", and its rejected alternative 2).

When a generation forms, the coordinator notes, for every topic the members' subscriptions
name (protocol type "consumer" only: other protocols' metadata is opaque), the topic's id and
partition count as the topic catalog has them then. A member's heartbeat in a Stable group
compares that note with the catalog (at most once a second per group); a subscribed topic that
gained partitions, appeared, disappeared or was recreated starts a rebalance whose reason is
"metadata changed", whether or not the group's leader is there to notice. A static leader that
rejoins (KIP-814, same generation) is checked the same way.

The catalog is read through the TopicImage protocol the consumer group coordinator (KIP-848)
uses (`lookup(name) -> (topic id, partitions) | None`); the edge hands the coordinator the live
one, tests a dictionary. `group.coordinator.metadata.watch=false` turns all of this off:
then, as in Kafka, only the leader notices.
"""
from __future__ import annotations

from roster.coordinator import triggers as tr
from roster.coordinator.classic import away, rebalance
from roster.coordinator.classic.group import Group
from roster.coordinator.classic.states import GroupState
from roster.coordinator.results import Result
from roster.protocol.consumer_protocol import ConsumerProtocolError, decode_subscription

CHECK_INTERVAL_MS = 1000   # a group's note is compared with the catalog at most this often
REASON = "metadata changed"

Note = dict[str, "tuple[bytes, int] | None"]


def watching(ctx, group: Group) -> bool:
    return (ctx.config.metadata_watch and ctx.topics is not None
            and group.protocol_type == "consumer")


def subscribed(group: Group) -> set[str] | None:
    """The topics the members subscribe to, each distinct subscription decoded once (members
    usually share one: Group.share_protocols); None if one cannot be read."""
    topics: set[str] = set()
    seen: set[bytes] = set()
    for member in group.members.values():
        try:
            metadata = member.metadata(group.protocol_name)
        except KeyError:
            return None
        if metadata in seen:
            continue
        seen.add(metadata)
        try:
            topics.update(decode_subscription(metadata).topics)
        except ConsumerProtocolError:
            return None
    return topics


def after(ctx, group_id: str, now: int) -> None:
    """Called by the coordinator as it leaves any operation that may form a generation: a
    generation not yet noted is noted now, before any reply is released (so before its leader
    can fetch metadata: a change after the note is one the next check sees)."""
    group = ctx.groups.get(group_id)
    if group is None:
        return
    if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
        if group.watched_generation != group.generation:
            take_note(ctx, group, now)
    elif group.state is not GroupState.PREPARING_REBALANCE:
        group.watched, group.watched_generation = None, -1


def before_static_rejoin(ctx, request, now: int) -> Result | None:
    """A static member rejoining a Stable group with a new member id would be given the current
    generation (KIP-345/814; a leader is told to skip the assignment). If the subscribed topics
    changed meanwhile, start the rebalance first: the join then waits for it like any other."""
    if request.member_id or request.group_instance_id is None:   # most joins stop here
        return None
    group = ctx.groups.get(request.group_id)
    if (group is None or group.state is not GroupState.STABLE
            or group.static_member_id(request.group_instance_id) is None):
        return None
    found = changes(ctx, group)
    if not found:
        return None
    result = Result()
    start_rebalance(ctx, group, now, result, found, None, request.group_instance_id)
    return result


def start_rebalance(ctx, group: Group, now: int, result: Result, found: list[str],
                    member_id: str | None, instance_id: str | None) -> None:
    """The subscribed topics changed: rebalance, without waiting for members that are away
    (away.py)."""
    away.begin(group)
    rebalance.prepare_rebalance(ctx, group, now, result, reason(found),
                                trigger(found, member_id, instance_id))
    away.check(ctx, group, now, result)




def take_note(ctx, group: Group, now: int) -> None:
    """At the start of a generation: what the subscribed topics look like now."""
    group.watched, group.watched_generation = None, group.generation
    if not watching(ctx, group) or not group.members:
        return
    topics = subscribed(group)
    if topics is None:
        return
    group.watched = {name: ctx.topics.lookup(name) for name in sorted(topics)}
    group.watch_checked_ms = now


def changes(ctx, group: Group) -> list[str]:
    """How the subscribed topics differ from the note (empty: they do not)."""
    if group.watched is None or not watching(ctx, group):
        return []
    found = []
    for name, before in group.watched.items():
        after = ctx.topics.lookup(name)
        if after == before:
            continue
        if before is None:
            found.append(f"topic {name} appeared with {after[1]} partitions")
        elif after is None:
            found.append(f"topic {name} was deleted")
        elif after[0] != before[0]:
            found.append(f"topic {name} was recreated with {after[1]} partitions")
        else:
            found.append(f"topic {name} went from {before[1]} to {after[1]} partitions")
    return found


def reason(found: list[str]) -> str:
    return f"{REASON}: {'; '.join(found)}"


def trigger(found: list[str], member_id: str | None, instance_id: str | None) -> tr.Trigger:
    """For the flight recorder: who noticed (the heartbeating or rejoining member), and what."""
    return tr.Trigger(tr.METADATA_CHANGED, member_id, instance_id, detail=reason(found))


def due(ctx, group: Group, now: int) -> list[str]:
    """On a heartbeat: the changes, if the group's note is due to be compared."""
    if group.watched is None or now - group.watch_checked_ms < CHECK_INTERVAL_MS:
        return []
    group.watch_checked_ms = now
    return changes(ctx, group)
