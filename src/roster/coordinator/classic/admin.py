"""DescribeGroups, ListGroups and DeleteGroups of classic groups, and their console view."""
from __future__ import annotations

from roster.coordinator.classic.states import DELETE_GROUP, Action, GroupState
from roster.coordinator.messages import (
    GroupDescription,
    GroupOverview,
    GroupView,
    MemberDescription,
    MemberView,
)
from roster.protocol.consumer_protocol import ConsumerProtocolError, decode_assignment
from roster.protocol.errors import ErrorCode

S = GroupState


def describe(ctx, group_id: str) -> GroupDescription | None:
    """None when the group does not exist (the edge answers per version: Dead or NOT_FOUND)."""
    group = ctx.groups.get(group_id)
    if group is None or group.state is S.DEAD:
        return None
    stable = group.state is S.STABLE
    members = tuple(MemberDescription(
        m.member_id, m.group_instance_id, m.client_id, m.client_host,
        m.metadata(group.protocol_name) if stable else b"", m.assignment)
        for m in group.members.values())
    return GroupDescription(group_id, ErrorCode.none, group.state.value,
                            group.protocol_type or "",
                            group.protocol_name or "" if stable else "", members,
                            group.generation, group.leader_id)


def listed(ctx) -> list[GroupOverview]:
    """Every group but a Dead one (its deletion is being written), in group id order; the
    shard filters them."""
    return sorted((GroupOverview(group.group_id, ctx.name, group.protocol_type or "",
                                 group.state.value, len(group.members), group.generation)
                   for group in ctx.groups.values() if group.state is not S.DEAD),
                  key=lambda overview: overview.group_id)


def validate_delete(group) -> ErrorCode | None:
    """DeleteGroups, as states.DELETE_GROUP says: only Empty groups go (with their offsets,
    shard.py)."""
    answer = DELETE_GROUP[group.state] if group is not None else ErrorCode.group_id_not_found
    match answer:
        case ErrorCode():
            return answer
        case Action.DELETE_GROUP:
            return None
        case _:
            raise ValueError(f"DeleteGroups has no answer {answer!r}")


def console_view(coordinator, group_id: str) -> GroupView | None:
    """A classic group as the console's group page shows it: each member's partitions read
    from its assignment in the embedded consumer protocol, where it is one."""
    group = coordinator.groups.get(group_id)
    if group is None:
        return None
    members = []
    for m in group.members.values():
        try:
            partitions = tuple((t, tuple(ps)) for t, ps in
                               decode_assignment(m.assignment).partitions)
        except ConsumerProtocolError:
            partitions = None
        members.append(MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                  partitions, len(m.assignment),
                                  "leader" if group.leader_id == m.member_id else ""))
    return GroupView(group.state.value, "classic", group.generation, tuple(members))
