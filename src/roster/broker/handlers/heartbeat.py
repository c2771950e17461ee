"""Heartbeat (12), v0-4."""
from __future__ import annotations

from roster.coordinator.messages import HeartbeatRequest
from roster.protocol.build import make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec

API_KEY = 12


async def handle(broker, request, connection):
    body = request.body
    if broker.groups.loading(body.group_id):
        # Kafka answers heartbeats blindly while loading: the member must not rejoin for this
        return make(response_schema(API_KEY, request.api_version), error_code=ErrorCode.none)
    error = await broker.groups.call(
        broker.groups.coordinator.heartbeat, lambda token: HeartbeatRequest(
        group_id=body.group_id, generation=body.generation_id, member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None), token=token))
    return make(response_schema(API_KEY, request.api_version), error_code=error)


SPEC = ApiSpec(API_KEY, "Heartbeat", 0, 4, handle)
