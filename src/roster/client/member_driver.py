"""What the two group-member drivers share: the asyncio side of a pure member state machine.

GroupMember (member.py, the classic protocol) and ConsumerGroupMember (consumer_member.py,
KIP-848) each drive their own machine, but own the same things around it: a bootstrap
connection for metadata, one to the group coordinator (found with FindCoordinator), the clock,
the application's callbacks, and the loop that carries out the machine's actions. A driver adds
its own `_run` loop, its request sending (`_send`) and any action of its own (`_own_action`).
"""
from __future__ import annotations

import asyncio
import inspect
import logging
import time
import uuid
from collections.abc import Callable

from roster.client import requests
from roster.client.connection import BrokerConnection, as_security
from roster.client.membership import Assigned, Fatal, Lost, Revoked, Send
from roster.protocol.build import element, make
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.client")
METADATA, FIND_COORDINATOR = 3, 10


def parse_bootstrap(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    return host.strip("[]") or "localhost", int(port)


class MemberDriver:
    def __init__(self, machine, bootstrap: str, *, client_id: str,
                 on_assigned: Callable | None, on_revoked: Callable | None,
                 on_lost: Callable | None, clock: Callable[[], float] = time.time,
                 security=None) -> None:
        self.machine = machine
        self._bootstrap = parse_bootstrap(bootstrap)
        self._client_id = client_id
        self._security = as_security(security)
        self._callbacks = {Assigned: on_assigned, Revoked: on_revoked, Lost: on_lost}
        self._clock = clock
        self._metadata_conn: BrokerConnection | None = None
        self._coordinator: BrokerConnection | None = None
        self._coordinator_address: tuple[str, int] | None = None
        self.topic_ids: dict[str, uuid.UUID] = {}
        self._wake = asyncio.Event()
        self._changed = asyncio.Condition()
        self._tasks: set[asyncio.Task] = set()
        self._runner: asyncio.Task | None = None

    # -- public API --------------------------------------------------------------------------

    def now(self) -> int:
        return int(self._clock() * 1000)

    @property
    def assignment(self) -> tuple[tuple[str, int], ...]:
        return self.machine.owned

    @property
    def fatal(self) -> Fatal | None:
        return self.machine.fatal

    async def start(self, topics: list[str]) -> None:
        self._metadata_conn = await BrokerConnection.open(*self._bootstrap, self._client_id,
                                                          security=self._security)
        await self.subscribe(topics)
        self._runner = asyncio.ensure_future(self._run())

    async def subscribe(self, topics: list[str]) -> None:
        """Set the subscription (at start, or later: a changed one makes the member rejoin)."""
        await self._handle(self.machine.subscribe(topics, self.now()))

    async def wait_for(self, condition: Callable[[], bool], timeout_s: float) -> None:
        """Wait until condition() holds (checked whenever the membership changes)."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(condition), timeout_s)

    async def leave(self) -> None:
        await self._handle(self.machine.leave(self.now()))
        await self._shutdown()

    async def close(self) -> None:
        await self._handle(self.machine.close(self.now()))
        await self._shutdown()

    async def fetch_metadata(self, topics) -> dict[str, int]:
        """Partition counts of `topics` (learning their ids on the way)."""
        def body(version):
            schema = requests.request_schema(METADATA, version)
            entry = element(schema, "topics")
            return make(schema, topics=tuple(make(entry, name=t, topic_id=None) for t in topics),
                        allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False)
        answer = await self._metadata_conn.call(METADATA, body)
        counts = {}
        for topic in answer.topics:
            if topic.error_code is ErrorCode.none:
                counts[topic.name] = len(topic.partitions)
                if getattr(topic, "topic_id", None) is not None:
                    self.topic_ids[topic.name] = topic.topic_id
        return counts

    # -- carrying out the machine's actions -----------------------------------------------------

    async def _run(self) -> None:
        raise NotImplementedError

    async def _send(self, send: Send) -> None:
        raise NotImplementedError

    def _own_action(self, action) -> bool:
        """Carry out an action only this driver's machine emits; False if it is not one."""
        return False

    async def _handle(self, actions: list) -> None:
        for action in actions:
            if isinstance(action, Send):
                self._spawn(self._send(action))
            elif isinstance(action, Fatal):
                log.error("group member stopped: %s", action.message)
            elif not self._own_action(action):
                callback = self._callbacks.get(type(action))
                if callback is not None:
                    outcome = callback(action.partitions)
                    if inspect.isawaitable(outcome):
                        await outcome
        self._wake.set()
        async with self._changed:
            self._changed.notify_all()

    def _spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _find_coordinator(self, send: Send) -> None:
        answer = await self._metadata_conn.call(
            FIND_COORDINATOR, lambda v: requests.build("FindCoordinator", v, send.fields, {}))
        error, host, port = requests.find_coordinator_answer(answer)
        if error is ErrorCode.none:
            await self._connect_coordinator(host, port)
        await self._handle(self.machine.on_find_coordinator(error, self.now()))

    async def _connect_coordinator(self, host: str, port: int) -> None:
        if self._coordinator is not None and self._coordinator_address == (host, port):
            return
        self._drop_coordinator()
        self._coordinator = await BrokerConnection.open(host, port, self._client_id,
                                                        security=self._security)
        self._coordinator_address = (host, port)

    def _drop_coordinator(self) -> None:
        if self._coordinator is not None:
            self._coordinator.close()
        self._coordinator, self._coordinator_address = None, None

    async def _shutdown(self) -> None:
        self._wake.set()
        pending = [t for t in self._tasks if not t.done()]
        if pending:  # let a leave in flight finish, briefly
            await asyncio.wait(pending, timeout=5)
        for task in list(self._tasks):
            task.cancel()
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
        self._drop_coordinator()
        if self._metadata_conn is not None:
            self._metadata_conn.close()
