"""The only place the classic groups' records are built (Kafka's newGroupMetadataRecord,
newEmptyGroupMetadataRecord and the group tombstone); offsets' records are the shard's
(coordinator/records.py)."""
from __future__ import annotations

from roster.coordinator.classic.group import Group
from roster.protocol.group_records import GroupKey, GroupValue, MemberValue, Record


def group_metadata(group: Group, assignments: dict[str, bytes] | None = None,
                   now_ms: int | None = None) -> Record:
    """A snapshot of the group: its generation, protocol, leader, and every member with its
    subscription for the selected protocol and its assignment (`assignments` overrides the
    stored ones, for the leader's SyncGroup that is not applied until the write succeeds)."""
    protocol = group.protocol_name
    members = tuple(
        MemberValue(
            member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
            client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata(protocol) if protocol else b"",
            assignment=(assignments.get(m.member_id, b"") if assignments is not None
                        else m.assignment))
        for m in group.members.values())
    timestamp = group.state_timestamp if now_ms is None else now_ms
    return Record(GroupKey(group.group_id), GroupValue(
        protocol_type=group.protocol_type or "", generation=group.generation, protocol=protocol,
        leader=group.leader_id, current_state_timestamp=timestamp, members=members))


def empty_group(group: Group) -> Record:
    """What Kafka writes for a group that has just been created: generation 0, no members.

    The protocol type is always "" (Kafka's newEmptyGroupMetadataRecord), even when the first
    member has already set the group's type in memory: the record says only that the group
    exists, and a group loaded from it alone is an Empty group with no type."""
    return Record(GroupKey(group.group_id), GroupValue(
        protocol_type="", generation=0, protocol=None,
        leader=None, current_state_timestamp=group.state_timestamp, members=()))


def group_tombstone(group_id: str) -> Record:
    return Record(GroupKey(group_id), None)
