"""DeleteTopics (20), v0-6: by name, or by topic id from v6. v0 (no throttle time; dropped by
Kafka 4.0) answers through v1's description."""
from __future__ import annotations

from roster.broker.network.classic_versions import serving
from roster.broker.partitions.topics import TopicError
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Topics

API_KEY = ApiKey.DELETE_TOPICS
KIO_FROM = 1
BY_ID_FROM = 6


def _delete(broker, name, topic_id, admitted):
    """(name, topic id, error, message) for one topic."""
    topic, error = admitted
    if error is ErrorCode.unknown_topic_id:
        return None, topic_id, error, f"no topic has id {topic_id}"
    if error is ErrorCode.topic_authorization_failed:
        return name, topic_id, error, None
    if topic is None:
        return name, topic_id, error, f"topic {name!r} does not exist"
    name = topic.name
    if topic.internal:
        return name, topic.topic_id, ErrorCode.invalid_request, f"{name} is internal"
    try:
        topic = broker.delete_topic(name)
    except TopicError as exc:
        return name, topic_id, ErrorCode[exc.code], str(exc)
    return name, topic.topic_id, ErrorCode.none, None


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, max(request.api_version, KIO_FROM))
    entry = element(schema, "responses")
    if request.api_version >= BY_ID_FROM:
        wanted = [(t.name, t.topic_id) for t in body.topics]
    else:
        wanted = [(name, None) for name in body.topic_names]
    answers = []
    for t, (name, topic_id) in enumerate(wanted):
        name, topic_id, error, message = _delete(broker, name, topic_id,
                                                 request.admission.topic(t))
        answers.append(make(entry, name=name, topic_id=topic_id, error_code=error,
                            error_message=message))
    return make(schema, responses=tuple(answers))


SPEC = ApiSpec(API_KEY, "DeleteTopics", 0, 6, handle, raw=serving(API_KEY, KIO_FROM, handle),
               resources=(Topics(AclOperation.DELETE, "topic_names", name=None, topic_id=None,
                                 versions=(0, BY_ID_FROM - 1)),
                          Topics(AclOperation.DELETE, versions=(BY_ID_FROM, 6))))
