"""DeleteShareGroupOffsets (92), v0: drop a share group's state for whole topics, only while the
group has no members (`kafka-share-groups --delete-offsets`).

As Kafka 4.4: GROUP DELETE (GROUP_AUTHORIZATION_FAILED, the whole request), TOPIC READ per topic
(TOPIC_AUTHORIZATION_FAILED), an empty group id INVALID_GROUP_ID, an unknown group
GROUP_ID_NOT_FOUND "Group <id> not found.", another type's "Group <id> is not a share group.",
a group with members NON_EMPTY_GROUP. What Kafka 4.4.0 answers (compared on a running broker):
the topics deleted first, then those the group has no state for (UNKNOWN_TOPIC_OR_PARTITION,
"There is no offset information to delete.") and the unknown ones (UNKNOWN_TOPIC_OR_PARTITION,
"This server does not host this topic-partition."), each in request order.
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

API_KEY = ApiKey.DELETE_SHARE_GROUP_OFFSETS
# a topic the group has no share state for (Kafka's words; it says "This server does not host
# this topic-partition." instead while its coordinator has not learnt of a new topic yet)
NO_STATE = "There is no offset information to delete."


def refuse(request, error: ErrorCode, message: str | None = None):
    return make(response_schema(API_KEY, request.api_version), error_code=error,
                error_message=message or answers.message(error), responses=())


async def handle(broker, request, connection):
    body = request.body
    group_id = body.group_id
    schema = response_schema(API_KEY, request.api_version)
    topic_entry = element(schema, "responses")
    state = broker.share_state
    other = share_groups.not_a_share_group(broker, group_id)
    if other is not None:
        return refuse(request, *other)
    if not share_groups.exists(broker, group_id) and not state.keys_of(group_id):
        return refuse(request, ErrorCode.group_id_not_found, f"Group {group_id} not found.")
    if not share_groups.is_empty(broker, group_id):
        return refuse(request, ErrorCode.non_empty_group)

    def entry(name: str, topic_id, error: ErrorCode):
        return make(topic_entry, topic_name=name, topic_id=topic_id, error_code=error,
                    error_message=answers.message(error))

    held = state.keys_of(group_id)
    deleted, without_state, refused, keys = [], [], [], []
    for index, t in enumerate(body.topics):
        topic, error = request.admission.topic(index)
        if error is not ErrorCode.none or topic is None:
            refused.append(entry(t.topic_name, None, error if error is not ErrorCode.none
                                 else ErrorCode.unknown_topic_or_partition))
            continue
        mine = [k for k in held if k[1] == topic.topic_id]
        if not mine:
            without_state.append(make(
                topic_entry, topic_name=t.topic_name, topic_id=None,
                error_code=ErrorCode.unknown_topic_or_partition, error_message=NO_STATE))
            continue
        keys += mine
        deleted.append((t.topic_name, topic.topic_id))
    error = await state.delete(group_id, keys) if keys else None
    answered = [entry(name, topic_id, error or ErrorCode.none) for name, topic_id in deleted]
    return make(schema, error_code=ErrorCode.none, error_message=None,
                responses=tuple(answered + without_state + refused))


SPEC = ApiSpec(API_KEY, "DeleteShareGroupOffsets", 0, 0, handle,
               resources=(Group(AclOperation.DELETE, allow_empty=False),
                          Topics(AclOperation.READ, name="topic_name", topic_id=None)),
               refuse=refuse)
