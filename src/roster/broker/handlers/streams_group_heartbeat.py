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


async def handle(broker, request, connection):
    # the streams type's own code, loaded with the type on the first streams heartbeat
    from roster.broker.groups.streams_request import heartbeat_of, refusal
    groups = broker.groups
    if groups.shard.maker("streams") is None:   # the streams type is not registered
        return refusal(ErrorCode.unsupported_version, request.body.member_id)
    q = heartbeat_of(request, connection.client_host, groups.new_token(),
                     create_refused=lambda names: [n for n in names
                                                   if not may_create_topic(broker, connection, n)])
    image = LiveTopics(broker.topics)
    reply = groups.family_request("streams", q,
                                  lambda served, now: served.heartbeat(q, image, now))
    if isinstance(reply, asyncio.Future):
        reply = await reply
    return reply


def refuse(request, error: ErrorCode):
    from roster.broker.groups.streams_request import refusal
    return refusal(error)


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
