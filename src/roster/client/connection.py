"""An asyncio connection to one broker, speaking the newest version both sides know of each API.

Requests on one connection are answered in order (Kafka serves a connection one request at a
time), so the connection sends one request at a time and waits for its answer.
"""
from __future__ import annotations

import asyncio
import itertools
import struct

from roster.protocol.build import make
from roster.protocol.codec import decode_response, encode_request, request_schema
from roster.protocol.errors import ErrorCode

API_VERSIONS = 18


class ConnectionClosed(ConnectionError):
    """The broker closed the connection or could not be reached."""


def _highest(api_key: int, low: int, high: int, cap: int | None) -> int | None:
    top = high if cap is None else min(high, cap)
    for version in range(top, low - 1, -1):
        if request_schema(api_key, version) is not None:
            return version
    return None


class BrokerConnection:
    def __init__(self, reader, writer, client_id: str) -> None:
        self._reader = reader
        self._writer = writer
        self._client_id = client_id
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self.versions: dict[int, int] = {}

    @classmethod
    async def open(cls, host: str, port: int, client_id: str,
                   caps: dict[int, int] | None = None, timeout_s: float = 10.0):
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port),
                                                    timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            raise ConnectionClosed(f"cannot connect to {host}:{port}: {exc}") from None
        connection = cls(reader, writer, client_id)
        answer = await connection.call_version(API_VERSIONS, 3, client_software_name="roster",
                                               client_software_version="1")
        if answer.error_code is ErrorCode.unsupported_version:
            answer = await connection.call_version(API_VERSIONS, 0)
        for entry in answer.api_keys:
            version = _highest(entry.api_key, entry.min_version, entry.max_version,
                               (caps or {}).get(entry.api_key))
            if version is not None:
                connection.versions[entry.api_key] = version
        return connection

    def version(self, api_key: int) -> int:
        if api_key not in self.versions:
            raise ConnectionClosed(f"the broker does not support api key {api_key}")
        return self.versions[api_key]

    async def call(self, api_key: int, body_for_version):
        """`body_for_version(version)` builds the request for the negotiated version."""
        version = self.version(api_key)
        return await self._exchange(api_key, version, body_for_version(version))

    async def call_version(self, api_key: int, version: int, **fields):
        return await self._exchange(api_key, version,
                                    make(request_schema(api_key, version), **fields))

    async def _exchange(self, api_key: int, version: int, body):
        async with self._lock:
            correlation_id = next(self._ids)
            try:
                self._writer.write(encode_request(api_key, version, correlation_id,
                                                  self._client_id, body))
                await self._writer.drain()
                (size,) = struct.unpack(">i", await self._reader.readexactly(4))
                frame = await self._reader.readexactly(size)
            except (OSError, asyncio.IncompleteReadError) as exc:
                self.close()
                raise ConnectionClosed(f"connection lost: {exc}") from None
        got, answer = decode_response(api_key, version, frame)
        if got != correlation_id:
            self.close()
            raise ConnectionClosed(f"answer {got} does not match request {correlation_id}")
        return answer

    def close(self) -> None:
        self._writer.close()
