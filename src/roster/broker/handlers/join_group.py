"""JoinGroup (11), v0-9. A long poll: the answer comes when the join phase completes.

In an eager rebalance every member sends one and the leader's answer lists every member, so
requests of the common shape take a raw path with their own codec
(roster.protocol.group_join_wire) and no coroutine (nor Task, when the answer waits); any other
shape is handed back (GENERIC) to kio's decode, admission and `handle`, which answer it as
before. Both paths build the same JoinRequest and answer the same bytes."""
from __future__ import annotations

import asyncio
from functools import partial

from roster.broker.network.admission import admit_group, topic_describer
from roster.broker.network.resume import AnswerWhenDone
from roster.coordinator.messages import JoinReply, JoinRequest
from roster.protocol import group_join_wire as wire
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import GENERIC, ApiSpec, Group

API_KEY = ApiKey.JOIN_GROUP
NULLABLE_PROTOCOL_NAME_FROM = 7
GROUP = Group(AclOperation.READ)


def answer(broker, frame: bytes, prefix, connection):
    """The raw path: the encoded answer, AnswerWhenDone when it waits, or GENERIC."""
    version, correlation_id = prefix.api_version, prefix.correlation_id
    fields = wire.decode_join(frame, version)
    if fields is None:
        return GENERIC
    (client_id, group_id, session_ms, rebalance_ms, member_id, instance_id, protocol_type,
     protocols, reason) = fields
    error = admit_group(broker, connection, GROUP, group_id)
    if error is not None:
        return _encoded(version, correlation_id, JoinReply(error=error, member_id=member_id))
    groups = broker.groups
    reply = groups.start_join(JoinRequest(
        group_id=group_id, member_id=member_id, group_instance_id=instance_id,
        protocol_type=protocol_type, protocols=protocols, session_timeout_ms=session_ms,
        # v0 has no rebalance timeout, and 0 means "as the session's" (as handle() reads it)
        rebalance_timeout_ms=rebalance_ms or session_ms,
        client_id=client_id or "", client_host=connection.client_host, reason=reason,
        api_version=version, token=groups.new_token(),
        may_describe=topic_describer(broker, connection)))
    if isinstance(reply, asyncio.Future):   # parked: the connection waits on it, no Task
        return AnswerWhenDone(reply, partial(_encoded, version, correlation_id))
    return _encoded(version, correlation_id, reply)


def _encoded(version: int, correlation_id: int, reply: JoinReply) -> bytes:
    return wire.encode_join_answer(
        version, correlation_id, reply.error, reply.generation, reply.protocol_type,
        reply.protocol_name, reply.leader, reply.skip_assignment, reply.member_id,
        ((m.member_id, m.group_instance_id, m.metadata) for m in reply.members))


async def handle(broker, request, connection):
    """The generic path, for what answer() hands back."""
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
        token=broker.groups.new_token(), may_describe=topic_describer(broker, connection)))
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


SPEC = ApiSpec(API_KEY, "JoinGroup", 0, 9, handle, raw=answer, resources=(GROUP,),
               refuse=refuse)
