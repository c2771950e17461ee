"""SyncGroup (14), v0-5. Followers wait here until the leader's assignment is written."""
from __future__ import annotations

from roster.coordinator.messages import SyncReply, SyncRequest
from roster.protocol.build import make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec

API_KEY = 14
PROTOCOL_FIELDS_FROM = 5


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    protocol_type = getattr(body, "protocol_type", None)
    protocol_name = getattr(body, "protocol_name", None)
    if version >= PROTOCOL_FIELDS_FROM and (protocol_type is None or protocol_name is None):
        reply = SyncReply(error=ErrorCode.inconsistent_group_protocol)  # KafkaApis' own check
    elif broker.groups.loading(body.group_id):
        reply = SyncReply(error=ErrorCode.coordinator_load_in_progress)
    else:
        reply = await broker.groups.call(
        broker.groups.coordinator.sync, lambda token: SyncRequest(
            group_id=body.group_id, generation=body.generation_id, member_id=body.member_id,
            group_instance_id=getattr(body, "group_instance_id", None),
            protocol_type=protocol_type, protocol_name=protocol_name,
            assignments=tuple((a.member_id, a.assignment) for a in body.assignments),
            api_version=version, token=token))
    return make(response_schema(API_KEY, version), error_code=reply.error,
                protocol_type=reply.protocol_type, protocol_name=reply.protocol_name,
                assignment=reply.assignment)


SPEC = ApiSpec(API_KEY, "SyncGroup", 0, 5, handle)
