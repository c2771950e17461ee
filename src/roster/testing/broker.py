"""A roster broker inside the test process, serving on its own thread and event loop.

In-process rather than a child process, so a test reaches the broker's own objects: the clock
(`broker.clock.advance(seconds)`, broker/clock.py) and the fault-injection control plane
(`broker.faults`) are called directly, from the test's thread, and carried out on the broker's
loop (`call`). Its own thread and loop, so the broker serves while the test blocks in a client
call, and an asyncio test's loop is never the broker's.

What `start` does is what `roster serve` does (broker/network/server.py: the data directory's
lock, the listener plan, test mode's check, the broker, the listeners, the optional HTTP
port), without signal handlers (only a main thread may have them) and with a stop the test
calls.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from roster.testing.logs import BrokerLog

START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 60.0
# what a test broker differs in from `roster serve`'s defaults, and why
TEST_SETTINGS = {
    "roster.test.mode": "true",                 # the clock and broker.faults
    "offsets.topic.num.partitions": "1",        # a broker made per session: start in ms
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",    # the first generation of a group at once
    "group.min.session.timeout.ms": "1000",     # clients' short test sessions accepted
}


class Bootstrap(str):
    """The broker's address in the shapes the common clients take: the string itself
    ("127.0.0.1:PORT": kafka-python, aiokafka, roster.client), `.servers` (a list),
    `.confluent` (confluent-kafka's config dict, to extend: {**b.confluent, "group.id": g})."""

    @property
    def servers(self) -> list[str]:
        return [str(self)]

    @property
    def confluent(self) -> dict[str, str]:
        return {"bootstrap.servers": str(self)}


class RosterBroker:
    """One broker on loopback (`host`, an ephemeral port unless `port`), its data in
    `data_dir`. `settings`: broker settings over TEST_SETTINGS (Kafka's names, as
    `roster serve --set`). `memory=True` keeps partitions' logs in memory (nothing fsynced:
    faster; nothing survives a stop). `http=True` serves the console's HTTP port too (POST
    /clock/advance, /faults)."""

    def __init__(self, data_dir: Path, settings: Mapping[str, str] | None = None, *,
                 host: str = "127.0.0.1", port: int = 0, memory: bool = False,
                 http: bool = False) -> None:
        self.data_dir = Path(data_dir)
        self.settings = {**TEST_SETTINGS, **{k: str(v) for k, v in (settings or {}).items()}}
        if http:
            self.settings.setdefault("http.port", "0")
        self.host, self.port = host, port
        self.memory = memory
        self.log = BrokerLog()
        self.broker = None           # roster.broker.broker.Broker, once started
        self.http_url: str | None = None
        self.started_s: float | None = None   # seconds from start() to serving
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping: asyncio.Event | None = None
        self._topics = 0

    # -- life cycle ---------------------------------------------------------------------------

    def start(self, timeout_s: float = START_TIMEOUT_S) -> RosterBroker:
        began = time.monotonic()
        ready: concurrent.futures.Future = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True,
                                        name=f"roster-broker-{self.data_dir.name}")
        self._thread.start()
        try:
            self.port = ready.result(timeout_s)   # the start's own error, raised here
        except BaseException:
            self.stop()
            self.log.close()    # stop() closes it only for a broker that got to serve
            raise
        self.started_s = time.monotonic() - began
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        loop, stopping = self._loop, self._stopping
        if loop is None or stopping is None or self._thread is None:
            return
        if not loop.is_closed():
            loop.call_soon_threadsafe(stopping.set)
        self._thread.join(timeout_s)
        self.log.close()
        self._loop = None

    def __enter__(self) -> RosterBroker:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- what a test uses ---------------------------------------------------------------------

    @property
    def bootstrap(self) -> Bootstrap:
        return Bootstrap(f"{self.host}:{self.port}")

    @property
    def clock(self):
        """The broker clock (broker/clock.py TestClock): `advance(seconds)` from the test's
        thread returns once every timer it made due has fired on the broker's loop."""
        return self.broker.clock

    @property
    def faults(self):
        """The broker's fault-injection control plane (`broker.faults`, roster.broker.faults:
        called from the test's thread, each method waits for the broker's loop)."""
        return self.broker.faults

    def call(self, function: Callable, *args, **kwargs):
        """function(*args, **kwargs) on the broker's loop thread, its result (or exception)
        here; a coroutine function's coroutine is awaited there."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the broker is not running")
        try:
            if asyncio.get_running_loop() is loop:
                raise RuntimeError("call() from the broker's own loop would wait for itself")
        except RuntimeError as exc:
            if "own loop" in str(exc):
                raise

        async def run():
            result = function(*args, **kwargs)
            if asyncio.iscoroutine(result):
                result = await result
            return result
        return asyncio.run_coroutine_threadsafe(run(), loop).result(CALL_TIMEOUT_S)

    def create_topic(self, name: str | None = None, partitions: int = 1,
                     config: Mapping[str, str] | None = None) -> str:
        """A topic made directly in the broker (no round trip): milliseconds. Without a name,
        a fresh one."""
        if name is None:
            self._topics += 1
            name = f"topic-{self._topics}"
        self.call(self.broker.topics.create, name, partitions,
                  {k: str(v) for k, v in (config or {}).items()})
        return name

    def delete_topic(self, name: str) -> None:
        self.call(self.broker.delete_topic, name)

    # -- the broker's thread ------------------------------------------------------------------

    def _run(self, ready: concurrent.futures.Future) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(ready))
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    async def _serve(self, ready: concurrent.futures.Future) -> None:
        from roster.broker.broker import Broker
        from roster.broker.network.connection import Connection
        from roster.broker.network.server import ConnectionTable
        from roster.broker.partitions.data_dir import claim
        from roster.config import BrokerConfig, ConfigError
        from roster.security.listen import ListenerPlan

        self.log.attach(threading.get_ident())
        config = BrokerConfig.from_overrides(self.settings)
        table = ConnectionTable(config)
        lock = claim(self.data_dir)
        try:
            try:
                listeners = ListenerPlan(config, self.data_dir, self.host, self.port,
                                         Connection)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            _check_test_mode(config, listeners)
            broker = Broker(config, self.data_dir, **_log_opener(self.memory))
            broker.start()
            self.broker = broker
            listening = await listeners.open(broker, table)
            broker.serve_on(listeners, listening)
            http = None
            if config["http.port"] is not None:
                from roster.observability.http import HttpListener
                http = HttpListener(broker, config["http.host"], config["http.port"],
                                    connections=lambda: len(table.connections),
                                    require_auth=any(item.listener.protocol.startswith("SASL")
                                                     for item in listening))
                await http.start()
                self.http_url = http.url
            self._stopping = asyncio.Event()
            ready.set_result(listening[0].port)
            try:
                await self._stopping.wait()
            finally:
                for item in listening:
                    item.server.close()
                if http is not None:
                    await http.stop()
                parked = [connection.close() for connection in list(table.connections)]
                await asyncio.gather(*filter(None, parked), return_exceptions=True)
                for item in listening:
                    await item.server.wait_closed()
                await broker.stop()
        finally:
            lock.release()


def _check_test_mode(config, listeners) -> None:
    """Test mode's refusal of a listener strangers reach (roster.config.check_test_mode)."""
    from roster import config as configuration
    check = getattr(configuration, "check_test_mode", None)
    if check is not None:
        check(config, [runtime.listener for runtime in listeners.runtimes])


def _log_opener(memory: bool) -> dict:
    if not memory:
        return {}
    from roster.log.memory import MemoryLog
    return {"open_log": lambda directory, config: MemoryLog(config)}


_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")


def safe_name(text: str, limit: int = 120) -> str:
    """`text` as a topic or group name may be (Kafka's legal characters), at most `limit`."""
    return _UNSAFE.sub("-", text).strip("-.")[:limit] or "t"
