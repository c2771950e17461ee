"""JoinGroup (11), v0-9. A long poll: the answer comes when the join phase completes."""
from __future__ import annotations

from roster.coordinator.messages import JoinReply, JoinRequest
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group

API_KEY = ApiKey.JOIN_GROUP
NULLABLE_PROTOCOL_NAME_FROM = 7


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    session_ms = round(body.session_timeout.total_seconds() * 1000)
    rebalance = getattr(body, "rebalance_timeout", None)  # v0 uses the session timeout
    reply = await broker.groups.join(JoinRequest(
        group_id=body.group_id, member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        protocol_type=body.protocol_type,
        protocols=tuple((p.name, p.metadata) for p in body.protocols),
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=round(rebalance.total_seconds() * 1000) if rebalance
        else session_ms,
        client_id=request.client_id or "", client_host=connection.client_host,
        reason=getattr(body, "reason", None), api_version=version,
        token=broker.groups.new_token()))
    return _answer(version, reply)


def refuse(request, error: ErrorCode):
    return _answer(request.api_version, JoinReply(error=error, member_id=request.body.member_id))


def _answer(version: int, reply: JoinReply):
    schema = response_schema(API_KEY, version)
    member_entry = element(schema, "members")
    protocol_name = reply.protocol_name
    if protocol_name is None and version < NULLABLE_PROTOCOL_NAME_FROM:
        protocol_name = ""
    return make(schema, error_code=reply.error, generation_id=reply.generation,
                protocol_type=reply.protocol_type, protocol_name=protocol_name,
                leader=reply.leader, skip_assignment=reply.skip_assignment,
                member_id=reply.member_id,
                members=tuple(make(member_entry, member_id=m.member_id,
                                   group_instance_id=m.group_instance_id, metadata=m.metadata)
                              for m in reply.members))


SPEC = ApiSpec(API_KEY, "JoinGroup", 0, 9, handle,
               resources=(Group(AclOperation.READ),), refuse=refuse)
