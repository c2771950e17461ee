"""OffsetDelete (47), v0: remove a group's committed offsets for some partitions (what
`kafka-consumer-groups --delete-offsets` and confluent-kafka's delete_consumer_group_offsets
send). Partitions of unknown topics are refused here, as Kafka's request layer does; the
coordinator decides the rest (offsets.delete) and answers once the tombstones are written."""
from __future__ import annotations

from roster.protocol.build import make, per_partition
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec

API_KEY = 47


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    if not body.group_id:
        return make(schema, error_code=ErrorCode.invalid_group_id, topics=())
    if broker.groups.loading(body.group_id):
        return make(schema, error_code=ErrorCode.coordinator_load_in_progress, topics=())
    errors: dict[tuple[str, int], ErrorCode] = {}
    known = []
    for wanted in body.topics:
        for p in wanted.partitions:
            if broker.topics.partition(wanted.name, p.partition_index) is None:
                errors[(wanted.name, p.partition_index)] = ErrorCode.unknown_topic_or_partition
            else:
                known.append((wanted.name, p.partition_index))
    runtime = broker.groups
    consumer_group = runtime.consumer.groups.get(body.group_id)
    if consumer_group is not None and consumer_group.members:
        # a consumer group (KIP-848) keeps the offsets of the topics its members subscribe to
        subscribed = consumer_group.subscribed_names()
        for topic, partition in [tp for tp in known if tp[0] in subscribed]:
            errors[(topic, partition)] = ErrorCode.group_subscribed_to_topic
        known = [tp for tp in known if tp[0] not in subscribed]
    reply = await runtime.run(
        lambda token, now: runtime.coordinator.delete_offsets(body.group_id, known, now, token))
    if reply.error is not ErrorCode.none:  # for the whole group: no partition is answered
        return make(schema, error_code=reply.error, topics=())
    errors.update(((topic, partition), error) for topic, partition, error in reply.partitions)
    return make(schema, error_code=ErrorCode.none, topics=per_partition(
        schema, body.topics, lambda name, p: {"partition_index": p.partition_index,
                                              "error_code": errors[(name, p.partition_index)]}))


SPEC = ApiSpec(API_KEY, "OffsetDelete", 0, 0, handle)
