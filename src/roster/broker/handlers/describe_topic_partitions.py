"""DescribeTopicPartitions (75, v0, KIP-966): topics and their partitions, a page at a time --
what the Java Admin's describeTopics (kafka-topics --describe, Kafka Streams' internal topic
checks) sends to a broker that offers it, in place of Metadata.

As Kafka (DescribeTopicPartitionsRequestHandler): topics in name order, every topic the client
may DESCRIBE when none is named (the others left out), a named one it may not describe
TOPIC_AUTHORIZATION_FAILED and an unknown one UNKNOWN_TOPIC_OR_PARTITION; at most
min(ResponsePartitionLimit, 2000) partitions, with NextCursor naming where the next page starts;
each topic's authorized operations. roster is one broker: it leads every partition, alone in
the replicas and the ISR, and has no eligible leader replicas (an empty ELR, as Kafka without
ELR)."""
from __future__ import annotations

from roster.broker.network.authorized_operations import requested
from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, NotAResource, Topics

API_KEY = ApiKey.DESCRIBE_TOPIC_PARTITIONS
MAX_PARTITIONS = 2000   # Kafka's max.request.partition.size.limit default


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    topic_entry = element(schema, "topics")
    partition_entry = element(topic_entry, "partitions")
    body = request.body
    admission = request.admission
    operations = requested(broker, connection, True)
    node = broker.endpoint.node_id
    cursor = body.cursor
    if body.topics:   # named: (name, Topic or None, error)
        named = {w.name: admission.topic(i) for i, w in enumerate(body.topics)}
        wanted = sorted((name, *found) for name, found in named.items())
    else:
        wanted = [(t.name, t, ErrorCode.none) for t in broker.topics
                  if admission.allows(AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)]
    if cursor is not None:
        wanted = [w for w in wanted if w[0] >= cursor.topic_name]
    refused = [w for w in wanted if w[2] is ErrorCode.topic_authorization_failed]
    room = max(0, min(body.response_partition_limit, MAX_PARTITIONS))
    topics, next_cursor = [], None
    for name, topic, error in (w for w in wanted if w[2] is not ErrorCode.topic_authorization_failed):
        if topic is None:
            topics.append(make(topic_entry, error_code=error or ErrorCode.unknown_topic_or_partition,
                               name=name, topic_id=None, is_internal=False, partitions=(),
                               topic_authorized_operations=0))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        count = len(topic.partitions)
        if room == 0 and first < count:
            next_cursor = make(element(schema, "next_cursor"), topic_name=name,
                               partition_index=first)
            break
        last = min(count, first + room)
        room -= last - first
        topics.append(make(
            topic_entry, error_code=ErrorCode.none, name=name, topic_id=topic.topic_id,
            is_internal=topic.internal, topic_authorized_operations=operations.of(
                ResourceType.TOPIC, name),
            partitions=tuple(make(partition_entry, error_code=ErrorCode.none,
                                  partition_index=index, leader_id=node, leader_epoch=0,
                                  replica_nodes=(node,), isr_nodes=(node,),
                                  eligible_leader_replicas=(), last_known_elr=(),
                                  offline_replicas=()) for index in range(first, last))))
        if last < count:
            next_cursor = make(element(schema, "next_cursor"), topic_name=name,
                               partition_index=last)
            break
    topics += [make(topic_entry, error_code=ErrorCode.topic_authorization_failed, name=name,
                    topic_id=None, is_internal=False, partitions=(),
                    topic_authorized_operations=0) for name, _, _ in refused]
    return make(schema, topics=tuple(topics), next_cursor=next_cursor)


SPEC = ApiSpec(API_KEY, "DescribeTopicPartitions", 0, 0, handle,
               resources=(Topics(AclOperation.DESCRIBE, topic_id=None),
                          NotAResource("cursor", "where a page starts: only the topics of "
                                       "the answer are authorized, as in Kafka")))
