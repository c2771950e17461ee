"""StreamsGroupHeartbeat (88): Kafka Streams' own group protocol (KIP-1071), as Kafka 4.4
answers it. The decisions are roster.coordinator.streams'; this module converts the request
(kio's v0 schema: tasks to {subtopology: partitions}, the topology to topology.Topology), hands
the coordinator the live topic catalog, and builds the answer.

Admission: READ on the group, as Kafka (its topic checks, DESCRIBE on the source topics and
CREATE for internal topics, are made when ACLs are on; roster's admission checks the group)."""
from __future__ import annotations

import asyncio
import datetime

from roster.broker.handlers.consumer_group_heartbeat import LiveTopics
from roster.broker.streams_group import streams_type
from roster.coordinator.streams.heartbeat import StreamsHeartbeat, StreamsHeartbeatReply
from roster.coordinator.streams.model import Endpoint
from roster.coordinator.streams.topology import CopartitionGroup, Subtopology, TopicInfo, \
    Topology
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, NotAResource

API_KEY = ApiKey.STREAMS_GROUP_HEARTBEAT
GROUP = Group(AclOperation.READ)


def _tasks(entries):
    if entries is None:
        return None
    out: dict = {}
    for e in entries:
        if e.partitions:
            out[e.subtopology_id] = out.get(e.subtopology_id, frozenset()) | frozenset(
                e.partitions)
    return out


def _info(t) -> TopicInfo:
    return TopicInfo(t.name, t.partitions, t.replication_factor,
                     tuple((c.key, c.value) for c in t.topic_configs))


def _topology(t) -> Topology | None:
    if t is None:
        return None
    return Topology(t.epoch, tuple(Subtopology(
        s.subtopology_id, tuple(s.source_topics), tuple(s.source_topic_regex),
        tuple(_info(c) for c in s.state_changelog_topics), tuple(s.repartition_sink_topics),
        tuple(_info(r) for r in s.repartition_source_topics),
        tuple(CopartitionGroup(tuple(g.source_topics), tuple(g.source_topic_regex),
                               tuple(g.repartition_source_topics))
              for g in s.copartition_groups)) for s in t.subtopologies))


def _offsets(entries):
    return None if entries is None else tuple((o.subtopology_id, o.partition, o.offset)
                                              for o in entries)


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    streams = streams_type(broker)
    groups = broker.groups
    if streams is None:
        return encode(version, StreamsHeartbeatReply(
            error=ErrorCode.unsupported_version, member_id=body.member_id))
    refused = groups.shard.refused(body.group_id, "streams")
    if refused is not None:
        return encode(version, StreamsHeartbeatReply(
            error=ErrorCode.group_id_not_found, error_message=refused,
            member_id=body.member_id))
    endpoint = None if body.user_endpoint is None else Endpoint(body.user_endpoint.host,
                                                                body.user_endpoint.port)
    q = StreamsHeartbeat(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
        endpoint_information_epoch=body.endpoint_information_epoch,
        instance_id=body.instance_id, rack_id=body.rack_id,
        rebalance_timeout_ms=int(body.rebalance_timeout.total_seconds() * 1000),
        topology=_topology(body.topology), active=_tasks(body.active_tasks),
        standby=_tasks(body.standby_tasks), warmup=_tasks(body.warmup_tasks),
        process_id=body.process_id, user_endpoint=endpoint,
        client_tags=None if body.client_tags is None else tuple(
            (t.key, t.value) for t in body.client_tags),
        task_offsets=_offsets(body.task_offsets), task_end_offsets=_offsets(body.task_end_offsets),
        shutdown_application=body.shutdown_application,
        client_id=request.client_id or "",
        client_host=connection.client_host, api_version=version, token=groups.new_token())
    image = LiveTopics(broker.topics)
    reply = groups.start(lambda now: streams.heartbeat(q, image, now), q.token)
    if isinstance(reply, asyncio.Future):
        reply = await reply
    return encode(version, reply)


def refuse(request, error: ErrorCode):
    return encode(request.api_version, StreamsHeartbeatReply(error=error))


def encode(version: int, reply: StreamsHeartbeatReply):
    schema = response_schema(API_KEY, version)
    task_entry = element(schema, "active_tasks")
    status_entry = element(schema, "status")

    def tasks(t):
        return None if t is None else tuple(
            make(task_entry, subtopology_id=s, partitions=tuple(sorted(ps)))
            for s, ps in sorted(t.items()))

    endpoints = None
    if reply.partitions_by_user_endpoint is not None:
        entry = element(schema, "partitions_by_user_endpoint")
        point = element(entry, "user_endpoint")
        topic = element(entry, "active_partitions")
        endpoints = tuple(make(
            entry, user_endpoint=make(point, host=e.endpoint.host, port=e.endpoint.port),
            active_partitions=tuple(make(topic, topic=t, partitions=ps) for t, ps in e.active),
            standby_partitions=tuple(make(topic, topic=t, partitions=ps) for t, ps in e.standby))
            for e in reply.partitions_by_user_endpoint)
    return make(
        schema, error_code=reply.error, error_message=reply.error_message,
        member_id=reply.member_id, member_epoch=reply.member_epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=reply.heartbeat_interval_ms),
        acceptable_recovery_lag=min(reply.acceptable_recovery_lag, 2**31 - 1),
        task_offset_interval=datetime.timedelta(milliseconds=reply.task_offset_interval_ms),
        status=None if reply.status is None else tuple(
            make(status_entry, status_code=c, status_detail=d) for c, d in reply.status),
        active_tasks=tasks(reply.active), standby_tasks=tasks(reply.standby),
        warmup_tasks=tasks(reply.warmup),
        endpoint_information_epoch=reply.endpoint_information_epoch,
        partitions_by_user_endpoint=endpoints)


SPEC = ApiSpec(API_KEY, "StreamsGroupHeartbeat", 0, 0, handle, resources=(
    GROUP,
    NotAResource("topology", "the application's topology: its topics are the group's to read "
                             "and create, checked against the catalog by the coordinator"),
    NotAResource("active_tasks", "what the member owns: its group's assignment"),
    NotAResource("client_tags", "the member's rack-awareness tags (key, value), not topics"),
), refuse=refuse)
