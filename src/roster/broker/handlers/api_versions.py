"""ApiVersions (18), v0-4: the version ranges come from the registry, never from a list here.

A request at a version above ours is answered as Kafka answers it (KIP-511): v0 layout,
UNSUPPORTED_VERSION, and one range, ApiVersions' own, so the client retries at the newest
version both sides speak. Not all ranges: a client given every range in that answer may take it
as the real one (franz-go does) and never learn the finalized features that only v3+ carries,
so it would not use Transaction Version 2.
"""
from __future__ import annotations

import re

from roster.broker.groups.share_group import share_features
from roster.protocol.build import element, make
from roster.protocol.codec import encode_response, response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.framing import RequestPrefix
from roster.protocol.registry import ApiSpec, Registry

API_KEY = 18
# KIP-511: what v3+ clients may call themselves
SOFTWARE_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


FEATURES_EPOCH = 1   # the finalized features never change while a broker runs


def _body(registry: Registry, version: int, error: ErrorCode, features=((), ())):
    """`features`: (supported [(name, min, max)], finalized [(name, level)]), answered from v3
    (KIP-584); Kafka 4.x clients read transaction.version from them."""
    schema = response_schema(API_KEY, version)
    entry = element(schema, "api_keys")
    ranges = registry.version_ranges()
    if error is ErrorCode.invalid_request:
        ranges = []
    elif error is ErrorCode.unsupported_version:
        ranges = [r for r in ranges if r[0] == API_KEY]
    ranges = tuple(entry(api_key=key, min_version=low, max_version=high)
                   for key, low, high in ranges)
    supported, finalized = features
    if version < 3 or not (supported or finalized):
        return make(schema, error_code=error, api_keys=ranges)
    supported_entry = element(schema, "supported_features")
    finalized_entry = element(schema, "finalized_features")
    return make(schema, error_code=error, api_keys=ranges, supported_features=tuple(
        supported_entry(name=name, min_version=low, max_version=high)
        for name, low, high in supported), finalized_features_epoch=FEATURES_EPOCH,
        finalized_features=tuple(finalized_entry(name=name, min_version_level=level,
                                                 max_version_level=level)
                                 for name, level in finalized))


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
    # a broker without a transaction coordinator (test doubles) finalizes no features
    transactions = getattr(broker, "transactions", None)
    supported, finalized = transactions.features() if transactions is not None else ((), ())
    share_supported, share_finalized = share_features(broker)   # share groups (KIP-932)
    features = ([*supported, *share_supported], [*finalized, *share_finalized])
    return _body(broker.registry, request.api_version, error, features)


SPEC = ApiSpec(API_KEY, "ApiVersions", 0, 4, handle)
