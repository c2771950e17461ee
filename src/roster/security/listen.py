"""One asyncio server per listener, each with its security (server.py calls open_listeners).

- PLAINTEXT: connections as before.
- SSL / SASL_SSL: each accepted socket is handed to asyncio's TLS (`connect_accepted_socket`,
  a deadline of authentication.timeout.ms) and only a finished handshake becomes a
  Connection. A failed handshake (a PLAINTEXT client, garbage, an expired or untrusted
  certificate, a client that never finishes) is logged once and costs nothing more: asyncio's
  own TLS server would drop it silently. On SSL listeners the principal comes from the client
  certificate (`User:<DN>`, ssl.principal.mapping.rules) before anything is served.
- SASL_PLAINTEXT / SASL_SSL: the connection gets a SaslSession (`connection.auth`) that admits
  only ApiVersions, SaslHandshake and SaslAuthenticate until authenticated, and must be done
  within authentication.timeout.ms of connecting.

Every connection knows its listener's advertised address (`connection.endpoint`), which
Metadata and FindCoordinator hand out.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roster.security import ANONYMOUS
from roster.security.listeners import Listener, advertised_address, parse_listeners

# SASL (its mechanisms, the SCRAM store, JAAS) and TLS (certificates, principal mapping) are
# imported by the listeners that use them, when they are set up: a broker with PLAINTEXT
# listeners only never loads them, which shortens its start.
if TYPE_CHECKING:
    from roster.security.tls import PrincipalMapper

log = logging.getLogger("roster.security")


@dataclass
class OpenListener:
    listener: Listener
    server: asyncio.AbstractServer
    host: str
    port: int           # bound
    advertised: tuple[str, int]


def _describe_tls_error(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"client certificate refused: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    if isinstance(exc, (ConnectionAbortedError, asyncio.TimeoutError, TimeoutError)):
        return "the TLS handshake did not finish within authentication.timeout.ms"
    return str(exc) or type(exc).__name__


def _tls_connection_class(base):
    """The listener's Connection class, which takes its principal from the client
    certificate before it serves anything (asyncio calls connection_made once the handshake
    is done)."""
    from roster.security.tls import peer_principal

    class TlsConnection(base):
        mapper: PrincipalMapper | None = None  # SSL listeners; SASL_SSL leaves it to SASL

        def connection_made(self, transport) -> None:
            if self.mapper is not None:
                principal = peer_principal(transport.get_extra_info("ssl_object"), self.mapper)
                if principal is None:
                    peer = transport.get_extra_info("peername") or ("?", 0)
                    log.warning("closing TLS connection from %s:%s on listener %s: no "
                                "ssl.principal.mapping.rules rule applies to its certificate",
                                peer[0], peer[1], self.listener)
                    self._closed = True
                    transport.abort()
                    return
                self.principal = principal
                if principal != ANONYMOUS:
                    peer = transport.get_extra_info("peername") or ("?", 0)
                    log.info("%s:%s authenticated as %s with a client certificate on listener "
                             "%s", peer[0], peer[1], principal, self.listener)
            super().connection_made(transport)

    return TlsConnection


class TlsServer:
    """A TLS listener: its own accept loop, so that each handshake is awaited and a failed one
    (a PLAINTEXT client, garbage, an untrusted or expired certificate, a client that never
    finishes) is logged once; asyncio's own TLS server drops them without a word. The
    handshake runs in asyncio's (uvloop's) TLS implementation."""

    def __init__(self, sock, runtime: _ListenerRuntime, max_pending: int) -> None:
        self.sockets = [sock]
        self._runtime = runtime
        self._handshakes: set[asyncio.Task] = set()
        # handshakes in progress are bounded (socket.listen.backlog.size): beyond, a new
        # connection is closed at once, so a flood of unfinished handshakes holds no more
        self._max_pending = max_pending
        self._refused = 0
        self._next_refusal_log = 0.0
        self._accepting = asyncio.ensure_future(self._accept_forever())

    async def _accept_forever(self) -> None:
        loop = asyncio.get_running_loop()
        sock = self.sockets[0]
        while True:
            try:
                client, address = await loop.sock_accept(sock)
            except asyncio.CancelledError:
                raise
            except OSError as exc:  # EMFILE and the like: wait a little, as asyncio does
                log.error("accepting on listener %s failed: %s", self._runtime.listener.name,
                          exc)
                await asyncio.sleep(1)
                continue
            if len(self._handshakes) >= self._max_pending:
                client.close()
                self._refusal(address)
                continue
            task = asyncio.ensure_future(self._handshake(client, address))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _handshake(self, client, address) -> None:
        runtime = self._runtime
        loop = asyncio.get_running_loop()
        peer = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
        try:
            await loop.connect_accepted_socket(
                runtime.new_connection, client, ssl=runtime.context,
                ssl_handshake_timeout=runtime.handshake_timeout_s)
        except asyncio.CancelledError:
            client.close()
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is this client's alone
            log.warning("TLS handshake with %s on listener %s failed: %s", peer,
                        runtime.listener.name, _describe_tls_error(exc))
            client.close()

    def _refusal(self, address) -> None:
        self._refused += 1
        now = time.monotonic()
        if now >= self._next_refusal_log:  # one line per 10 s at most
            log.warning("listener %s: %d TLS handshakes already in progress; closed %d new "
                        "connection(s), the last from %s", self._runtime.listener.name,
                        self._max_pending, self._refused, address[0] if address else "?")
            self._refused = 0
            self._next_refusal_log = now + 10

    def close(self) -> None:
        self._accepting.cancel()
        for task in list(self._handshakes):
            task.cancel()
        self.sockets[0].close()

    async def wait_closed(self) -> None:
        await asyncio.gather(self._accepting, *self._handshakes, return_exceptions=True)


def _listening_socket(host: str, port: int, backlog: int):
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class _ListenerRuntime:
    def __init__(self, settings, listener: Listener, make_connection, store) -> None:
        self.broker = None  # set by ListenerPlan.open
        self.table = None
        self.listener = listener
        self.make_connection = make_connection
        self.endpoint = None
        timeout_ms = settings.get("authentication.timeout.ms", listener.name)
        self.handshake_timeout_s = timeout_ms / 1000 if timeout_ms > 0 else None
        self.context = None
        self.mapper = None
        self.authenticator = None
        if listener.uses_tls:
            from roster.security.tls import PrincipalMapper, server_context
            self.context = server_context(settings, listener.name, listener.protocol)
            self.mapper = PrincipalMapper(settings.get("ssl.principal.mapping.rules",
                                                       listener.name))
        if listener.uses_sasl:
            from roster.security.sasl import Authenticator
            self.authenticator = Authenticator(listener.name, settings, store)
        self.connection_class = make_connection
        if listener.uses_tls:
            self.connection_class = _tls_connection_class(make_connection)
            if listener.protocol == "SSL":
                self.connection_class.mapper = self.mapper

    def new_connection(self):
        connection = self.connection_class(self.broker, self.table)
        connection.endpoint = self.endpoint
        connection.listener = self.listener.name
        if self.authenticator is not None:
            connection.auth = self.authenticator.session(connection)
            # as Kafka: before authentication no request may exceed sasl.server.max.receive.size
            # (an anonymous client cannot make the broker hold socket.request.max.bytes)
            connection.limit_requests(self.authenticator.max_token)
            if self.handshake_timeout_s is not None:
                asyncio.get_running_loop().call_later(self.handshake_timeout_s,
                                                      _authentication_deadline, connection)
        return connection

    async def open(self, backlog: int):
        listener = self.listener
        if self.context is None:
            return await asyncio.get_running_loop().create_server(
                self.new_connection, listener.host or None, listener.port, reuse_address=True,
                backlog=backlog)
        return TlsServer(_listening_socket(listener.host, listener.port, backlog), self, backlog)


def _authentication_deadline(connection) -> None:
    session = connection.auth
    if session is None or session.authenticated_once or session.failed:
        return  # a re-authentication in progress is not a first one that never finished
    if not connection.is_open:
        return
    log.warning("closing connection from %s on listener %s: no SASL authentication within "
                "authentication.timeout.ms", connection.peer, connection.listener)
    connection.expire()


class ListenerPlan:
    """Every listener's TLS context and SASL mechanisms, checked before the broker starts (a
    bad setting stops roster before it touches the data directory's logs), then bound."""

    def __init__(self, config, data_dir, host: str, port: int, make_connection) -> None:
        settings = config.security
        self.config = config
        self.host = host
        self.configured = bool(settings["listeners"].strip())
        listeners = parse_listeners(
            settings, config["advertised.listeners"] if self.configured else "", host, port)
        # the broker's address once open (configured listeners: the first one's); None: the
        # broker advertises the host and the port bound (Broker.advertise)
        self.endpoint = None
        self.store = None
        if any(listener.uses_sasl for listener in listeners):
            from roster.security.credentials import ScramStore
            self.store = ScramStore.open(data_dir)
        self.runtimes = [_ListenerRuntime(settings, listener, make_connection, self.store)
                         for listener in listeners]

    async def open(self, broker, table) -> list[OpenListener]:
        """Bind every listener (the first one first); OSError when a port cannot be bound.
        Writes nothing into the broker: what it needs of them (the SCRAM store, its endpoint)
        it takes itself (Broker.serve_on)."""
        from roster.broker.broker import Endpoint
        config = self.config
        opened: list[OpenListener] = []
        try:
            for runtime in self.runtimes:
                runtime.broker, runtime.table = broker, table
                listener = runtime.listener
                server = await runtime.open(config["socket.listen.backlog.size"])
                bound = server.sockets[0].getsockname()[1]
                advertised = advertised_address(listener, bound)
                runtime.endpoint = Endpoint(config["node.id"], *advertised)
                opened.append(OpenListener(listener, server, listener.host, bound, advertised))
        except BaseException:
            for item in opened:
                item.server.close()
            raise
        if self.configured:
            self.endpoint = self.runtimes[0].endpoint  # the fallback, and node.id's address
        else:  # as before listeners existed: advertised.listeners is PLAINTEXT://host:port
            self.runtimes[0].endpoint = None  # handlers use broker.endpoint
        return opened
