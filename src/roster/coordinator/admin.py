"""DescribeGroups, ListGroups and DeleteGroups (reference §5)."""
from __future__ import annotations

from dataclasses import dataclass

from roster.coordinator import records
from roster.coordinator.results import AfterWrite, Result
from roster.coordinator.states import GroupState
from roster.protocol.errors import ErrorCode

S = GroupState


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[MemberDescription, ...]
    generation: int = -1
    leader: str | None = None


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


def list_groups(ctx, states: set[str] | None = None, types: set[str] | None = None):
    """(group id, protocol type, state) for groups matching the (lower-cased) filters."""
    listed = []
    for group in ctx.groups.values():
        if group.state is S.DEAD:
            continue
        if states and group.state.value.lower() not in states:
            continue
        if types and "classic" not in types:
            continue
        listed.append((group.group_id, group.protocol_type or "", group.state.value))
    return sorted(listed)


def delete(ctx, group_ids: list[str], now: int, token) -> Result:
    """Delete Empty groups: tombstones for their offsets and for the group, answered once written."""
    result = Result()
    outcome: dict[str, ErrorCode] = {}
    deleted = []
    for group_id in group_ids:
        group = ctx.groups.get(group_id)
        if group is None or group.state is S.DEAD:
            outcome[group_id] = ErrorCode.group_id_not_found
        elif group.state is not S.EMPTY:
            outcome[group_id] = ErrorCode.non_empty_group
        else:
            for topic, partition in sorted(group.offsets):
                result.records.append(records.offset_tombstone(group_id, topic, partition))
            result.records.append(records.group_tombstone(group_id))
            group.transition_to(S.DEAD, now)  # nothing may join while the tombstones are written
            deleted.append(group_id)
            outcome[group_id] = ErrorCode.none
    result.after_write.append(AfterWrite("groups-deleted", "", {
        "token": token, "outcome": outcome, "deleted": deleted}))
    return result


def deletion_written(ctx, data: dict, error: ErrorCode | None, result: Result) -> None:
    outcome = dict(data["outcome"])
    for group_id in data["deleted"]:
        group = ctx.groups.get(group_id)
        if error is None:
            ctx.groups.pop(group_id, None)
        elif group is not None:
            group.deletion_failed()
            outcome[group_id] = error
    result.reply(data["token"], outcome)
