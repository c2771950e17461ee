"""Streams group records applied to the groups: the one function a restart (load) and a live
operation (its records applied at once) both change the groups with, as Kafka's
GroupMetadataManager.replay does for streams groups.

A member's three records may arrive in any order: the first makes the member, the others fill in
their part. The group's tombstone (type 17) deletes the group; a member's metadata tombstone
(19) removes the member (its target and current assignment tombstones only clear their parts).
"""
from __future__ import annotations

from roster.coordinator.streams import records as rec
from roster.coordinator.streams.model import MemberState, StreamsGroup, StreamsMember, TaskSets


def replay(groups: dict[str, StreamsGroup], record: rec.StreamsRecord) -> None:
    key, value = record.key, record.value
    group = groups.get(key.group)
    if group is None:
        if value is None:
            return                      # a tombstone for a group already gone
        group = groups[key.group] = StreamsGroup(key.group)
    if key.type == rec.GROUP_METADATA:
        if value is None:
            del groups[key.group]
            return
        group.group_epoch = value.epoch
        group.metadata_hash = value.metadata_hash
        group.validated_topology_epoch = value.validated_topology_epoch
        group.last_assignment_configs = value.last_assignment_configs
    elif key.type == rec.TARGET_METADATA:
        group.assignment_epoch = -1 if value is None else value.assignment_epoch
        group.assignment_timestamp = 0 if value is None else value.assignment_timestamp_ms
    elif key.type == rec.TOPOLOGY:
        group.topology = value
    elif key.type == rec.TARGET_MEMBER:
        if value is None:
            group.target.pop(key.member, None)
        else:
            group.target[key.member] = TaskSets(value.active, value.standby, value.warmup)
    elif key.type == rec.MEMBER_METADATA:
        if value is None:
            group.remove_member(key.member)
            return
        old = group.members.get(key.member) or StreamsMember(key.member)
        group.put_member(old.replace(
            instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, rebalance_timeout_ms=value.rebalance_timeout_ms,
            topology_epoch=value.topology_epoch, process_id=value.process_id,
            user_endpoint=value.user_endpoint, client_tags=value.client_tags))
    elif key.type == rec.CURRENT_ASSIGNMENT:
        old = group.members.get(key.member)
        if value is None:
            if old is not None:
                group.put_member(old.replace(member_epoch=0, previous_member_epoch=0,
                                             state=MemberState.STABLE, assigned=TaskSets(),
                                             pending_revocation=TaskSets(), active_epochs={}))
            return
        epochs = {t: value.active_epochs.get(t, max(value.member_epoch, 0))
                  for role in (value.active, value.active_pending)
                  for t in ((s, p) for s, ps in role.items() for p in ps)}
        group.put_member((old or StreamsMember(key.member)).replace(
            member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
            state=MemberState(value.state),
            assigned=TaskSets(value.active, value.standby, value.warmup),
            pending_revocation=TaskSets(value.active_pending, value.standby_pending,
                                        value.warmup_pending),
            active_epochs=epochs))
