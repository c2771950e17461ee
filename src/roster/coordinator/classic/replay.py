"""Rebuild classic groups from their `__consumer_offsets` records (offset records are the
OffsetStore's, offset_store.py; the shard's replay switch hands each record to its owner).

Group records are applied here only when loading, and a group tombstone once written: the live
group already is what its record describes (the record is a snapshot of it).
"""
from __future__ import annotations

import logging

from roster.coordinator.classic.group import Group, Member
from roster.coordinator.classic.sharing import shared_int, shared_str
from roster.coordinator.classic.states import GroupState
from roster.protocol.group_records import GroupKey, GroupValue, Record, UnknownRecord

log = logging.getLogger("roster.coordinator")


def replay(groups: dict[str, Group], record: Record, now: int = -1) -> None:
    key, value = record.key, record.value
    if isinstance(key, GroupKey):
        if value is None:
            groups.pop(key.group, None)   # its offsets stay, apart (Kafka's tombstone too)
            return
        groups[key.group] = _group_from_record(key.group, value)
    elif isinstance(key, UnknownRecord):
        log.warning("skipping a record of unknown type %d", key.key_version)


def _group_from_record(group_id: str, value: GroupValue) -> Group:
    # A loaded group is born Stable if it has members, Empty otherwise: loading creates the
    # group in its state, it does not move one (so there is no transition to make).
    group = Group(group_id, state=GroupState.STABLE if value.members else GroupState.EMPTY)
    group.generation = value.generation
    group.protocol_type = value.protocol_type or None
    group.protocol_name = value.protocol
    group.state_timestamp = value.current_state_timestamp
    for m in value.members:
        member = Member(
            member_id=m.member_id, group_instance_id=m.group_instance_id,
            client_id=shared_str(m.client_id), client_host=shared_str(m.client_host),
            rebalance_timeout_ms=shared_int(m.rebalance_timeout if m.rebalance_timeout >= 0
                                            else m.session_timeout),
            session_timeout_ms=shared_int(m.session_timeout),
            protocols=((value.protocol or "", m.subscription),), assignment=m.assignment)
        group.add(member)
    group.leader_id = value.leader if value.leader in group.members else \
        next(iter(group.members), None)
    return group
