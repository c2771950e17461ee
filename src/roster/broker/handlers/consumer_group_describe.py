"""ConsumerGroupDescribe (69), v0-1: consumer groups (KIP-848) as Kafka 4.x describes them;
a group that is not a consumer group (or does not exist) answers GROUP_ID_NOT_FOUND. v1 adds
each member's MemberType (1: consumer protocol). Topic names come from the live catalog (an
assignment of a topic deleted since names it with an empty name).

Admission, as Kafka 4.4's: DESCRIBE on each group (declared); and a group whose members'
assignments or target assignments name a topic the caller may not DESCRIBE is answered
TOPIC_AUTHORIZATION_FAILED without its members (KAFKA-18813; checked here, on the described
group: the request names no topic to declare). The refused groups are answered first, the rest
in the order Kafka's coordinator answers them (java_order.coordinator_order: an empty group id
first, INVALID_GROUP_ID, then by __consumer_offsets partition)."""
from __future__ import annotations

import uuid

from roster.broker.network.admission import UNAUTHORIZED_GROUP_TOPICS
from roster.broker.network.authorized_operations import NOT_REQUESTED, requested
from roster.broker.partitions.topic_image import LiveTopics
from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.java_order import coordinator_order
from roster.protocol.registry import ApiSpec, Groups

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    group_entry = element(schema, "groups")
    member_entry = element(group_entry, "members")
    assignment_entry = element(member_entry, "assignment")
    topic_entry = element(assignment_entry, "topic_partitions")
    image = LiveTopics(broker.topics)
    groups = broker.groups
    operations = requested(broker, connection, body.include_authorized_operations)

    def authorized(group_id: str) -> int:
        return NOT_REQUESTED if operations is None else operations.of(ResourceType.GROUP,
                                                                      group_id)

    def assignment(pairs):
        return make(assignment_entry, topic_partitions=tuple(
            make(topic_entry, topic_id=uuid.UUID(bytes=t), topic_name=image.name_of(t) or "",
                 partitions=tuple(ps)) for t, ps in pairs))

    def missing(group_id, error, message=None, operations=NOT_REQUESTED):
        return make(group_entry, group_id=group_id, error_code=error, error_message=message,
                    group_state="", group_epoch=0, assignment_epoch=0, assignor_name="",
                    members=(), authorized_operations=operations)

    refused, admitted = request.admission.split_groups(body.group_ids)  # unauthorized, loading
    described = [missing(group_id, error, operations=authorized(group_id))
                 for group_id, error in refused]
    for group_id in coordinator_order(admitted, broker.config["offsets.topic.num.partitions"],
                                      empty_first=True):
        if not group_id:
            described.append(missing(group_id, ErrorCode.invalid_group_id))
            continue
        group = groups.shard.describe_family("consumer", [group_id])[0]
        if not request.admission.describes_all({
                image.name_of(t) or "" for m in group.members
                for t, _ in (*m.assignment, *m.target_assignment)}):
            described.append(missing(group_id, ErrorCode.topic_authorization_failed,
                                     UNAUTHORIZED_GROUP_TOPICS))
            continue
        described.append(make(
            group_entry, group_id=group.group_id, error_code=group.error,
            error_message=group.error_message, group_state=group.state,
            group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
            assignor_name=group.assignor_name, authorized_operations=authorized(group_id),
            members=tuple(make(
                member_entry, member_id=m.member_id, instance_id=m.instance_id,
                rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
                client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
                # Kafka answers "" (not null) for a member subscribed by topic names
                subscribed_topic_regex=m.subscribed_topic_regex or "",
                assignment=assignment(m.assignment),
                target_assignment=assignment(m.target_assignment), member_type=m.member_type)
                for m in group.members)))
    return make(schema, groups=tuple(described))


SPEC = ApiSpec(API_KEY, "ConsumerGroupDescribe", 0, 1, handle,
               resources=(Groups(AclOperation.DESCRIBE, "group_ids"),))
