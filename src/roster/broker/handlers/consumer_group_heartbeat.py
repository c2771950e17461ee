"""ConsumerGroupHeartbeat (68), v0-1: the consumer group protocol (KIP-848), as Kafka 4.x
answers it. The decisions are roster.coordinator.consumer's; this module converts the request
(topic ids to 16-byte strings, timedeltas to ms), hands it the live topic catalog, and builds
the answer. v1 (KIP-1082) is the version where the client makes up its own member id and may
subscribe with SubscribedTopicRegex (RE2 syntax, matched against whole topic names).
"""
from __future__ import annotations

import datetime
import uuid

from roster.coordinator.consumer.messages import HeartbeatReply, HeartbeatRequest
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec

API_KEY = 68


class LiveTopics:
    """The broker's topic catalog as the consumer coordinator reads it (model.TopicImage)."""

    __slots__ = ("_topics",)

    def __init__(self, topics) -> None:
        self._topics = topics

    def lookup(self, name: str) -> tuple[bytes, int] | None:
        topic = self._topics.get(name)
        return None if topic is None else (topic.topic_id.bytes, len(topic.partitions))

    def name_of(self, topic_id: bytes) -> str | None:
        topic = self._topics.by_id(uuid.UUID(bytes=topic_id))
        return None if topic is None else topic.name

    def names(self):
        return [t.name for t in self._topics if not t.internal]


def _ms(value) -> int:
    if value is None:
        return -1
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)


def to_request(request, connection, token) -> HeartbeatRequest:
    body = request.body
    owned = None
    if body.topic_partitions is not None:
        owned = tuple((tp.topic_id.bytes, tuple(tp.partitions))
                      for tp in body.topic_partitions if tp.topic_id is not None)
    names = body.subscribed_topic_names
    return HeartbeatRequest(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
        instance_id=body.instance_id, rack_id=body.rack_id,
        rebalance_timeout_ms=_ms(body.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None),
        server_assignor=body.server_assignor, owned=owned,
        client_id=request.client_id or "", client_host=connection.client_host,
        api_version=request.api_version, token=token)


async def handle(broker, request, connection):
    groups = broker.groups
    if groups.loading(request.body.group_id):
        reply = HeartbeatReply(error=ErrorCode.coordinator_load_in_progress)
    else:
        image = LiveTopics(broker.topics)
        reply = await groups.run(lambda token, now: groups.consumer.heartbeat(
            to_request(request, connection, token), image, now))
    return encode(request.api_version, reply)


def encode(version: int, reply: HeartbeatReply):
    schema = response_schema(API_KEY, version)
    assignment = None
    if reply.assignment is not None:
        entry = element(schema, "assignment")
        topic = element(entry, "topic_partitions")
        assignment = make(entry, topic_partitions=tuple(
            make(topic, topic_id=uuid.UUID(bytes=t), partitions=tuple(ps))
            for t, ps in reply.assignment))
    return make(schema, error_code=reply.error, error_message=reply.error_message,
                member_id=reply.member_id, member_epoch=reply.member_epoch,
                heartbeat_interval=datetime.timedelta(milliseconds=reply.heartbeat_interval_ms),
                assignment=assignment)


SPEC = ApiSpec(API_KEY, "ConsumerGroupHeartbeat", 0, 1, handle)
