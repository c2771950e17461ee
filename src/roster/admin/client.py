"""A small blocking Kafka client for admin commands: one connection, one request at a time.

It negotiates versions with ApiVersions and speaks the highest version both sides know, so the
same commands work against roster and against Apache Kafka. With `security` (a ClientSecurity,
or librdkafka/Java-named settings such as a `--command-config` file holds) it connects over
TLS and authenticates with SASL first; every failure is an AdminError with one clear line.
"""
from __future__ import annotations

import itertools
import socket
import ssl
import struct
import time

from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import decode_response, encode_request, request_schema
from roster.security.client import (
    AuthenticationError,
    ClientSecurity,
    SecurityConfigError,
    SecurityError,
    run_conversation,
    sasl_conversation,
    tls_failure,
)

API_VERSIONS, METADATA = ApiKey.API_VERSIONS, ApiKey.METADATA
CLIENT_ID = "roster-admin"
# The first request's correlation id, chosen so that its bytes read "\r\n\r\n": pointed at an
# HTTP port by mistake, the server sees the end of a (bad) request head at once and answers 400,
# which is recognised below, instead of waiting for a head that never ends. Kafka brokers only
# echo the id back.
FIRST_CORRELATION = 0x0D0A0D0A
SECURITY_DOCS = "docs/security.md"
# The commands address topics by name; these APIs switch to topic ids above these versions.
HIGHEST_BY_NAME = {8: 9, 9: 9}


class AdminError(Exception):
    """The broker could not be reached, or answered with an error the command cannot get past."""


class AdminAuthenticationError(AdminError):
    """The broker refused the SASL credentials."""


class Loading(Exception):
    """The coordinator is still loading its state after a restart; asking again will work."""


