"""Checks several APIs share."""
from __future__ import annotations

from roster.coordinator.classic.group import Group
from roster.protocol.errors import ErrorCode


def member_error(group: Group, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
    """Kafka's validateMember: an instance id must map to exactly this member id (else the
    caller is a fenced duplicate); without one, the member id must be known."""
    if group_instance_id is not None:
        known = group.static_member_id(group_instance_id)
        if known is None:
            return ErrorCode.unknown_member_id
        if known != member_id:
            return ErrorCode.fenced_instance_id
        return None
    if member_id not in group.members:
        return ErrorCode.unknown_member_id
    return None


def generation_member_error(group: Group, member_id: str, group_instance_id: str | None,
                            generation: int) -> ErrorCode | None:
    """The checks SyncGroup and Heartbeat share once their state's table cell lets the caller
    be asked (a Dead group refuses everyone first): the caller is a member (see member_error),
    and speaks of the current generation."""
    error = member_error(group, member_id, group_instance_id)
    if error is not None:
        return error
    if generation != group.generation:
        return ErrorCode.illegal_generation
    return None
