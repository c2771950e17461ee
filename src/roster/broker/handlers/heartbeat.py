"""Heartbeat (12), v0-4, with its own codec (roster.protocol.heartbeat_wire): it is the request
every member sends every few seconds."""
from __future__ import annotations

from roster.coordinator.messages import HeartbeatRequest
from roster.protocol.errors import ErrorCode
from roster.protocol.heartbeat_wire import decode_heartbeat, encode_heartbeat_answer
from roster.protocol.registry import ApiSpec

API_KEY = 12


async def answer(broker, frame: bytes, prefix, connection) -> bytes:
    fields = decode_heartbeat(frame, prefix.api_version)
    groups = broker.groups
    if groups.loading(fields.group_id):
        # Kafka answers heartbeats blindly while loading: the member must not rejoin for this
        error = ErrorCode.none
    else:
        error = await groups.call(groups.coordinator.heartbeat, lambda token: HeartbeatRequest(
            group_id=fields.group_id, generation=fields.generation_id,
            member_id=fields.member_id, group_instance_id=fields.group_instance_id,
            token=token))
    return encode_heartbeat_answer(prefix.api_version, prefix.correlation_id, error)


SPEC = ApiSpec(API_KEY, "Heartbeat", 0, 4, handler=None, raw=answer)
