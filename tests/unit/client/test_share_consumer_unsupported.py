"""A broker without share groups (its ApiVersions has no ShareGroupHeartbeat): subscribe()
fails at once with Kafka's words, instead of heartbeating into the void. The broker is a
loopback socket answering ApiVersions only."""
from __future__ import annotations

import asyncio
import struct

import pytest

from roster.client.share_consumer import ShareConsumer, ShareGroupUnsupported
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import decode_request, encode_response, response_schema
from roster.protocol.errors import ErrorCode


async def api_versions_only(reader, writer) -> None:
    """Answer every ApiVersions with keys 0-3 and 18 (no share-group APIs)."""
    try:
        while True:
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            request = decode_request(await reader.readexactly(size))
            schema = response_schema(ApiKey.API_VERSIONS, request.api_version)
            key = element(schema, "api_keys")
            body = make(schema, error_code=ErrorCode.none, api_keys=tuple(
                make(key, api_key=k, min_version=0, max_version=3) for k in (0, 1, 2, 3, 18)),
                supported_features=(), finalized_features_epoch=-1, finalized_features=(),
                zk_migration_ready=False)
            writer.write(encode_response(ApiKey.API_VERSIONS, request.api_version,
                                         request.correlation_id, body))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


def test_a_broker_without_share_groups_is_refused_in_kafkas_words():
    async def scenario():
        server = await asyncio.start_server(api_versions_only, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        consumer = ShareConsumer(f"127.0.0.1:{port}", "g")
        try:
            with pytest.raises(ShareGroupUnsupported,
                               match="^The cluster does not support the share group "
                                     "protocol. To use share groups, the cluster must have "
                                     "the share group protocol enabled.$"):
                await consumer.subscribe(["orders"])
        finally:
            await consumer.close()
            server.close()
            await server.wait_closed()

    asyncio.run(asyncio.wait_for(scenario(), 30))
