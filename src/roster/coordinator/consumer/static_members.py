"""Static membership (KIP-345) in consumer groups: which member a ConsumerGroupHeartbeat with
an instance id speaks for."""
from __future__ import annotations

import logging

from roster.coordinator import facts
from roster.coordinator.consumer import classic_members
from roster.coordinator.consumer.messages import HeartbeatRequest
from roster.coordinator.consumer.model import STATIC_LEAVE_EPOCH, ConsumerGroup, ConsumerMember
from roster.coordinator.consumer.validation import check_epoch, fail
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinator")


def static_member(group: ConsumerGroup, member_id: str, q: HeartbeatRequest, records: list,
                  noted: list) -> ConsumerMember:
    """The member a heartbeat with an instance id speaks for (Kafka's
    getOrMaybeSubscribeStaticConsumerGroupMember): a new static member, the one it replaces
    after a temporary leave (its records go into `records`), or itself."""
    existing = group.static_member(q.instance_id)
    if q.member_epoch == 0:
        if existing is None:
            if member_id in group.members:  # a dynamic member cannot turn static
                check_epoch(group.members[member_id], q)
                return group.members[member_id]
            log.info("static member %s (instance %s) joins consumer group %s", member_id,
                     q.instance_id, q.group_id)
            return ConsumerMember(member_id, instance_id=q.instance_id)
        # a classic member's instance id is taken over at once (the online upgrade's
        # restart: Kafka's getOrMaybeSubscribeStaticConsumerGroupMember)
        if existing.member_epoch != STATIC_LEAVE_EPOCH and existing.classic is None:
            fail(ErrorCode.unreleased_instance_id,
                 f"Static member {member_id} with instance id {q.instance_id} cannot join "
                 f"the group because the instance id is owned by {existing.member_id} "
                 "member.")
        new = classic_members.replace_static_member(group, existing, member_id, records)
        gid = group.group_id
        log.info("static member %s (instance %s) rejoins consumer group %s, replacing %s",
                 member_id, q.instance_id, gid, existing.member_id)
        noted.append(facts.ConsumerSaved(gid, q.instance_id, member_id, existing.member_id))
        return new
    if existing is None:
        fail(ErrorCode.unknown_member_id, f"Instance id {q.instance_id} is unknown.")
    if existing.member_id != member_id:
        fail(ErrorCode.fenced_instance_id,
             f"Static member {member_id} with instance id {q.instance_id} was fenced by "
             f"member {existing.member_id}.")
    check_epoch(existing, q)
    return existing
