"""OffsetDelete (47), v0: remove a group's committed offsets for some partitions (what
`kafka-consumer-groups --delete-offsets` and confluent-kafka's delete_consumer_group_offsets
send). Partitions of unknown (or unauthorized) topics are refused before the coordinator, as
Kafka's request layer does (admission resolves the topics); the coordinator decides the rest
(offsets.delete) and answers once the tombstones are written."""
from __future__ import annotations

from roster.broker.network.admission import partition_error
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make, per_partition
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, Topics

API_KEY = ApiKey.OFFSET_DELETE


def refuse(request, error: ErrorCode):
    return make(response_schema(API_KEY, request.api_version), error_code=error, topics=())


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    errors: dict[tuple[str, int], ErrorCode] = {}
    known = []
    for t, wanted in enumerate(body.topics):
        resolved = request.admission.topic(t)
        for p in wanted.partitions:
            error = partition_error(resolved, p.partition_index)
            if error is not ErrorCode.none:
                errors[(wanted.name, p.partition_index)] = error
            else:
                known.append((wanted.name, p.partition_index))
    reply = await broker.groups.delete_offsets(body.group_id, known)
    if reply.error is not ErrorCode.none:  # for the whole group: no partition is answered
        return make(schema, error_code=reply.error, topics=())
    errors.update(((topic, partition), error) for topic, partition, error in reply.partitions)
    return make(schema, error_code=ErrorCode.none, topics=per_partition(
        schema, body.topics, lambda t, wanted, p: {
            "partition_index": p.partition_index,
            "error_code": errors[(wanted.name, p.partition_index)]}))


SPEC = ApiSpec(API_KEY, "OffsetDelete", 0, 0, handle,
               resources=(Group(AclOperation.DELETE, allow_empty=False),
                          Topics(AclOperation.READ)),
               refuse=refuse)
