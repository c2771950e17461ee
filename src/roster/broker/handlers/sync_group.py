"""SyncGroup (14), v0-5. Followers wait here until the leader's assignment is written.

As JoinGroup: requests of the common shape take a raw path with their own codec
(roster.protocol.group_join_wire; the leader's carries every member's assignment); any other
shape, and a v5+ request without its protocol (refused by validate()), is handed back
(GENERIC) to kio's decode, admission and `handle`."""
from __future__ import annotations

import asyncio
from functools import partial

from roster.broker.network.admission import admit_group
from roster.broker.network.resume import AnswerWhenDone
from roster.coordinator.messages import SyncReply, SyncRequest
from roster.protocol import group_join_wire as wire
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import GENERIC, ApiSpec, Group

API_KEY = ApiKey.SYNC_GROUP
PROTOCOL_FIELDS_FROM = 5
GROUP = Group(AclOperation.READ)


def answer(broker, frame: bytes, prefix, connection):
    """The raw path: the encoded answer, AnswerWhenDone when it waits, or GENERIC."""
    version, correlation_id = prefix.api_version, prefix.correlation_id
    fields = wire.decode_sync(frame, version)
    if fields is None:
        return GENERIC
    (group_id, generation, member_id, instance_id, protocol_type, protocol_name,
     assignments) = fields
    if version >= PROTOCOL_FIELDS_FROM and (protocol_type is None or protocol_name is None):
        return GENERIC   # validate() refuses it, before admission
    error = admit_group(broker, connection, GROUP, group_id)
    if error is not None:
        return _encoded(version, correlation_id, SyncReply(error=error))
    groups = broker.groups
    reply = groups.start_sync(SyncRequest(
        group_id=group_id, generation=generation, member_id=member_id,
        group_instance_id=instance_id, protocol_type=protocol_type,
        protocol_name=protocol_name, assignments=assignments, api_version=version,
        token=groups.new_token()))
    if isinstance(reply, asyncio.Future):   # parked: the connection waits on it, no Task
        return AnswerWhenDone(reply, partial(_encoded, version, correlation_id))
    return _encoded(version, correlation_id, reply)


def _encoded(version: int, correlation_id: int, reply: SyncReply) -> bytes:
    return wire.encode_sync_answer(version, correlation_id, reply.error, reply.protocol_type,
                                   reply.protocol_name, reply.assignment)


async def handle(broker, request, connection):
    """The generic path, for what answer() hands back."""
    body = request.body
    version = request.api_version
    reply = await broker.groups.sync(SyncRequest(
        group_id=body.group_id, generation=body.generation_id, member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        protocol_type=getattr(body, "protocol_type", None),
        protocol_name=getattr(body, "protocol_name", None),
        assignments=tuple((a.member_id, a.assignment) for a in body.assignments),
        api_version=version, token=broker.groups.new_token()))
    return _answer(version, reply)


def validate(request) -> ErrorCode | None:
    """KafkaApis' own check, made before authorization: v5+ must name the protocol."""
    body = request.body
    if request.api_version >= PROTOCOL_FIELDS_FROM and (
            body.protocol_type is None or body.protocol_name is None):
        return ErrorCode.inconsistent_group_protocol
    return None


def refuse(request, error: ErrorCode):
    return _answer(request.api_version, SyncReply(error=error))


def _answer(version: int, reply: SyncReply):
    return make(response_schema(API_KEY, version), error_code=reply.error,
                protocol_type=reply.protocol_type, protocol_name=reply.protocol_name,
                assignment=reply.assignment)


SPEC = ApiSpec(API_KEY, "SyncGroup", 0, 5, handle, raw=answer, resources=(GROUP,),
               refuse=refuse, validate=validate)
