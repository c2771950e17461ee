"""DescribeShareGroupOffsets (90), v0-1: each share group's start offset (SPSO) per partition,
and from v1 its lag (KIP-1226: the records from the SPSO to the partition's end whose delivery
is not complete), from broker.share_state.

As Kafka 4.4's KafkaApis: GROUP DESCRIBE per group (GROUP_AUTHORIZATION_FAILED on the group's
entry), TOPIC DESCRIBE per topic (TOPIC_AUTHORIZATION_FAILED on each of its partitions; a null
topic list means every topic with share state, less those the caller may not describe).
What Kafka 4.4.0 answers (compared on a running broker): a partition without share state, of
any group id (none, or another type's), an unknown topic's included, is start offset -1 and lag
-1 without an error; its topic id is null only when the topic is unknown (Kafka's coordinator
learns of a new topic a moment after CreateTopics answers: until then it answers null for it,
whether the group exists or not); LeaderEpoch is 0; the lag is end - start - delivered, not clamped (a start past the
end gives a negative lag); an empty group id is UNKNOWN_SERVER_ERROR on the group when a topic
it names exists (only those reach Kafka's coordinator), else answered as any unknown group.
"""
from __future__ import annotations

from roster.broker.share import answers
from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Groups, Topics

API_KEY = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
UNINITIALIZED = -1


def _partition(schema_partition, version: int, index: int, start: int, lag: int,
               error: ErrorCode = ErrorCode.none, message: str | None = None):
    fields = {"partition_index": index, "start_offset": start, "leader_epoch": 0,
              "error_code": error, "error_message": message}
    if version >= 1:
        fields["lag"] = lag
    return make(schema_partition, **fields)


def _group_topics(broker, admission, schema_topic, version: int, group_id: str, topics,
                  within: int):
    schema_partition = element(schema_topic, "partitions")
    state = broker.share_state
    entries = []
    if topics is None:      # every partition with share state, of topics the caller may see
        by_topic: dict = {}
        for _, topic_id, index in state.keys_of(group_id):
            by_topic.setdefault(topic_id, []).append(index)
        for topic_id, indexes in by_topic.items():
            topic = broker.topics.by_id(topic_id)
            if topic is None or not admission.allows(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                     topic.name):
                continue
            entries.append((topic.name, topic, sorted(indexes), ErrorCode.none))
        entries.sort(key=lambda e: e[0])
    else:
        for index, t in enumerate(topics):
            topic, error = admission.topic(index, within)
            entries.append((t.topic_name, topic, list(t.partitions), error))
    answered = []
    for name, topic, indexes, error in entries:
        partitions = []
        for p in indexes:
            if error is ErrorCode.topic_authorization_failed:
                partitions.append(_partition(schema_partition, version, p, UNINITIALIZED,
                                             UNINITIALIZED, error, _message(error)))
                continue
            described = None if topic is None else state.describe(group_id, topic.topic_id, p)
            start, lag = described if described is not None else (UNINITIALIZED, UNINITIALIZED)
            partitions.append(_partition(schema_partition, version, p, start, lag))
        shown_id = topic.topic_id if topic is not None else None
        answered.append(make(schema_topic, topic_name=name, topic_id=shown_id,
                             partitions=tuple(partitions)))
    return tuple(answered)


def _message(error: ErrorCode) -> str | None:
    return answers.message(error)


def refuse(request, error: ErrorCode):
    schema = response_schema(API_KEY, request.api_version)
    group_entry = element(schema, "groups")
    return make(schema, groups=tuple(
        make(group_entry, group_id=g.group_id, topics=(), error_code=error,
             error_message=_message(error)) for g in request.body.groups))


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    admission = request.admission
    schema = response_schema(API_KEY, version)
    group_entry = element(schema, "groups")
    topic_entry = element(group_entry, "topics")
    answered = []
    for within, g in enumerate(body.groups):
        refused = admission.group(g.group_id)
        if refused is ErrorCode.none and not g.group_id and g.topics and any(
                admission.topic(index, within)[1] is ErrorCode.none
                for index in range(len(g.topics))):
            # Kafka's coordinator fails on the empty id; it is asked only for known topics
            refused = ErrorCode.unknown_server_error
        if refused is not ErrorCode.none:
            answered.append(make(group_entry, group_id=g.group_id, topics=(),
                                 error_code=refused, error_message=_message(refused)))
            continue
        answered.append(make(group_entry, group_id=g.group_id, error_code=ErrorCode.none,
                             error_message=None,
                             topics=_group_topics(broker, admission, topic_entry, version,
                                                  g.group_id, g.topics, within)))
    return make(schema, groups=tuple(answered))


SPEC = ApiSpec(API_KEY, "DescribeShareGroupOffsets", 0, 1, handle,
               resources=(Groups(AclOperation.DESCRIBE, "groups", key="group_id"),
                          Topics(AclOperation.DESCRIBE, within="groups", name="topic_name",
                                 topic_id=None)),
               refuse=refuse)
