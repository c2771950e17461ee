"""ShareGroupHeartbeat (76), v1: a share group member's heartbeat (KIP-932), as Kafka 4.4
answers it. The decisions are roster.coordinator.share's; this module converts the request,
hands the coordinator the live topic catalog, waits for the share state of the partitions it
assigns to be initialised (broker/groups/share_group.initialized) and builds the answer.

Admission, in Kafka 4.4's order (its KafkaApis): READ on the group (declared); then the member
id, which must be given and at most 36 characters (INVALID_REQUEST, with no message, as
Kafka answers it); then DESCRIBE on every subscribed topic (one refused:
TOPIC_AUTHORIZATION_FAILED for the whole heartbeat); then the coordinator's own request checks
(coordinator/share/messages.py validate), before the group is looked at."""
from __future__ import annotations

import asyncio

from roster.broker.groups.share_group import initialized
from roster.broker.handlers.heartbeat_answer import heartbeat_answer
from roster.broker.network.admission import admit_topic_names
from roster.broker.partitions.topic_image import LiveTopics
from roster.coordinator.share.messages import ShareHeartbeat, ShareHeartbeatReply, validate
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, NotAResource, Topics

API_KEY = ApiKey.SHARE_GROUP_HEARTBEAT
# KafkaApis.isMemberIdValid: given, and at most a UUID's length. It refuses others "Invalid
# member id in the request.", but its answer carries the error code only (getErrorResponse)
MAX_MEMBER_ID = 36
# DESCRIBE on every subscribed topic, one refused refusing the heartbeat: checked in the
# handler after the member id (Kafka's order), so not among SPEC's declarations
SUBSCRIBED_TOPICS = Topics(AclOperation.DESCRIBE, "subscribed_topic_names", name=None,
                           topic_id=None, resolve=False, whole=True)


def encode(version: int, reply: ShareHeartbeatReply):
    return heartbeat_answer(API_KEY, version, reply)


def refuse(request, error: ErrorCode):
    return encode(request.api_version, ShareHeartbeatReply(error=error))


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    if not body.member_id or len(body.member_id) > MAX_MEMBER_ID:
        return encode(version, ShareHeartbeatReply(error=ErrorCode.invalid_request))
    names = body.subscribed_topic_names
    if names:
        refused = admit_topic_names(broker, connection, SUBSCRIBED_TOPICS, set(names))
        if refused is not None:
            return encode(version, ShareHeartbeatReply(error=refused))
    groups = broker.groups
    q = ShareHeartbeat(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
        rack_id=body.rack_id,
        subscribed_topic_names=None if names is None else tuple(names),
        client_id=request.client_id or "", client_host=connection.client_host,
        token=groups.new_token())
    refused = validate(q)
    if refused is not None:
        return encode(version, ShareHeartbeatReply(error=refused[0], error_message=refused[1]))
    if groups.shard.maker("share") is None:      # the share type is not registered
        return encode(version, ShareHeartbeatReply(error=ErrorCode.unsupported_version))
    image = LiveTopics(broker.topics)
    reply = groups.family_request("share", q, lambda served, now: served.heartbeat(q, image, now))
    if isinstance(reply, asyncio.Future):
        reply = await reply
    if reply.assignment:
        # the share state of what it is given exists before the member can fetch it
        await initialized(broker, q.group_id)
    return encode(version, reply)


SPEC = ApiSpec(API_KEY, "ShareGroupHeartbeat", 1, 1, handle, resources=(
    Group(AclOperation.READ),
    NotAResource("subscribed_topic_names", "DESCRIBE on each is checked in the handler, after "
                                           "the member id, in Kafka's order"),
), refuse=refuse)
