"""Share group records applied to the groups: the one function a restart (load) and a live
operation (its records applied at once) both change the groups with, as Kafka's
GroupMetadataManager.replay does for share groups.

A member's records may arrive in any order: the first makes the member, the others fill in
their part. The group's tombstone (type 11) deletes the group; a member's metadata tombstone
(10) removes the member (its target and current assignment tombstones only clear their parts).
"""
from __future__ import annotations

from roster.coordinator.share import records as rec
from roster.coordinator.share.model import STABLE_MEMBER, ShareGroup, ShareMember
from roster.protocol.java_order import hash_set_order


def replay(groups: dict[str, ShareGroup], record: rec.ShareRecord) -> None:
    key, value = record.key, record.value
    group = groups.get(key.group)
    if group is None:
        if value is None:
            return                      # a tombstone for a group already gone
        group = groups[key.group] = ShareGroup(key.group)
    kind = key.type
    if kind == rec.GROUP_METADATA:
        if value is None:
            del groups[key.group]
            return
        group.group_epoch = value.epoch
        group.metadata_hash = value.metadata_hash
    elif kind == rec.TARGET_METADATA:
        group.assignment_epoch = -1 if value is None else value.assignment_epoch
        group.assignment_timestamp = 0 if value is None else value.assignment_timestamp_ms
    elif kind == rec.STATE_PARTITIONS:
        if value is None:
            group.initialized, group.initializing, group.deleting = {}, (), ()
        else:
            group.initialized = {tid: (name, frozenset(ps))
                                 for tid, name, ps in value.initialized}
            group.initializing, group.deleting = value.initializing, value.deleting
    elif kind == rec.TARGET_MEMBER:
        if value is None:
            group.target.pop(key.member, None)
        else:
            group.target[key.member] = value.partitions
    elif kind == rec.MEMBER_METADATA:
        if value is None:
            group.members.pop(key.member, None)
            return
        old = group.members.get(key.member) or ShareMember(key.member)
        group.members[key.member] = old.replace(
            rack_id=value.rack_id, client_id=value.client_id, client_host=value.client_host,
            subscribed=hash_set_order(value.subscribed))   # as Kafka's updateWith
    elif kind == rec.CURRENT_ASSIGNMENT:
        old = group.members.get(key.member)
        if value is None:
            if old is not None:
                group.members[key.member] = old.replace(
                    member_epoch=0, previous_member_epoch=0, state=STABLE_MEMBER, assigned={})
            return
        group.members[key.member] = (old or ShareMember(key.member)).replace(
            member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
            state=value.state, assigned=value.assigned)
