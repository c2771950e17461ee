"""Rebuild coordinator state from `__consumer_offsets` records.

Offset records are applied through here both live (once written) and when a coordinator loads
its partitions after a restart; group records are applied here only when loading, because the
live group already is what its record describes (the record is a snapshot of it).
"""
from __future__ import annotations

import logging

from roster.coordinator.group import CommittedOffset, Group, Member
from roster.coordinator.sharing import shared_int, shared_str
from roster.coordinator.states import GroupState
from roster.protocol.group_records import GroupKey, GroupValue, OffsetKey, Record, UnknownRecord

log = logging.getLogger("roster.coordinator")


def replay(groups: dict[str, Group], record: Record, now: int = -1) -> None:
    key, value = record.key, record.value
    if isinstance(key, OffsetKey):
        group = groups.get(key.group)
        if value is None:
            if group is not None:
                group.offsets.pop((key.topic, key.partition), None)
            return
        if group is None:  # offsets without a group record: a simple group
            group = groups[key.group] = Group(key.group, state_timestamp=now)
        group.offsets[(key.topic, key.partition)] = CommittedOffset(
            value.offset, value.leader_epoch, value.metadata, value.commit_timestamp,
            value.expire_timestamp)
    elif isinstance(key, GroupKey):
        if value is None:
            gone = groups.pop(key.group, None)
            if gone is not None and gone.offsets:
                # Kafka keeps offsets apart from groups: a group's tombstone leaves those not
                # tombstoned before it (a group converted to a consumer group keeps them all,
                # consumer/migration.py; DeleteGroups tombstones its offsets first)
                kept = groups[key.group] = Group(key.group, state_timestamp=now)
                kept.offsets = gone.offsets
            return
        existing = groups.get(key.group)
        groups[key.group] = _group_from_record(key.group, value, existing)
    elif isinstance(key, UnknownRecord):
        log.warning("skipping a record of unknown type %d", key.key_version)


def _group_from_record(group_id: str, value: GroupValue, existing: Group | None) -> Group:
    # A loaded group is born Stable if it has members, Empty otherwise: loading creates the
    # group in its state, it does not move one (so there is no transition to make).
    group = Group(group_id, state=GroupState.STABLE if value.members else GroupState.EMPTY)
    group.offsets = existing.offsets if existing is not None else {}
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
