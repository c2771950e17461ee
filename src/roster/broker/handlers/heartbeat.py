"""Heartbeat (12), v0-4, with its own codec (roster.protocol.heartbeat_wire): it is the request
every member sends every few seconds, so the one path here kept free of generic machinery (no
kio entities, no coroutine unless the answer has to wait)."""
from __future__ import annotations

import asyncio

from roster.coordinator.messages import HeartbeatRequest
from roster.protocol.errors import ErrorCode
from roster.protocol.heartbeat_wire import decode_heartbeat, encode_heartbeat_answer
from roster.protocol.registry import ApiSpec

API_KEY = 12


def answer(broker, frame: bytes, prefix, connection):
    fields = decode_heartbeat(frame, prefix.api_version)
    groups = broker.groups
    if groups.loading(fields.group_id):
        # Kafka answers heartbeats blindly while loading: the member must not rejoin for this
        error = ErrorCode.none
    else:
        heartbeat = groups.coordinator.heartbeat
        error = groups.start(lambda token, now: heartbeat(HeartbeatRequest(
            fields.group_id, fields.generation_id, fields.member_id, fields.group_instance_id,
            token), now))
        if isinstance(error, asyncio.Future):  # never today: a heartbeat writes no records
            return _answer_later(error, prefix)
    return encode_heartbeat_answer(prefix.api_version, prefix.correlation_id, error)


async def _answer_later(reply: asyncio.Future, prefix) -> bytes:
    return encode_heartbeat_answer(prefix.api_version, prefix.correlation_id, await reply)


SPEC = ApiSpec(API_KEY, "Heartbeat", 0, 4, handler=None, raw=answer)
