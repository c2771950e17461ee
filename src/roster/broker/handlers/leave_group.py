"""LeaveGroup (13), v0-5: one member (v0-2) or a batch, by member id or group.instance.id (v3+)."""
from __future__ import annotations

from roster.coordinator.messages import LeaveIdentity, LeaveReply, LeaveRequest
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group

API_KEY = ApiKey.LEAVE_GROUP
BATCH_FROM = 3


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    if version < BATCH_FROM:
        identities = (LeaveIdentity(body.member_id),)
    else:
        identities = tuple(LeaveIdentity(m.member_id, m.group_instance_id,
                                         getattr(m, "reason", None)) for m in body.members)
    reply = await broker.groups.leave(
        LeaveRequest(body.group_id, identities, broker.groups.new_token()))
    return _answer(version, reply)


def refuse(request, error: ErrorCode):
    return _answer(request.api_version, LeaveReply(error=error))


def _answer(version: int, reply: LeaveReply):
    schema = response_schema(API_KEY, version)
    if version < BATCH_FROM:
        error = reply.error
        if error is ErrorCode.none and reply.members:
            error = reply.members[0].error
        return make(schema, error_code=error)
    entry = element(schema, "members")
    return make(schema, error_code=reply.error, members=tuple(
        make(entry, member_id=m.member_id, group_instance_id=m.group_instance_id,
             error_code=m.error) for m in reply.members))


SPEC = ApiSpec(API_KEY, "LeaveGroup", 0, 5, handle, resources=(Group(AclOperation.READ),),
               refuse=refuse)
