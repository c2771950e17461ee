"""Metadata (3), v0-13: brokers, cluster id, topics with their real topic ids and partitions.

Topics named in the request are created on the fly when auto.create.topics.enable is on and the
client allows it (AllowAutoTopicCreation, v4+; always allowed below v4), as Kafka does. roster is
one broker, so every partition is led by it with itself as the only replica.
"""
from __future__ import annotations

from roster.broker.topics import TopicError, check_topic_name
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode, MalformedRequest
from roster.protocol.registry import ApiSpec

API_KEY = 3
BY_ID_FROM = 12


def _partitions(schema, topic, node_id: int):
    entry = element(element(schema, "topics"), "partitions")
    return tuple(make(entry, error_code=ErrorCode.none, partition_index=index, leader_id=node_id,
                      leader_epoch=0, replica_nodes=(node_id,), isr_nodes=(node_id,),
                      offline_replicas=())
                 for index in range(len(topic.partitions)))


def _describe(schema, topic, node_id: int):
    return make(element(schema, "topics"), error_code=ErrorCode.none, name=topic.name,
                topic_id=topic.topic_id, is_internal=topic.internal,
                partitions=_partitions(schema, topic, node_id))


def _failed(schema, error: ErrorCode, name=None, topic_id=None):
    return make(element(schema, "topics"), error_code=error, name=name, topic_id=topic_id,
                is_internal=False, partitions=())


def _lookup(broker, schema, wanted, may_create: bool):
    node_id = broker.endpoint.node_id
    topic_id = getattr(wanted, "topic_id", None)
    if wanted.name is None:  # v12+: by topic id
        topic = broker.topics.by_id(topic_id)
        if topic is None:
            return _failed(schema, ErrorCode.unknown_topic_id, topic_id=topic_id)
        return _describe(schema, topic, node_id)
    topic = broker.topics.get(wanted.name)
    if topic is None:
        try:
            check_topic_name(wanted.name)
        except TopicError:
            return _failed(schema, ErrorCode.invalid_topic_exception, name=wanted.name)
        topic = broker.auto_create(wanted.name) if may_create else None
        if topic is None:
            return _failed(schema, ErrorCode.unknown_topic_or_partition, name=wanted.name)
    return _describe(schema, topic, node_id)


async def handle(broker, request, connection):
    version = request.api_version
    schema = response_schema(API_KEY, version)
    body = request.body
    all_topics = body.topics is None or (version == 0 and not body.topics)
    if all_topics:
        topics = tuple(_describe(schema, t, broker.endpoint.node_id) for t in broker.topics)
    else:
        if version < BY_ID_FROM and any(wanted.name is None or getattr(wanted, "topic_id", None)
                                        for wanted in body.topics):
            # Kafka refuses these as an invalid request: v10-11 carry the id field, but a
            # topic may be asked for by name only (and their answer has no null name)
            raise MalformedRequest(f"Metadata v{version} names a topic by id (v12+ may)")
        may_create = version < 4 or body.allow_auto_topic_creation
        topics = tuple(_lookup(broker, schema, wanted, may_create) for wanted in body.topics)
    # the advertised address of the listener this request came in on
    endpoint = getattr(connection, "endpoint", None) or broker.endpoint
    brokers = (make(element(schema, "brokers"), node_id=endpoint.node_id, host=endpoint.host,
                    port=endpoint.port, rack=None),)
    return make(schema, brokers=brokers, cluster_id=broker.cluster_id,
                controller_id=endpoint.node_id, topics=topics,
                cluster_authorized_operations=-2147483648, error_code=ErrorCode.none)


SPEC = ApiSpec(API_KEY, "Metadata", 0, 13, handle)
