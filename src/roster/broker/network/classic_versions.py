"""Serving a handler's versions kio has no schema for (roster.protocol.classic) through the same
handler as the rest.

`serving(api_key, kio_from, handle)` is an ApiSpec `raw` answer: a request below `kio_from` is
decoded and its answer encoded by roster.protocol.classic, one above `kio_to` (when given) by
roster.protocol.newer_versions, any other by kio, exactly as the
connection does for a plain handler (admitted first, then run without a task until it has to
wait).
"""
from __future__ import annotations

from roster.broker.network.admission import admit
from roster.broker.network.resume import resume
from roster.protocol import classic, newer_versions
from roster.protocol.codec import decode_request, encode_response


async def _answered(handle, encode, broker, request, connection) -> bytes | None:
    body = admit(broker, connection, broker.registry.get(request.api_key), request)
    if body is None:  # admitted (broker/network/admission.py)
        body = await handle(broker, request, connection)
    if body is None:
        return None
    return encode(request.api_key, request.api_version, request.correlation_id, body)


def serving(api_key: int, kio_from: int, handle, kio_to: int | None = None):
    """`kio_to`: the last version kio knows; the ones above it are newer_versions' (kio has
    no schema for them yet)."""
    for version in range(kio_from):
        assert classic.has_layout(api_key, version), (api_key, version)

    def raw(broker, frame, prefix, connection):
        if prefix.api_version < kio_from:
            request = classic.decode_request(frame, prefix)
            encode = classic.encode_response
        elif kio_to is not None and prefix.api_version > kio_to:
            request = newer_versions.decode_request(frame, prefix)
            encode = newer_versions.encode_response
        else:
            request = decode_request(frame, prefix)
            encode = encode_response
        coroutine = _answered(handle, encode, broker, request, connection)
        try:
            waiting_on = coroutine.send(None)
        except StopIteration as done:
            return done.value
        return resume(coroutine, waiting_on)

    return raw
