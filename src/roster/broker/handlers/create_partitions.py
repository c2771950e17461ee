"""CreatePartitions (37), v0-3: grow a topic. Partitions can only be added, never removed, as in
Kafka; existing data stays where it is (keys may now hash elsewhere)."""
from __future__ import annotations

from roster.broker.partitions.topics import TopicError, not_an_increase
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Topics

API_KEY = ApiKey.CREATE_PARTITIONS


def _grow(broker, wanted, admitted, validate_only: bool) -> tuple[ErrorCode, str | None]:
    topic, error = admitted
    if error is ErrorCode.topic_authorization_failed:
        return error, None
    if topic is None:
        return error, f"topic {wanted.name!r} does not exist"
    if topic.internal:
        return ErrorCode.invalid_request, f"{wanted.name} is internal"
    if wanted.assignments is not None and any(
            list(a.broker_ids) != [broker.endpoint.node_id] for a in wanted.assignments):
        return ErrorCode.invalid_replica_assignment, "the only broker is " \
            f"{broker.endpoint.node_id}"
    try:
        if wanted.count <= len(topic.partitions):
            raise not_an_increase(wanted.name, len(topic.partitions), wanted.count)
        if not validate_only:
            broker.topics.add_partitions(wanted.name, wanted.count)
    except TopicError as exc:
        return ErrorCode[exc.code], str(exc)
    return ErrorCode.none, None


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    entry = element(schema, "results")
    results = []
    for t, wanted in enumerate(body.topics):
        error, message = _grow(broker, wanted, request.admission.topic(t), body.validate_only)
        results.append(make(entry, name=wanted.name, error_code=error, error_message=message))
    return make(schema, results=tuple(results))


SPEC = ApiSpec(API_KEY, "CreatePartitions", 0, 3, handle, resources=(Topics(AclOperation.ALTER),))
