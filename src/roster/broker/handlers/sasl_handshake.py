"""SaslHandshake (17), v0-1: the client names its SASL mechanism (security/sasl.py does the
work). v1 is followed by SaslAuthenticate requests, v0 by bare SASL tokens.

On a listener without SASL, or on a connection that has already authenticated and may not
re-authenticate, the answer is ILLEGAL_SASL_STATE, as Kafka's. An unknown mechanism gets
UNSUPPORTED_SASL_MECHANISM with the listener's mechanisms, and the connection is closed.
"""
from __future__ import annotations

from roster.protocol.build import make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec

API_KEY = 17


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    session = getattr(connection, "auth", None)
    if session is None or not session.expects_handshake:
        return make(schema, error_code=ErrorCode.illegal_sasl_state, mechanisms=())
    accepted, enabled = await session.handshake(request.body.mechanism, request.api_version)
    error = ErrorCode.none if accepted else ErrorCode.unsupported_sasl_mechanism
    return make(schema, error_code=error, mechanisms=tuple(enabled))


SPEC = ApiSpec(API_KEY, "SaslHandshake", 0, 1, handle)
