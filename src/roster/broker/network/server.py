"""Run a broker: listen, serve connections, stop cleanly on SIGTERM/SIGINT."""
from __future__ import annotations

import asyncio
import gc
import ipaddress
import logging
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path

from roster.broker.broker import Broker
from roster.broker.network.connection import Connection, QueuedBytes
from roster.broker.partitions.data_dir import DataDirError, DataDirLock, claim
from roster.config import (
    INT_MAX,
    BrokerConfig,
    ConfigError,
    check_test_mode,
    connection_overrides,
)
from roster.log.api import LogError
from roster.security.listen import ListenerPlan

log = logging.getLogger("roster.server")

REFUSAL_LOG_INTERVAL_S = 10.0  # at most one line per this long about refused connections
MAX_SWEEP_INTERVAL_S = 10.0


class RefusalLog:
    """Log refused connections without letting a client that reconnects in a loop flood the
    log: the first refusal is logged, then at most one line per interval, which counts the
    refusals since the last line."""

    def __init__(self, clock: Callable[[], float], interval_s: float = REFUSAL_LOG_INTERVAL_S):
        self._clock = clock
        self._interval = interval_s
        self._next = float("-inf")
        self._unlogged = 0

    def refused(self, host: str, limit: int) -> bool:
        """Count a refusal; True when it was logged."""
        now = self._clock()
        if now < self._next:
            self._unlogged += 1
            return False
        more = (f"; {self._unlogged} more refused since the last such line"
                if self._unlogged else "")
        log.info("Rejected connection from /%s, address already has the configured maximum of "
                 "%d connections (max.connections.per.ip)%s", host, limit, more)
        self._next = now + self._interval
        self._unlogged = 0
        return True


def resolve_overrides(overrides: dict[str, int]) -> dict[str, int]:
    """max.connections.per.ip.overrides by address: host names are resolved once, at start (as
    Kafka does); an address is used as given."""
    by_address: dict[str, int] = {}
    names = {}
    for host, limit in overrides.items():
        try:
            by_address[str(ipaddress.ip_address(host))] = limit
        except ValueError:
            names[host] = limit
    for host, limit in names.items():  # an address given as such wins over a name's
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except OSError as exc:
            raise ConfigError(f"max.connections.per.ip.overrides: cannot resolve {host!r}: "
                              f"{exc}") from None
        for info in infos:
            by_address.setdefault(info[4][0], limit)
    return by_address


class ConnectionTable:
    """The open connections: admission (max.connections.per.ip), the idle sweep
    (connections.max.idle.ms) and the shared queued.max.request.bytes."""

    def __init__(self, config: BrokerConfig, clock: Callable[[], float] = time.monotonic):
        self.connections: set[Connection] = set()
        queued = config["queued.max.request.bytes"]
        self.queued = QueuedBytes(queued) if queued > 0 else None
        self._default_limit = config["max.connections.per.ip"]
        self._limits = resolve_overrides(connection_overrides(config))
        self._counting = self._default_limit < INT_MAX or bool(self._limits)
        self._per_ip: dict[str, int] = {}
        self._refusals = RefusalLog(clock)
        idle_ms = config["connections.max.idle.ms"]
        self.max_idle_s = idle_ms / 1000 if idle_ms > 0 else None
        self._clock = clock

    def admit(self, connection: Connection) -> bool:
        if self._counting:
            ip = connection.ip
            count = self._per_ip.get(ip, 0)
            limit = self._limits.get(ip, self._default_limit)
            if count >= limit:
                self._refusals.refused(ip, limit)
                return False
            self._per_ip[ip] = count + 1
        connection.idle_since = self._clock()
        self.connections.add(connection)
        return True

    def discard(self, connection: Connection) -> None:
        self.connections.discard(connection)
        if self._counting:
            ip = connection.ip
            left = self._per_ip.get(ip, 1) - 1
            if left > 0:
                self._per_ip[ip] = left
            else:
                self._per_ip.pop(ip, None)

    @property
    def sweep_interval_s(self) -> float | None:
        if self.max_idle_s is None:
            return None
        return min(max(self.max_idle_s / 10, 0.01), MAX_SWEEP_INTERVAL_S)

    def sweep(self) -> int:
        """Close the connections that moved no bytes, either way, for connections.max.idle.ms
        and have no request being worked on. Nothing is timed per request: a read or write
        sets `active`, and this sweep turns that into a time. Returns how many it closed."""
        now = self._clock()
        deadline = now - self.max_idle_s
        expired = []
        for connection in self.connections:
            if connection.active or connection.busy:
                connection.active = False
                connection.idle_since = now
                continue
            unsent = connection.unsent_bytes  # a slow reader taking its answers is not idle
            if unsent != connection.unsent:
                connection.unsent = unsent
                connection.idle_since = now
                continue
            if connection.idle_since <= deadline:
                expired.append(connection)
        for connection in expired:
            log.debug("closing connection from %s: idle for connections.max.idle.ms",
                      connection.peer)
            connection.expire()
        if expired:
            log.info("closed %d connection(s) idle for connections.max.idle.ms (%d ms)",
                     len(expired), round(self.max_idle_s * 1000))
        return len(expired)


