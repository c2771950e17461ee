"""Static membership in streams groups, as Kafka 4.4 defines it (KAFKA-20169): which member a
StreamsGroupHeartbeat with an instance id speaks for, what a temporary leave keeps, and when a
member's change of metadata calls for a new group epoch.

- A static member that leaves with epoch -2 stays in the group, holding its tasks, with its
  session running: its tasks are given to nobody else.
- Rejoining (epoch 0, the same instance id, a new member id) before the session ends replaces
  it: the new member id takes the old member's current and target assignment and its epoch, the
  old id's records are tombstoned, and no other member's assignment changes. The group epoch is
  bumped only if the topology epoch, rack, client tags or process id changed.
- An instance id held by a member that has not left (-2) is refused UNRELEASED_INSTANCE_ID; a
  heartbeat at a later epoch for an instance id now held by another member id is refused
  FENCED_INSTANCE_ID; an instance id the group does not know, UNKNOWN_MEMBER_ID.
- A member that left temporarily still counts towards the group's maximum size; its own rejoin
  is let in at the maximum, a new member is not.
- When its session ends it is removed as any member is (its three records tombstoned, the
  group epoch bumped), and its tasks go to the others.

Each function is pure: it reads the group and returns values (or raises RequestError); the
coordinator writes the records and replays them.
"""
from __future__ import annotations


from roster.coordinator.consumer.validation import fail
from roster.coordinator.streams import records as rec
from roster.coordinator.streams.model import (
    EMPTY,
    JOIN_EPOCH,
    STATIC_LEAVE_EPOCH,
    MemberState,
    StreamsGroup,
    StreamsMember,
    TaskSets,
)
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode


@frozen
class StaticJoin:
    """Who a static heartbeat speaks for. `replaced`: the member id it takes over (its records
    to be tombstoned), with the target assignment that moves to the new id."""

    member: StreamsMember
    replaced: str | None = None
    target: TaskSets | None = None


def static_member(group: StreamsGroup, member_id: str, instance_id: str,
                  member_epoch: int) -> StaticJoin:
    """The member a heartbeat with an instance id speaks for (before its metadata is applied)."""
    existing = group.static_member(instance_id)
    if member_epoch == JOIN_EPOCH:
        if existing is None:
            known = group.members.get(member_id)
            if known is not None:
                return StaticJoin(known)
            return StaticJoin(StreamsMember(member_id, instance_id=instance_id))
        if not existing.left_temporarily:
            fail(ErrorCode.unreleased_instance_id,
                 f"Static member {member_id} with instance id {instance_id} cannot join the "
                 f"group because the instance id is owned by {existing.member_id} member.")
        return StaticJoin(_replacement(existing, member_id), existing.member_id,
                          group.target.get(existing.member_id, EMPTY))
    if existing is None:
        fail(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        fail(ErrorCode.fenced_instance_id,
             f"Static member {member_id} with instance id {instance_id} was fenced by member "
             f"{existing.member_id}.")
    return StaticJoin(existing)


def _replacement(old: StreamsMember, member_id: str) -> StreamsMember:
    """The new member id in the old member's place: its tasks and the epoch it held before it
    left (the -2 record keeps that as its previous epoch)."""
    epoch = old.previous_member_epoch
    return old.replace(member_id=member_id, member_epoch=epoch, previous_member_epoch=epoch,
                       state=MemberState.STABLE)


def leave_temporarily(member: StreamsMember) -> StreamsMember:
    """A static member's heartbeat at epoch -2: it keeps its tasks and remembers its epoch."""
    if member.left_temporarily:
        return member
    return member.replace(member_epoch=STATIC_LEAVE_EPOCH,
                          previous_member_epoch=member.member_epoch)


def bumps_group_epoch(old: StreamsMember | None, new: StreamsMember) -> bool:
    """Whether a member's (re)join changes what the assignment is computed from: a new member,
    or a new topology epoch, rack, client tags or process id."""
    if old is None:
        return True
    return (old.topology_epoch, old.rack_id, old.client_tags, old.process_id) != \
        (new.topology_epoch, new.rack_id, new.client_tags, new.process_id)


def check_group_size(group: StreamsGroup, member_id: str, instance_id: str | None,
                     max_size: int) -> None:
    """GROUP_MAX_SIZE_REACHED for a member that would grow the group past `max_size`; a member
    already in, and a static member coming back to its instance id, are let in."""
    if member_id in group.members:
        return
    if instance_id is not None:
        existing = group.static_member(instance_id)
        if existing is not None and existing.left_temporarily:
            return
    if len(group.members) >= max_size:
        fail(ErrorCode.group_max_size_reached,
             f"The streams group has reached its maximum capacity of {max_size} members.")


def expired(group: StreamsGroup, now: int) -> list[str]:
    """The members whose session has ended at `now`, in member id order (a member that left
    temporarily among them: its session ran on while it was away)."""
    return sorted(m for m, deadline in group.session_deadlines.items()
                  if deadline <= now and m in group.members)


def rejoin_records(group_id: str, join: StaticJoin) -> list:
    """The records of a static member taking its place back: the old member id's three
    tombstones, then the new member id's metadata, target and current assignment (the target it
    takes over is the old one's, so no other member's target changes)."""
    if join.replaced is None:
        return []
    return [*rec.member_tombstones(group_id, join.replaced),
            rec.member_record(group_id, join.member),
            rec.target_record(group_id, join.member.member_id, join.target or EMPTY),
            rec.current_record(group_id, join.member)]
