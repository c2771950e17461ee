"""StreamsGroupHeartbeat (88), v0-1: Kafka Streams' own group protocol (KIP-1071), as Kafka 4.4
answers it. The decisions are roster.coordinator.streams'; this module converts the request
(kio's v0 schema, which v1 requests share; answers in roster.protocol.streams_group_wire: v1
carries AcceptableRecoveryLag as an int64 and TopologyDescriptionRequired: tasks to
{subtopology: partitions}, the topology to topology.Topology), hands the coordinator the
live topic catalog, and builds the answer.

Admission, as Kafka 4.4's: READ on the group; when the request carries a topology, DESCRIBE on
every topic it names (any refused: TOPIC_AUTHORIZATION_FAILED for the whole heartbeat); and
CREATE on the cluster or on each internal topic the coordinator would create: refused, none is
created and the MISSING_INTERNAL_TOPICS status names them, the heartbeat itself succeeding."""
from __future__ import annotations

import asyncio

from roster.broker.network.admission import admit_group, admit_topic_names, may_create_topic
from roster.broker.network.resume import resume
from roster.broker.partitions.topic_image import LiveTopics
from roster.coordinator.streams.heartbeat import StreamsHeartbeat, StreamsHeartbeatReply
from roster.coordinator.streams.model import Endpoint
from roster.coordinator.streams.topology import CopartitionGroup, Subtopology, TopicInfo, Topology
from roster.protocol import streams_group_wire as wire
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.codec import decode_request
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, NotAResource, Topics

API_KEY = ApiKey.STREAMS_GROUP_HEARTBEAT
GROUP = Group(AclOperation.READ)
# The topology's topics (every subtopology's source, repartition sink, repartition source and
# changelog topics): read by topology_topics() below and admitted with admit_topic_names, one
# refused refusing the heartbeat; CREATE is asked by the coordinator, for the internal topics
# it would create (create_refused below).
TOPOLOGY_TOPICS = Topics(AclOperation.DESCRIBE, "subtopologies", within="topology", name=None,
                         topic_id=None, resolve=False, whole=True)
INTERNAL_TOPICS = Topics(AclOperation.CREATE, "subtopologies", within="topology", name=None,
                         topic_id=None, resolve=False, cluster_allows=True)


def topology_topics(topology) -> list[str]:
    """Every topic a request's topology names, as Kafka checks DESCRIBE on them (patterns and
    co-partition groups aside: they name nothing new)."""
    names: dict[str, None] = {}
    for s in topology.subtopologies:
        for name in (*s.source_topics, *s.repartition_sink_topics,
                     *(t.name for t in s.repartition_source_topics),
                     *(t.name for t in s.state_changelog_topics)):
            names[name] = None
    return list(names)


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
    groups = broker.groups
    if groups.shard.maker("streams") is None:   # the streams type is not registered
        return StreamsHeartbeatReply(error=ErrorCode.unsupported_version,
                                     member_id=body.member_id)
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
        client_host=connection.client_host, api_version=version, token=groups.new_token(),
        create_refused=lambda names: [n for n in names
                                      if not may_create_topic(broker, connection, n)])
    image = LiveTopics(broker.topics)
    reply = groups.family_request("streams", q,
                                  lambda served, now: served.heartbeat(q, image, now))
    if isinstance(reply, asyncio.Future):
        reply = await reply
    return reply


def refuse(request, error: ErrorCode):
    return StreamsHeartbeatReply(error=error)


async def _answered(broker, request, connection) -> bytes:
    body = request.body
    error = admit_group(broker, connection, GROUP, body.group_id)
    if error is None and body.topology is not None:
        error = admit_topic_names(broker, connection, TOPOLOGY_TOPICS,
                                  topology_topics(body.topology))
    if error is not None:
        reply = refuse(request, error)
    else:   # admitted (broker/network/admission.py)
        reply = await handle(broker, request, connection)
    return wire.encode_heartbeat_response(request.api_version, request.correlation_id, reply)


def answer(broker, frame: bytes, prefix, connection):
    """The raw path (the answer of both versions is roster's own encoding): the encoded
    answer, or a coroutine for it when it waits for a write."""
    coroutine = _answered(broker, decode_request(frame, prefix), connection)
    try:
        waiting_on = coroutine.send(None)
    except StopIteration as done:
        return done.value
    return resume(coroutine, waiting_on)


SPEC = ApiSpec(API_KEY, "StreamsGroupHeartbeat", 0, 1, handler=None, raw=answer, resources=(
    GROUP,
    TOPOLOGY_TOPICS,
    INTERNAL_TOPICS,
    NotAResource("topology", "its topics are admitted as a whole by the two declarations "
                             "above (topology_topics; the coordinator's internal topics)"),
    NotAResource("active_tasks", "what the member owns: its group's assignment"),
    NotAResource("client_tags", "the member's rack-awareness tags (key, value), not topics"),
), refuse=refuse)
