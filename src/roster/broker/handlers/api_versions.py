"""ApiVersions (18), v0-4: the version ranges come from the registry, never from a list here.

A request at a version above ours is answered in v0 layout with UNSUPPORTED_VERSION and our
ranges, so the client can retry at a version both sides speak (KIP-511).
"""
from __future__ import annotations

import re

from roster.protocol.build import element, make
from roster.protocol.codec import encode_response, response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.framing import RequestPrefix
from roster.protocol.registry import ApiSpec, Registry

API_KEY = 18
# KIP-511: what v3+ clients may call themselves
SOFTWARE_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _body(registry: Registry, version: int, error: ErrorCode):
    schema = response_schema(API_KEY, version)
    entry = element(schema, "api_keys")
    ranges = () if error is ErrorCode.invalid_request else tuple(
        entry(api_key=key, min_version=low, max_version=high)
        for key, low, high in registry.version_ranges())
    return make(schema, error_code=error, api_keys=ranges)


def answer_unsupported_version(registry: Registry, prefix: RequestPrefix) -> bytes:
    return encode_response(API_KEY, 0, prefix.correlation_id,
                           _body(registry, 0, ErrorCode.unsupported_version))


async def handle(broker, request, connection):
    error = ErrorCode.none
    if request.api_version >= 3:
        body = request.body
        if not (SOFTWARE_NAME.fullmatch(body.client_software_name or "")
                and SOFTWARE_NAME.fullmatch(body.client_software_version or "")):
            error = ErrorCode.invalid_request
    return _body(broker.registry, request.api_version, error)


SPEC = ApiSpec(API_KEY, "ApiVersions", 0, 4, handle)
