"""An asyncio connection to one broker, speaking the newest version both sides know of each API.

Requests on one connection are answered in order (Kafka serves a connection one request at a
time), so the connection sends one request at a time and waits for its answer.

With a ClientSecurity (roster.security.client) the connection is TLS-wrapped (SSL, SASL_SSL)
and authenticates with SASL right after ApiVersions (SASL_PLAINTEXT, SASL_SSL). A session
lifetime the broker sets (KIP-368) is renewed on the same connection before it ends. Failures
raise TlsError or AuthenticationError (not ConnectionClosed: retrying would not help).

A request not answered within `request_timeout_ms` (Kafka's `request.timeout.ms`, 30 s by
default) raises RequestTimedOut and closes the connection, as Kafka's NetworkClient disconnects a
node on a request timeout: a broker that accepts but hangs, or a half-open TCP connection after a
network partition, would otherwise stall the caller for ever. The requests queued behind it fail
with ConnectionClosed too, so callers retry as for any lost connection (on a new connection).
"""
from __future__ import annotations

import asyncio
import itertools
import ssl
import struct
import time
from collections.abc import Iterator, Mapping

from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.codec import decode_response, encode_request, request_schema
from roster.protocol.errors import ErrorCode
from roster.security.client import (
    AuthenticationError,
    ClientSecurity,
    SecurityError,
    run_conversation_async,
    sasl_conversation,
    tls_failure,
)

API_VERSIONS = ApiKey.API_VERSIONS
REQUEST_TIMEOUT_MS = 30_000   # Kafka's request.timeout.ms default (Java clients, librdkafka)


class ConnectionClosed(ConnectionError):
    """The broker closed the connection or could not be reached."""


class RequestTimedOut(ConnectionClosed):
    """No answer within the request timeout: the connection was closed (a ConnectionClosed, so
    every caller retries as for a lost connection)."""


def _highest(api_key: int, low: int, high: int, cap: int | None) -> int | None:
    top = high if cap is None else min(high, cap)
    for version in range(top, low - 1, -1):
        if request_schema(api_key, version) is not None:
            return version
    return None