def retry_while_loading(step, timeout_s: float = 30.0):
    """Run step() again while it raises Loading, as Kafka's admin client retries
    COORDINATOR_LOAD_IN_PROGRESS."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return step()
        except Loading as exc:
            if time.monotonic() >= deadline:
                raise AdminError(f"the coordinator is still loading: {exc}") from None
            time.sleep(0.1)


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise AdminError(f"expected HOST:PORT, got {address!r}")
    return host.strip("[]") or "localhost", int(port)


def _highest_known(api_key: int, low: int, high: int) -> int | None:
    for version in range(high, low - 1, -1):
        if request_schema(api_key, version) is not None:
            return version
    return None


class AdminClient:
    def __init__(self, bootstrap: str, timeout_s: float = 10.0, security=None,
                 route: bool = True) -> None:
        """`bootstrap`: HOST:PORT, or several comma-separated as Kafka's tools take them (the
        first that answers is used). On a cluster of several brokers a request that belongs
        to a coordinator or a partition leader goes there (roster.admin.routing); `route`
        False keeps every request on this one connection."""
        addresses = [a.strip() for a in bootstrap.split(",") if a.strip()] or [bootstrap]
        try:
            if security is not None and not isinstance(security, ClientSecurity):
                security = ClientSecurity.from_config(security)
            tls = security.ssl_context() if security is not None and security.tls else None
        except SecurityConfigError as exc:
            raise AdminError(f"invalid security settings: {exc}") from None
        self._timeout_s, self._security = timeout_s, security
        self._router, self._routing_checked = None, not route
        for index, address in enumerate(addresses):
            try:
                self._connect(address, timeout_s, security, tls)
                break
            except AdminError:
                if index == len(addresses) - 1:
                    raise

    def _connect(self, bootstrap: str, timeout_s: float, security, tls) -> None:
        host, port = parse_address(bootstrap)
        self.address = f"{host}:{port}"
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            raise AdminError(f"cannot connect to {bootstrap}: {exc.strerror or exc}") from None
        self._answered = False
        self._answers = 0   # how many answers came: a close after the first one means SASL
        self._tls, self._where = tls is not None, f"{host}:{port}"
        self._sasl = security is not None and security.sasl
        try:
            if tls is not None:
                try:
                    self._sock = tls.wrap_socket(self._sock, server_hostname=host)
                except (ssl.SSLError, ConnectionResetError) as exc:
                    raise tls_failure(exc, f"{host}:{port}") from None
            self._correlation = itertools.count(FIRST_CORRELATION)
            self._versions: dict[int, int] = {}
            answer = self._exchange(API_VERSIONS, 0, make(request_schema(API_VERSIONS, 0)))
            for entry in answer.api_keys:
                highest = min(entry.max_version,
                              HIGHEST_BY_NAME.get(entry.api_key, entry.max_version))
                version = _highest_known(entry.api_key, entry.min_version, highest)
                if version is not None:
                    self._versions[entry.api_key] = version
            if security is not None and security.sasl:
                self._authenticate(security, f"{host}:{port}")
        except SecurityError as exc:
            self._sock.close()
            refused = isinstance(exc, AuthenticationError)
            raise (AdminAuthenticationError if refused else AdminError)(str(exc)) from None
        except BaseException:
            self._sock.close()
            raise

    def _authenticate(self, security: ClientSecurity, where: str) -> None:
        # ApiVersions v0 above names every key; SaslAuthenticate up to v2 is all that is used
        versions = dict(self._versions)

        def call(api_key, version, fields):
            try:
                return self._exchange(api_key, version,
                                      make(request_schema(api_key, version), **fields))
            except AdminError:
                raise AdminError(f"{where} closed the connection during SASL "
                                 f"{security.mechanism} authentication as user "
                                 f"{security.username!r}") from None

        run_conversation(sasl_conversation(security, versions, where), call)

    def close(self) -> None:
        self._sock.close()
        if self._router is not None:
            self._router.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def version(self, api_key: int) -> int:
        if api_key not in self._versions:
            raise AdminError(f"the broker does not support api key {api_key}")
        return self._versions[api_key]

    def schema(self, api_key: int) -> type:
        return request_schema(api_key, self.version(api_key))

    def call(self, api_key: int, **fields):
        """Send a request built from newest-version field names; return the decoded answer
        (from the broker that holds what it names, on a cluster of several)."""
        router = self._router_for(api_key)
        if router is not None:
            return router.send(api_key, fields, lambda client, f: client.call_here(api_key, **f))
        return self.call_here(api_key, **fields)

    def call_here(self, api_key: int, **fields):
        """As call(), on this connection whatever the request names."""
        version = self.version(api_key)
        return self._exchange(api_key, version, make(request_schema(api_key, version), **fields))

    def _router_for(self, api_key: int):
        """The router when this is a cluster of several brokers (asked once, by Metadata,
        when a request that may belong elsewhere first comes), else None."""
        from roster.admin import routing
        if api_key not in routing.ROUTED:
            return None
        if not self._routing_checked:
            self._routing_checked = True
            answer = self.call_here(METADATA, topics=(), allow_auto_topic_creation=False,
                                    include_cluster_authorized_operations=False,
                                    include_topic_authorized_operations=False)
            brokers = {b.node_id: f"{b.host}:{b.port}" for b in answer.brokers}
            if len(brokers) > 1:
                self._router = routing.Router(self, brokers, lambda address: AdminClient(
                    address, timeout_s=self._timeout_s, security=self._security, route=False))
        return self._router

    def entry(self, api_key: int, *path: str):
        """The nested request entity class at `path` for the negotiated version."""
        schema = self.schema(api_key)
        for name in path:
            schema = element(schema, name)
        return schema

    def call_undecoded(self, api_key: int, **fields) -> tuple[int, bytes]:
        """As call(), for an answer kio cannot decode: (the version, the answer's frame with
        its header). Kafka's DescribeTransactions answers start time -1 for an id with no open
        transaction, and kio's timestamp reader refuses negative values."""
        router = self._router_for(api_key)
        if router is not None:
            return router.send(api_key, fields,
                               lambda client, f: client.call_undecoded_here(api_key, **f))
        return self.call_undecoded_here(api_key, **fields)

    def call_undecoded_here(self, api_key: int, **fields) -> tuple[int, bytes]:
        version = self.version(api_key)
        body = make(request_schema(api_key, version), **fields)
        return version, self._round_trip(api_key, version, body)[1]

    def _exchange(self, api_key: int, version: int, body):
        correlation_id, frame = self._round_trip(api_key, version, body)
        got, answer = decode_response(api_key, version, frame)
        if got != correlation_id:
            raise AdminError(f"answer {got} does not match request {correlation_id}")
        return answer

    def _round_trip(self, api_key: int, version: int, body) -> tuple[int, bytes]:
        correlation_id = next(self._correlation)
        try:
            self._sock.sendall(encode_request(api_key, version, correlation_id, CLIENT_ID, body))
            head = self._recv(4)
            if not self._answered:
                self._check_kafka(head)
            (size,) = struct.unpack(">i", head)
            frame = self._recv(size)
        except ssl.SSLError as exc:
            if not self._answered:  # TLS 1.3: a refused client certificate shows here
                raise AdminError(str(tls_failure(exc, self._where))) from None
            raise AdminError(f"connection to the broker failed: {exc}") from None
        except ConnectionResetError:
            raise self._closed() from None
        except TimeoutError:
            raise AdminError(f"{self._where} did not answer in time" + (
                "; is it a Kafka listener?" if not self._answered else "")) from None
        except OSError as exc:
            raise AdminError(f"connection to the broker failed: {exc}") from None
        self._answered = True
        self._answers += 1
        return correlation_id, frame

    def _check_kafka(self, head: bytes) -> None:
        """The first bytes of the first answer: a Kafka size, or what a listener of another
        kind sends, which deserves a hint rather than a garbled answer."""
        if head.startswith(b"HTTP"):
            raise AdminError(f"{self._where} answered in HTTP: it is an HTTP port (the broker's "
                             "console and /metrics?), not a Kafka listener; give "
                             "--bootstrap-server the port of a Kafka listener")
        if head[0] in (0x15, 0x16) and head[1] == 0x03 and not self._tls:   # a TLS record
            raise AdminError(f"{self._where} is a TLS listener (it answered with a TLS alert): "
                             "pass --command-config FILE with security.protocol=SSL (or "
                             "SASL_SSL with sasl.mechanism and sasl.jaas.config) and "
                             f"ssl.truststore.location=CA.pem ({SECURITY_DOCS})")

    def _closed(self) -> AdminError:
        """Why the broker may have closed the connection, and what to pass."""
        if self._tls and not self._answered:
            return AdminError(str(tls_failure(ConnectionResetError(), self._where)))
        if not self._answered:
            return AdminError(
                f"{self._where} closed the connection without answering: a TLS listener does "
                "that to a plaintext client; pass --command-config FILE with "
                "security.protocol=SSL (or SASL_SSL) and ssl.truststore.location=CA.pem "
                f"({SECURITY_DOCS})")
        if self._answers == 1 and not self._sasl:
            return AdminError(
                f"{self._where} closed the connection after ApiVersions, as a SASL listener "
                "does to a client that did not authenticate: pass --command-config FILE with "
                "security.protocol=SASL_PLAINTEXT (or SASL_SSL), sasl.mechanism and "
                f"sasl.jaas.config ({SECURITY_DOCS})")
        return AdminError("the broker closed the connection")

    def _recv(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self._sock.recv(size - len(chunks))
            if not chunk:
                raise self._closed()
            chunks += chunk
        return bytes(chunks)
