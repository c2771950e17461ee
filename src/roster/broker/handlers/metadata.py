"""Metadata (3), v0-13: brokers, cluster id, topics with their real topic ids and partitions.

Topics named in the request are created on the fly when auto.create.topics.enable is on and the
client allows it (AllowAutoTopicCreation, v4+; always allowed below v4), as Kafka does. roster is
one broker, so every partition is led by it with itself as the only replica.

Admission resolves the topics named (by name, or by id from v12) and refuses those the client
may not DESCRIBE (TOPIC_AUTHORIZATION_FAILED); creating one takes CREATE on the cluster or the
topic. Asked for every topic, the answer leaves out those it may not describe, as Kafka's.
"""
from __future__ import annotations

from roster.broker.network.admission import may_create_topic
from roster.broker.network.authorized_operations import NOT_REQUESTED, requested
from roster.broker.partitions.topics import TopicError, check_topic_name
from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode, MalformedRequest
from roster.protocol.registry import ApiSpec, Topics

API_KEY = ApiKey.METADATA
BY_ID_FROM = 12


def _partitions(schema, topic, node_id: int):
    entry = element(element(schema, "topics"), "partitions")
    return tuple(make(entry, error_code=ErrorCode.none, partition_index=index, leader_id=node_id,
                      leader_epoch=0, replica_nodes=(node_id,), isr_nodes=(node_id,),
                      offline_replicas=())
                 for index in range(len(topic.partitions)))


def _describe(schema, topic, node_id: int, operations):
    return make(element(schema, "topics"), error_code=ErrorCode.none, name=topic.name,
                topic_id=topic.topic_id, is_internal=topic.internal,
                partitions=_partitions(schema, topic, node_id),
                topic_authorized_operations=NOT_REQUESTED if operations is None
                else operations.of(ResourceType.TOPIC, topic.name))


def _failed(schema, error: ErrorCode, name=None, topic_id=None):
    return make(element(schema, "topics"), error_code=error, name=name, topic_id=topic_id,
                is_internal=False, partitions=())


def _lookup(broker, connection, schema, wanted, admitted, may_create: bool, operations):
    topic, error = admitted
    if error is ErrorCode.unknown_topic_or_partition:  # by name: perhaps created now
        try:
            check_topic_name(wanted.name)
        except TopicError:
            return _failed(schema, ErrorCode.invalid_topic_exception, name=wanted.name)
        if may_create and not may_create_topic(broker, connection, wanted.name):
            error = ErrorCode.topic_authorization_failed
        else:
            topic = broker.auto_create(wanted.name) if may_create else None
    if topic is None:  # by id (v12+), the id and no name
        return _failed(schema, error, name=wanted.name,
                       topic_id=getattr(wanted, "topic_id", None) if wanted.name is None else None)
    return _describe(schema, topic, broker.endpoint.node_id, operations)


def validate(request) -> None:
    """Kafka refuses v10-11 naming a topic by id as an invalid request: they carry the id
    field, but a topic may be asked for by name only (and their answer has no null name)."""
    version = request.api_version
    topics = request.body.topics
    if version < BY_ID_FROM and topics and any(
            wanted.name is None or getattr(wanted, "topic_id", None) for wanted in topics):
        raise MalformedRequest(f"Metadata v{version} names a topic by id (v12+ may)")


async def handle(broker, request, connection):
    version = request.api_version
    schema = response_schema(API_KEY, version)
    body = request.body
    all_topics = body.topics is None or (version == 0 and not body.topics)
    admission = request.admission
    operations = requested(broker, connection,
                           getattr(body, "include_topic_authorized_operations", False))
    if all_topics:
        topics = tuple(_describe(schema, t, broker.endpoint.node_id, operations)
                       for t in broker.topics
                       if admission.allows(AclOperation.DESCRIBE, ResourceType.TOPIC, t.name))
    else:
        may_create = version < 4 or body.allow_auto_topic_creation
        topics = tuple(_lookup(broker, connection, schema, wanted, admission.topic(t),
                               may_create, operations) for t, wanted in enumerate(body.topics))
    # v8-10 may ask for the cluster's too (v11 moved it to DescribeCluster)
    cluster = requested(broker, connection,
                        getattr(body, "include_cluster_authorized_operations", False))
    # the advertised address of the listener this request came in on
    endpoint = getattr(connection, "endpoint", None) or broker.endpoint
    brokers = (make(element(schema, "brokers"), node_id=endpoint.node_id, host=endpoint.host,
                    port=endpoint.port, rack=None),)
    return make(schema, brokers=brokers, cluster_id=broker.cluster_id,
                controller_id=endpoint.node_id, topics=topics,
                cluster_authorized_operations=NOT_REQUESTED if cluster is None
                else cluster.of_cluster(), error_code=ErrorCode.none)


SPEC = ApiSpec(API_KEY, "Metadata", 0, 13, handle, resources=(Topics(AclOperation.DESCRIBE),),
               validate=validate)