class NegotiatedVersions(Mapping):
    """api key -> the newest version both sides know, worked out on first use. Working it out
    for every key the broker announces imports the request schema of each (some 50 of kio's
    modules, ~0.3 s of CPU), while a connection uses a few; every fresh process paid that on its
    first connection (each Spark query's runner and planner processes, for example)."""

    def __init__(self, announced: dict[int, tuple[int, int]], caps: dict[int, int]) -> None:
        self._announced = announced
        self._caps = caps
        self._known: dict[int, int | None] = {}

    def __getitem__(self, api_key: int) -> int:
        if api_key not in self._known:
            span = self._announced.get(api_key)
            self._known[api_key] = None if span is None else _highest(
                api_key, span[0], span[1], self._caps.get(api_key))
        version = self._known[api_key]
        if version is None:
            raise KeyError(api_key)
        return version

    def __iter__(self) -> Iterator[int]:
        return (key for key in self._announced if key in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api key {api_key}"


def as_security(security) -> ClientSecurity | None:
    """A ClientSecurity, or librdkafka-named settings as a dict, or None (PLAINTEXT)."""
    if security is None or isinstance(security, ClientSecurity):
        return security
    checked = ClientSecurity.from_config(security)
    if checked.tls:
        checked.ssl_context()  # unreadable files: SecurityConfigError now, not at connect
    return checked


class BrokerConnection:
    def __init__(self, reader, writer, client_id: str,
                 request_timeout_ms: int = REQUEST_TIMEOUT_MS) -> None:
        if request_timeout_ms <= 0:
            raise ValueError(f"request_timeout_ms must be positive, got {request_timeout_ms}")
        self.request_timeout_ms = request_timeout_ms
        self._closed_because: str | None = None   # set once closed: why later calls fail
        self._reader = reader
        self._writer = writer
        self._client_id = client_id
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self.versions: Mapping[int, int] = {}
        self._security: ClientSecurity | None = None
        self._where = ""
        self._reauthenticate_at: float | None = None  # monotonic; KIP-368 session lifetime
        self._answered = False  # a TLS error before the first answer is the handshake's

    @classmethod
    async def open(cls, host: str, port: int, client_id: str,
                   caps: dict[int, int] | None = None, timeout_s: float = 10.0,
                   security: ClientSecurity | None = None,
                   request_timeout_ms: int = REQUEST_TIMEOUT_MS):
        where = f"{host}:{port}"
        tls = security.ssl_context() if security is not None and security.tls else None
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=tls,
                                        server_hostname=host if tls else None,
                                        ssl_handshake_timeout=timeout_s if tls else None),
                timeout_s)
        except ssl.SSLError as exc:
            raise tls_failure(exc, where) from None
        except asyncio.TimeoutError:
            raise ConnectionClosed(f"cannot connect to {where}: no connection"
                                   f"{' and TLS handshake' if tls else ''} within "
                                   f"{timeout_s:g} s") from None
        except OSError as exc:
            if tls is not None and isinstance(exc, ConnectionResetError):
                raise tls_failure(exc, where) from None
            raise ConnectionClosed(f"cannot connect to {where}: {exc}") from None
        connection = cls(reader, writer, client_id, request_timeout_ms)
        connection._security, connection._where = security, where
        try:
            try:
                answer = await asyncio.wait_for(connection.call_version(
                    API_VERSIONS, 3, client_software_name="roster",
                    client_software_version="1"), timeout_s)
                if answer.error_code is ErrorCode.unsupported_version:
                    answer = await asyncio.wait_for(connection.call_version(API_VERSIONS, 0),
                                                    timeout_s)
            except asyncio.TimeoutError:
                raise ConnectionClosed(f"{where} did not answer ApiVersions within "
                                       f"{timeout_s:g} s (is it a Kafka listener"
                                       f"{'' if tls else ' without TLS'}?)") from None
            connection.versions = NegotiatedVersions(
                {e.api_key: (e.min_version, e.max_version) for e in answer.api_keys}, caps or {})
            if security is not None and security.sasl:
                await asyncio.wait_for(connection._authenticate(), timeout_s)
        except asyncio.TimeoutError:
            connection.close()
            raise AuthenticationError(f"SASL {security.mechanism} authentication with {where} "
                                      f"got no answer within {timeout_s:g} s") from None
        except BaseException:
            connection.close()
            raise
        return connection

    async def _authenticate(self) -> None:
        """SASL on this connection (the lock held, or not yet shared)."""
        security = self._security

        async def call(api_key, version, fields):
            body = make(request_schema(api_key, version), **fields)
            try:
                return await self._roundtrip(api_key, version, body)
            except ConnectionClosed:
                raise AuthenticationError(
                    f"{self._where} closed the connection during SASL {security.mechanism} "
                    f"authentication as user {security.username!r}") from None

        lifetime_ms = await run_conversation_async(
            sasl_conversation(security, self.versions, self._where), call)
        # re-authenticate well before the broker's deadline (Kafka's clients: 85-95 %)
        self._reauthenticate_at = (time.monotonic() + lifetime_ms * 0.85 / 1000
                                   if lifetime_ms > 0 else None)

    def version(self, api_key: int) -> int:
        if api_key not in self.versions:
            raise ConnectionClosed(f"the broker does not support api key {api_key}")
        return self.versions[api_key]

    @property
    def closed(self) -> bool:
        return self._closed_because is not None

    async def call(self, api_key: int, body_for_version, highest: int | None = None,
                   timeout_ms: int | None = None):
        """`body_for_version(version)` builds the request for the negotiated version (at most
        `highest`, when given). `timeout_ms` replaces the connection's request timeout for this
        request (JoinGroup, which the broker may hold for the rebalance timeout)."""
        version = self.version(api_key)
        if highest is not None:
            version = min(version, highest)
        return await self._exchange(api_key, version, body_for_version(version), timeout_ms)

    async def call_version(self, api_key: int, version: int, *, timeout_ms: int | None = None,
                           **fields):
        return await self._exchange(api_key, version,
                                    make(request_schema(api_key, version), **fields), timeout_ms)

    async def _exchange(self, api_key: int, version: int, body, timeout_ms: int | None = None):
        async with self._lock:
            if self._closed_because is not None:   # e.g. the request before this one timed out
                raise ConnectionClosed(f"connection to {self._where or 'the broker'} closed: "
                                       f"{self._closed_because}")
            if self._reauthenticate_at is not None \
                    and time.monotonic() >= self._reauthenticate_at:
                try:
                    await self._authenticate()
                except SecurityError:
                    self.close()
                    raise
            return await self._roundtrip(api_key, version, body, timeout_ms)

    async def _roundtrip(self, api_key: int, version: int, body, timeout_ms: int | None = None):
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        correlation_id = next(self._ids)
        try:
            frame = await asyncio.wait_for(self._send_and_read(api_key, version, body,
                                                               correlation_id),
                                           timeout_ms / 1000)
        except asyncio.TimeoutError:
            # (_send_and_read turns every OSError, TimeoutError included, into its own errors)
            reason = (f"no answer to {_api_name(api_key)} within {timeout_ms} ms "
                      f"(request.timeout.ms)")
            self.close(reason)
            raise RequestTimedOut(f"{self._where or 'the broker'}: {reason}; "
                                  f"connection closed") from None
        self._answered = True
        got, answer = decode_response(api_key, version, frame)
        if got != correlation_id:
            self.close()
            raise ConnectionClosed(f"answer {got} does not match request {correlation_id}")
        return answer

    async def _send_and_read(self, api_key: int, version: int, body, correlation_id: int):
        """The answer's frame."""
        try:
            self._writer.write(encode_request(api_key, version, correlation_id,
                                              self._client_id, body))
            await self._writer.drain()
            (size,) = struct.unpack(">i", await self._reader.readexactly(4))
            return await self._reader.readexactly(size)
        except ssl.SSLError as exc:
            self.close(f"connection lost: {exc}")
            if not self._answered:
                # TLS 1.3: a refused client certificate shows at the first read, as an alert
                raise tls_failure(exc, self._where) from None
            raise ConnectionClosed(f"connection lost: {exc}") from None
        except (OSError, asyncio.IncompleteReadError) as exc:
            self.close(f"connection lost: {exc}")
            if not self._answered and self._security is not None and self._security.tls:
                # asyncio reports a TLS alert right after the handshake as a lost connection
                raise tls_failure(exc, self._where) from None
            raise ConnectionClosed(f"connection lost: {exc}") from None

    def close(self, reason: str = "closed by the client") -> None:
        if self._closed_because is None:
            self._closed_because = reason
        self._writer.close()