async def sweep_idle(table: ConnectionTable) -> None:
    interval = table.sweep_interval_s
    while True:
        await asyncio.sleep(interval)
        table.sweep()


async def serve(config: BrokerConfig, data_dir: Path, host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT. Prints `roster listening on HOST:PORT` once accepting."""
    table = ConnectionTable(config)  # first: a bad override stops the broker before it starts
    # before anything reads or writes the data: a directory another broker holds is refused
    # untouched (broker/partitions/data_dir.py)
    lock = claim(data_dir)
    try:
        await _serve_locked(config, data_dir, host, port, table, lock)
    finally:
        lock.release()


def _open_broker(config: BrokerConfig, data_dir: Path) -> Broker:
    """Load the data directory; a failure to read or write it is a DataDirError naming it."""
    try:
        broker = Broker(config, data_dir)
        broker.start()
    except (OSError, LogError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        where = f" ({exc.filename})" if isinstance(exc, OSError) and exc.filename else ""
        raise DataDirError(f"cannot load data directory {data_dir}: {reason}{where}") from None
    return broker


async def _serve_locked(config: BrokerConfig, data_dir: Path, host: str, port: int,
                        table: ConnectionTable, lock: DataDirLock) -> None:
    try:  # listeners, TLS and SASL: checked before the broker starts (security/listen.py)
        listeners = ListenerPlan(config, data_dir, host, port, Connection)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    # test mode only where no stranger can reach it (config.check_test_mode)
    check_test_mode(config, [runtime.listener for runtime in listeners.runtimes])
    if config["roster.test.mode"]:
        log.warning("test mode (roster.test.mode): faults can be injected and the broker clock "
                    "moved by anyone who reaches the listeners or the HTTP port; never in "
                    "production")
    broker = _open_broker(config, data_dir)

    loop = asyncio.get_running_loop()
    # one server per listener (`listeners`; default PLAINTEXT on host:port); port 0 asks the
    # OS for a free one
    listening = await listeners.open(broker, table)
    broker.serve_on(listeners, listening)
    servers = [item.server for item in listening]
    sweeper = (asyncio.ensure_future(sweep_idle(table))
               if table.sweep_interval_s is not None else None)

    http = None
    if config["http.port"] is not None:   # /metrics and the group console
        from roster.observability.http import HttpListener
        http = HttpListener(broker, config["http.host"], config["http.port"],
                            connections=lambda: len(table.connections),
                            require_auth=any(item.listener.protocol.startswith("SASL")
                                             for item in listening))
        await http.start()   # serving before the line below: scripts wait for that line
    stopping = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    if config.security["listeners"].strip():
        for item in listening:
            print(f"roster listener {item.listener.name} ({item.listener.protocol}) on "
                  f"{item.host or '0.0.0.0'}:{item.port}, advertised as "
                  f"{item.advertised[0]}:{item.advertised[1]}", flush=True)
    first = listening[0]
    lock.describe_holder([f"{item.host or '0.0.0.0'}:{item.port}" for item in listening])
    print(f"roster listening on {first.host or host}:{first.port}", flush=True)
    if http is not None:
        print(f"roster console on {http.url} (metrics: {http.url}metrics)", flush=True)
    gc.freeze()  # what start-up built lives as long as the broker: keep it out of every GC pass
    try:
        await stopping.wait()
    finally:
        log.info("shutting down")
        if sweeper is not None:
            sweeper.cancel()
        for server in servers:
            server.close()
        if http is not None:
            await http.stop()
        parked = [connection.close() for connection in list(table.connections)]
        await asyncio.gather(*filter(None, parked), return_exceptions=True)
        for server in servers:
            await server.wait_closed()
        await broker.stop()
        log.info("stopped")


def raise_open_file_limit() -> None:
    """Every segment keeps files open and every client a socket: take what the system allows."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError) as exc:
        log.warning("cannot raise the open-file limit: %s", exc)


def tune_garbage_collector() -> None:
    """Groups hold many long-lived objects (members, parked replies, timers); with CPython's
    default thresholds a 10,000-member rebalance spent over half its time in collections that
    found nothing (docs/benchmarks-coordinator.md). Collect young objects 70 times less often."""
    gc.set_threshold(50_000, 50, 100)


def run(config: BrokerConfig, data_dir: Path, host: str, port: int) -> None:
    raise_open_file_limit()
    tune_garbage_collector()
    try:
        import uvloop
        runner = uvloop.run
    except ImportError:  # uvloop is optional; stock asyncio serves the same protocol, slower
        runner = asyncio.run
    try:
        runner(serve(config, data_dir, host, port))
    except DataDirError as exc:  # one line naming the directory, not a traceback or the port
        raise SystemExit(f"roster: {exc}") from None
