"""AlterShareGroupOffsets (91), v0: set a share group's start offset (SPSO) per partition, only
while the group has no members (`kafka-share-groups --reset-offsets`).

As Kafka 4.4: GROUP READ (GROUP_AUTHORIZATION_FAILED, the whole request), TOPIC READ per topic
(TOPIC_AUTHORIZATION_FAILED on each of its partitions), an empty group id INVALID_GROUP_ID,
another type's group GROUP_ID_NOT_FOUND "Group <id> is not a share group.", a group with
members NON_EMPTY_GROUP. What Kafka 4.4.0 answers (compared on a running broker): unknown topics
and partitions UNKNOWN_TOPIC_OR_PARTITION with its message, the refused topics listed before
the altered ones; any start offset is taken as given (-1 reads as not initialised; a
negative one starts the partition afresh at its share.auto.offset.reset on the next fetch).
Kafka also creates an empty share group for an unknown id; roster keeps the share state and
leaves the group to the membership side.
"""
from __future__ import annotations

from roster.broker.share import answers
from roster.broker.share import groups as share_groups
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, Topics

API_KEY = ApiKey.ALTER_SHARE_GROUP_OFFSETS


def refuse(request, error: ErrorCode, message: str | None = None):
    return make(response_schema(API_KEY, request.api_version), error_code=error,
                error_message=message or answers.message(error), responses=())


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    topic_entry = element(schema, "responses")
    partition_entry = element(topic_entry, "partitions")
    other = share_groups.not_a_share_group(broker, body.group_id)
    if other is not None:
        return refuse(request, *other)
    if not share_groups.is_empty(broker, body.group_id):
        return refuse(request, ErrorCode.non_empty_group)

    def entry(error: ErrorCode, index: int):
        return make(partition_entry, partition_index=index, error_code=error,
                    error_message=answers.message(error))

    refused, altered = [], []
    for index, t in enumerate(body.topics):
        topic, error = request.admission.topic(index)
        if error is not ErrorCode.none or topic is None:
            error = error if error is not ErrorCode.none else ErrorCode.unknown_topic_or_partition
            refused.append(make(topic_entry, topic_name=t.topic_name, topic_id=None,
                                partitions=tuple(entry(error, p.partition_index)
                                                 for p in t.partitions)))
            continue
        partitions = []
        for p in t.partitions:
            if not 0 <= p.partition_index < len(topic.partitions):
                partitions.append(entry(ErrorCode.unknown_topic_or_partition, p.partition_index))
                continue
            error = await broker.share_state.alter(body.group_id, topic.topic_id,
                                                   p.partition_index, p.start_offset)
            partitions.append(entry(error or ErrorCode.none, p.partition_index))
        altered.append(make(topic_entry, topic_name=t.topic_name, topic_id=topic.topic_id,
                            partitions=tuple(partitions)))
    return make(schema, error_code=ErrorCode.none, error_message=None,
                responses=tuple(refused + altered))


SPEC = ApiSpec(API_KEY, "AlterShareGroupOffsets", 0, 0, handle,
               resources=(Group(AclOperation.READ, allow_empty=False),
                          Topics(AclOperation.READ, name="topic_name", topic_id=None)),
               refuse=refuse)
