"""SaslAuthenticate (36), v0-2: one SASL token each way (security/sasl.py runs the mechanism).

A failure is SASL_AUTHENTICATION_FAILED with a message that names no password and does not
say whether the user exists, answered after connection.failed.authentication.delay.ms; the
connection is then closed. v1+ answers carry SessionLifetimeMs (KIP-368): 0 unless
connections.max.reauth.ms or the credential (an OAUTHBEARER token) limits the session.
Outside an authentication exchange the answer is ILLEGAL_SASL_STATE, as Kafka's.
"""
from __future__ import annotations

import datetime

from roster.protocol.build import make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec

API_KEY = 36
NEVER = datetime.timedelta(0)


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    session = getattr(connection, "auth", None)
    if session is None or not session.expects_token:
        return make(schema, error_code=ErrorCode.illegal_sasl_state,
                    error_message="SaslAuthenticate request received outside of SASL "
                                  "authentication", auth_bytes=b"", session_lifetime=NEVER)
    error, token, lifetime = await session.authenticate(request.body.auth_bytes,
                                                        request.api_version)
    if error is not None:
        return make(schema, error_code=ErrorCode.sasl_authentication_failed,
                    error_message=error, auth_bytes=b"", session_lifetime=NEVER)
    # Kafka answers an empty message (not null) on success
    return make(schema, error_code=ErrorCode.none, error_message="", auth_bytes=token,
                session_lifetime=datetime.timedelta(milliseconds=lifetime))


SPEC = ApiSpec(API_KEY, "SaslAuthenticate", 0, 2, handle)
