"""Heartbeat (12), v0-4, with its own codec (roster.protocol.heartbeat_wire): it is the request
every member sends every few seconds, so the one path here kept free of generic machinery (no
kio entities, no coroutine, no reply token: a heartbeat's answer never waits)."""
from __future__ import annotations

from roster.broker.network.admission import admit_group
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from roster.protocol.heartbeat_wire import decode_heartbeat, encode_heartbeat_answer
from roster.protocol.registry import ApiSpec, Group

API_KEY = ApiKey.HEARTBEAT
# Kafka answers heartbeats blindly while loading: the member must not rejoin for this
GROUP = Group(AclOperation.READ, while_loading=ErrorCode.none)


def answer(broker, frame: bytes, prefix, connection) -> bytes:
    group_id, generation, member_id, instance_id = decode_heartbeat(frame, prefix.api_version)
    error = admit_group(broker, connection, GROUP, group_id)
    if error is None:
        error = broker.groups.heartbeat(group_id, generation, member_id, instance_id)
    return encode_heartbeat_answer(prefix.api_version, prefix.correlation_id, error)


SPEC = ApiSpec(API_KEY, "Heartbeat", 0, 4, handler=None, raw=answer, resources=(GROUP,))
