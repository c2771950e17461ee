"""ConsumerGroupHeartbeat (68), v0-1: the consumer group protocol (KIP-848), as Kafka 4.x
answers it. The decisions are roster.coordinator.consumer's; this module converts the request
(topic ids to 16-byte strings, timedeltas to ms), hands it the live topic catalog, and builds
the answer. v1 (KIP-1082) is the version where the client makes up its own member id and may
subscribe with SubscribedTopicRegex (RE2 syntax, matched against whole topic names).

Every member sends one every few seconds, so it is served with its own codec
(roster.protocol.consumer_heartbeat_wire) rather than kio's generic one, and without a
coroutine when the answer does not wait for a write (its only path: kio's generic one is never
taken). A steady heartbeat (only group, member id
and epoch set, and the instance id of a static member) is admitted like any other, then
offered to the core's steady_heartbeat(),
which answers it without an operation when it changes nothing but the member's session, as
the classic Heartbeat is answered; anything else goes the whole way.
Admission is as the declared resources say, through admission's raw-handler entry points like
every raw handler: READ on the group, DESCRIBE on each topic subscribed to by name (else
TOPIC_AUTHORIZATION_FAILED for the whole request). A regex resolves, as Kafka 4.4's does
(KAFKA-18813), to the matching topics the member whose heartbeat resolves it may DESCRIBE.
"""
from __future__ import annotations

import asyncio

from roster.broker.handlers.heartbeat_answer import heartbeat_answer
from roster.broker.network.admission import admit_group, admit_topic_names, topic_describer
from roster.broker.partitions.topic_image import LiveTopics
from roster.coordinator.consumer.messages import HeartbeatReply, HeartbeatRequest
from roster.coordinator.consumer.model import DescribableTopics
from roster.protocol import consumer_heartbeat_wire as wire
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, NotAResource, Topics

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT


GROUP = Group(AclOperation.READ)
# as Kafka 4: every topic subscribed to by name must be describable, or the heartbeat fails
TOPICS = Topics(AclOperation.DESCRIBE, "subscribed_topic_names", name=None, topic_id=None,
                resolve=False, whole=True)


# the fields a steady heartbeat leaves null: rack_id, rebalance_timeout_ms,
# subscribed_topic_names, subscribed_topic_regex, server_assignor, topic_partitions
_STEADY_NULLS = (None, -1, None, None, None, None)


def answer(broker, frame: bytes, prefix, connection):
    """The raw path: the encoded answer, or a coroutine for it when it waits for a write."""
    version, correlation_id = prefix.api_version, prefix.correlation_id
    steady = wire.decode_steady(frame, version)
    (client_id, group_id, member_id, epoch, instance_id, rack_id, rebalance, names, regex,
     assignor, owned) = wire.decode(frame, version) if steady is None else steady + _STEADY_NULLS
    error = admit_group(broker, connection, GROUP, group_id)
    if error is None and names:
        error = admit_topic_names(broker, connection, TOPICS, names)
    if error is not None:
        return _encoded(correlation_id, HeartbeatReply(error=error))
    groups = broker.groups
    consumer = groups.shard.maker("consumer")
    if consumer is None:    # the consumer type is not registered
        return _encoded(correlation_id, HeartbeatReply(error=ErrorCode.unsupported_version))
    if steady is not None:
        interval = consumer.steady_heartbeat(group_id, member_id, epoch, client_id or "",
                                             connection.client_host, broker.topics.version,
                                             groups.now_ms(), instance_id)
        if interval is not None:
            return wire.encode_steady_answer(correlation_id, member_id, epoch, interval)
    image = LiveTopics(broker.topics)
    may_describe = topic_describer(broker, connection)
    if may_describe is not None:
        image = DescribableTopics(image, may_describe)
    request = HeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=epoch, instance_id=instance_id,
        rack_id=rack_id, rebalance_timeout_ms=rebalance, subscribed_topic_names=names,
        subscribed_topic_regex=regex, server_assignor=assignor, owned=owned,
        client_id=client_id or "", client_host=connection.client_host, api_version=version,
        token=groups.new_token())
    reply = groups.family_request("consumer", request,
                                  lambda served, now: served.heartbeat(request, image, now))
    if isinstance(reply, asyncio.Future):
        return _answer_later(reply, correlation_id)
    return _encoded(correlation_id, reply)


async def _answer_later(reply: asyncio.Future, correlation_id: int) -> bytes:
    return _encoded(correlation_id, await reply)


def _encoded(correlation_id: int, reply: HeartbeatReply) -> bytes:
    return wire.encode_answer(correlation_id, reply.error.value, reply.error_message,
                              reply.member_id, reply.member_epoch, reply.heartbeat_interval_ms,
                              reply.assignment)


def refuse(request, error: ErrorCode):
    return encode(request.api_version, HeartbeatReply(error=error))


def encode(version: int, reply: HeartbeatReply):
    return heartbeat_answer(API_KEY, version, reply)


SPEC = ApiSpec(API_KEY, "ConsumerGroupHeartbeat", 0, 1, handler=None, raw=answer, resources=(
    GROUP,
    TOPICS,
    NotAResource("subscribed_topic_regex", "matched against the topics the member may "
                                           "DESCRIBE, as Kafka 4.4 does",
                 versions=(1, 1)),
    NotAResource("topic_partitions", "what the member owns: its group's assignment, not a "
                                     "request to act on the topics"),
), refuse=refuse)
