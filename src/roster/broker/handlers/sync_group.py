"""SyncGroup (14), v0-5. Followers wait here until the leader's assignment is written."""
from __future__ import annotations

from roster.coordinator.messages import SyncReply, SyncRequest
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group

API_KEY = ApiKey.SYNC_GROUP
PROTOCOL_FIELDS_FROM = 5


async def handle(broker, request, connection):
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


SPEC = ApiSpec(API_KEY, "SyncGroup", 0, 5, handle, resources=(Group(AclOperation.READ),),
               refuse=refuse, validate=validate)
