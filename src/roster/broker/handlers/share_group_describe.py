"""ShareGroupDescribe (77), v1: share groups (KIP-932) as Kafka 4.4 describes them: state,
group and assignment epochs, the assignor ("simple"), and each member with its rack, epoch,
client, subscribed topic names and assigned partitions (topic id and name). A group another
type holds answers GROUP_ID_NOT_FOUND "Group X is not a share group.", none "Group X not
found.".

Admission, as Kafka 4.4's KafkaApis: DESCRIBE on each group (declared; the refused groups are
answered first, GROUP_AUTHORIZATION_FAILED, as Kafka lists them); a described group one of
whose members is assigned a topic the caller may not DESCRIBE is answered
TOPIC_AUTHORIZATION_FAILED without its members.

The rest come in the order Kafka's GroupCoordinatorService answers them (coordinator_order): an
empty group id first (INVALID_GROUP_ID), then the groups by their __consumer_offsets partition,
the partitions in the order a Java HashMap of them iterates, each partition's groups as asked."""
from __future__ import annotations

import uuid

from roster.broker.groups.share_group import share_type
from roster.broker.network.admission import UNAUTHORIZED_GROUP_TOPICS
from roster.broker.network.authorized_operations import NOT_REQUESTED, requested
from roster.broker.partitions.topic_image import LiveTopics
from roster.coordinator.share.messages import ASSIGNOR, GROUP_NOT_FOUND, NOT_A_SHARE_GROUP
from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.java_order import coordinator_order
from roster.protocol.registry import ApiSpec, Groups

API_KEY = ApiKey.SHARE_GROUP_DESCRIBE


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    group_entry = element(schema, "groups")
    member_entry = element(group_entry, "members")
    assignment_entry = element(member_entry, "assignment")
    topic_entry = element(assignment_entry, "topic_partitions")
    share = share_type(broker)
    operations = requested(broker, connection, body.include_authorized_operations)

    def missing(group_id, error, message=None):
        return make(group_entry, error_code=error, error_message=message, group_id=group_id,
                    group_state="", group_epoch=0, assignment_epoch=0, assignor_name="",
                    members=())

    catalog = LiveTopics(broker.topics)

    def name_of(topic_id: bytes) -> str:
        return catalog.name_of(topic_id) or ""

    turned_away, admitted = request.admission.split_groups(body.group_ids)
    refused = [missing(group_id, error) for group_id, error in turned_away]
    described = []
    for group_id in coordinator_order(admitted, broker.config["offsets.topic.num.partitions"],
                                      empty_first=True):
        if not group_id:
            described.append(missing(group_id, ErrorCode.invalid_group_id))
            continue
        group = None if share is None else share.describe(group_id)
        if group is None:
            held = broker.groups.shard.type_of(group_id).has_group(group_id)
            described.append(missing(group_id, ErrorCode.group_id_not_found,
                                     (NOT_A_SHARE_GROUP if held else GROUP_NOT_FOUND)
                                     .format(group_id)))
            continue
        topics = {name_of(tid) for m in group.members.values() for tid in m.assigned}
        if not request.admission.describes_all(topics):
            described.append(missing(group_id, ErrorCode.topic_authorization_failed,
                                     UNAUTHORIZED_GROUP_TOPICS))
            continue
        members = tuple(make(
            member_entry, member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=m.subscribed,
            assignment=make(assignment_entry, topic_partitions=tuple(
                make(topic_entry, topic_id=uuid.UUID(bytes=tid), topic_name=name_of(tid),
                     partitions=tuple(sorted(ps)))
                for tid, ps in sorted(m.assigned.items()))))
            for _, m in sorted(group.members.items()))
        described.append(make(
            group_entry, error_code=ErrorCode.none, error_message=None, group_id=group_id,
            group_state=group.state, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch, assignor_name=ASSIGNOR, members=members,
            authorized_operations=NOT_REQUESTED if operations is None
            else operations.of(ResourceType.GROUP, group_id)))
    return make(schema, groups=tuple(refused + described))


SPEC = ApiSpec(API_KEY, "ShareGroupDescribe", 1, 1, handle,
               resources=(Groups(AclOperation.DESCRIBE, "group_ids"),))
