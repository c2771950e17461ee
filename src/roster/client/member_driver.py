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
from roster.client.bootstrap import Bootstrap, parse_bootstrap_servers
from roster.client.connection import (
    REQUEST_TIMEOUT_MS,
    BrokerConnection,
    ConnectionClosed,
    as_security,
)
from roster.client.errors import fatal_exception
from roster.client.member_actions import Assigned, Fatal, LeaveWhenRevoked, Lost, Revoked, Send
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.errors import ErrorCode
from roster.security.client import SecurityError

log = logging.getLogger("roster.client")
TOPIC_IDS_FROM = 10   # OffsetCommit / OffsetFetch v10 name topics by id
# OffsetFetch answers that mean "ask again": the coordinator moved or is loading the group
# (UNSTABLE_OFFSET_COMMIT, an offset pending in an open transaction, stays an offset of -1)
COORDINATOR_MOVING = frozenset({ErrorCode.not_coordinator, ErrorCode.coordinator_not_available,
                                ErrorCode.coordinator_load_in_progress})


class CommitFailed(RuntimeError):
    def __init__(self, errors: dict) -> None:
        super().__init__(f"offset commit failed: {errors}")
        self.errors = errors


def parse_bootstrap(bootstrap: str) -> tuple[str, int]:
    """The first of the bootstrap servers (roster.client.bootstrap.Bootstrap tries them all)."""
    return parse_bootstrap_servers(bootstrap)[0]


class MemberDriver:
    def __init__(self, machine, bootstrap: str, *, client_id: str,
                 on_assigned: Callable | None, on_revoked: Callable | None,
                 on_lost: Callable | None, clock: Callable[[], float] = time.time,
                 security=None, request_timeout_ms: int = REQUEST_TIMEOUT_MS) -> None:
        self.machine = machine
        self.request_timeout_ms = request_timeout_ms
        self._bootstrap = Bootstrap(bootstrap)
        self._client_id = client_id
        self._security = as_security(security)
        self._callbacks = {Assigned: on_assigned, Revoked: on_revoked, Lost: on_lost}
        self._clock = clock
        self._metadata_conn: BrokerConnection | None = None
        self._metadata_opening = asyncio.Lock()   # one reconnect, however many tasks ask
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

    def group_metadata(self):
        """This member as TxnOffsetCommit names it (KIP-447): group, generation (the member
        epoch in the consumer protocol), member id and group.instance.id. Pass it to
        TransactionalProducer.send_offsets_to_transaction, so a member fenced by a rebalance
        cannot commit offsets inside a transaction."""
        from roster.client.transaction_state import GroupMetadata
        m = self.machine
        return GroupMetadata(m.config.group_id, m.generation, m.member_id,
                             m.config.group_instance_id)

    async def start(self, topics: list[str]) -> None:
        await self._bootstrap_connection()
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
        await self._stop(self.machine.leave)

    async def close(self) -> None:
        await self._stop(self.machine.close)

    async def _stop(self, how) -> None:
        """Close or leave: on_revoked (or on_lost) runs first, heartbeats going on meanwhile,
        and the leave follows it (LeaveWhenRevoked), as Kafka's clients do. A callback that
        raises still leaves the group, then the error reaches the caller."""
        try:
            await self._handle(how(self.now()))
        finally:
            await self._handle(self.machine.finish_leaving(self.now()))   # (done: nothing)
            await self._shutdown()

    async def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        """Commit offsets as this member. Raises the member's fatal error once it is fenced,
        CommitFailed else."""
        send = self.machine.commit_request(offsets)   # raises once fenced
        if await self._learn_topic_ids({topic for topic, _ in offsets}):
            # the lookup waited: the member's loop may have moved it to another epoch
            send = self.machine.commit_request(offsets)
        coordinator = self._coordinator   # (or dropped it meanwhile)
        if coordinator is None:
            raise CommitFailed({tp: ErrorCode.coordinator_not_available for tp in offsets})
        try:
            answer = await coordinator.call(ApiKey.OFFSET_COMMIT, lambda v: requests.build(
                "OffsetCommit", v, send.fields, self.topic_ids))
        except ConnectionClosed as exc:
            # the coordinator's broker went away: the member finds the new one; this commit
            # fails as retriable, as an answer NOT_COORDINATOR would
            log.info("offset commit: lost the connection to the coordinator: %s", exc)
            if self._coordinator is coordinator:
                self._drop_coordinator()
                await self._handle(self.machine.on_connection_lost(self.now()))
            raise CommitFailed({tp: ErrorCode.coordinator_not_available for tp in offsets}) \
                from None
        names = {v: k for k, v in self.topic_ids.items()}
        errors = requests.commit_errors(answer, names)
        await self._handle(self.machine.on_commit(errors, self.now()))
        failed = {tp: e for tp, e in errors.items() if e is not ErrorCode.none}
        if failed:
            if self.machine.fatal:
                raise self._fatal_error()
            raise CommitFailed(failed)

    async def committed(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The group's committed offsets for these partitions (-1: none)."""
        if self._coordinator is None:
            await self.wait_for(lambda: self._coordinator is not None, 30)
        await self._learn_topic_ids({topic for topic, _ in partitions})
        coordinator = self._coordinator   # the lookup may have waited while it was dropped
        if coordinator is None:
            raise ConnectionClosed("lost the group coordinator")
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        answer = await coordinator.call(ApiKey.OFFSET_FETCH, lambda v: offset_fetch_request(
            v, self.machine.config.group_id, by_topic, self.topic_ids))
        group = answer.groups[0] if hasattr(answer, "groups") else answer
        topics = group.topics
        errors = {group.error_code} | {p.error_code for t in topics for p in t.partitions}
        moving = errors & COORDINATOR_MOVING
        if moving:
            # no offsets in this answer: reading from the log's start instead would re-read
            raise ConnectionClosed(f"OffsetFetch for group {self.machine.config.group_id}: "
                                   f"{next(iter(moving)).name.upper()}")
        names = {v: k for k, v in self.topic_ids.items()}
        return {(getattr(t, "name", None) or names.get(t.topic_id), p.partition_index):
                p.committed_offset for t in topics for p in t.partitions}

    def _fatal_error(self) -> Exception:
        return fatal_exception(self.machine.fatal, self.machine.config.group_id,
                               getattr(self.machine, "subscription", ()))

    async def _learn_topic_ids(self, topics: set[str]) -> bool:
        """OffsetCommit/OffsetFetch v10 name topics by id: make sure we know them. Whether
        it had to ask (and so waited)."""
        missing = [t for t in topics if t not in self.topic_ids]
        if missing and self._coordinator is not None and \
                self._coordinator.version(ApiKey.OFFSET_COMMIT) >= TOPIC_IDS_FROM:
            await self.fetch_metadata(tuple(sorted(missing)))
            return True
        return False

    async def fetch_metadata(self, topics) -> dict[str, int]:
        """Partition counts of `topics` (learning their ids on the way)."""
        def body(version):
            schema = requests.request_schema(ApiKey.METADATA, version)
            entry = element(schema, "topics")
            return make(schema, topics=tuple(make(entry, name=t, topic_id=None) for t in topics),
                        allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False)
        answer = await self._bootstrap_call(ApiKey.METADATA, body)
        self._bootstrap.learn({b.node_id: (b.host, b.port) for b in answer.brokers})
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

    async def _tick_until(self, closed) -> None:
        """A `_run` for a machine that only asks to be ticked (the KIP-848 heartbeats: consumer
        and share groups): tick it, carry out its actions, sleep until its next deadline (a
        second at the most, or a wake) until its state is `closed`."""
        while self.machine.state is not closed:
            now = self.now()
            await self._handle(self.machine.tick(now))
            deadline = self.machine.next_deadline()
            wait_ms = 1000 if deadline is None else deadline - now
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), max(min(wait_ms, 1000), 1) / 1000)
            except asyncio.TimeoutError:
                pass

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
            elif isinstance(action, LeaveWhenRevoked):   # the callback before it has returned
                await self._handle(self.machine.finish_leaving(self.now()))
            elif not self._own_action(action):
                callback = self._callbacks.get(type(action))
                if callback is not None:
                    outcome = callback(action.partitions)
                    if inspect.isawaitable(outcome):
                        # the machine has moved (e.g. to REVOKING, with a heartbeat due): the
                        # loop must see that now, not once the callback has returned
                        await self._tell_changed()
                        await outcome
        await self._tell_changed()

    async def _tell_changed(self) -> None:
        """Wake the loop and the waiters of wait_for: the machine's state has changed."""
        self._wake.set()
        async with self._changed:
            self._changed.notify_all()

    def _spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _find_coordinator(self, send: Send) -> None:
        """The machine has one lookup in flight at a time: its end, whatever it is, is the
        answer (a broker or coordinator out of reach is COORDINATOR_NOT_AVAILABLE)."""
        try:
            answer = await self._bootstrap_call(ApiKey.FIND_COORDINATOR, lambda v: requests.build(
                "FindCoordinator", v, send.fields, {}))
            error, host, port = requests.find_coordinator_answer(answer)
            if error is ErrorCode.none:
                await self._connect_coordinator(host, port)
        except (ConnectionClosed, SecurityError) as exc:   # SecurityError: retried, loudly
            (log.error if isinstance(exc, SecurityError) else log.info)(
                "cannot reach the group coordinator: %s", exc)
            self._drop_coordinator()
            error = ErrorCode.coordinator_not_available
        await self._handle(self.machine.on_find_coordinator(error, self.now()))

    async def _bootstrap_connection(self) -> BrokerConnection:
        """The connection for metadata and FindCoordinator, opened again once it has failed
        (a request on it timed out, or the broker closed it): every lookup after would fail."""
        async with self._metadata_opening:
            if self._metadata_conn is None or self._metadata_conn.closed:
                self._metadata_conn = await self._bootstrap.connect(self._open)
            return self._metadata_conn

    async def _bootstrap_call(self, api_key: int, body):
        """One request on the bootstrap connection; when it fails, the next one goes to
        another bootstrap server (or known broker), so one broker down stops nothing."""
        connection = await self._bootstrap_connection()
        try:
            return await connection.call(api_key, body)
        except ConnectionClosed:
            connection.close()
            if self._metadata_conn is connection:
                self._metadata_conn = None
                self._bootstrap.failed()
            raise

    async def _open(self, host: str, port: int) -> BrokerConnection:
        return await BrokerConnection.open(host, port, self._client_id, security=self._security,
                                           request_timeout_ms=self.request_timeout_ms)

    async def _connect_coordinator(self, host: str, port: int) -> None:
        if self._coordinator is not None and self._coordinator_address == (host, port) \
                and not self._coordinator.closed:
            return
        self._drop_coordinator()
        self._coordinator = await self._open(host, port)
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


def offset_fetch_request(version: int, group_id: str, by_topic: dict[str, list[int]], topic_ids):
    """OffsetFetch for one group as an admin asks (no member id or epoch): what `committed`
    sends in either protocol."""
    schema = requests.request_schema(ApiKey.OFFSET_FETCH, version)
    if version >= 8:
        group_entry = element(schema, "groups")
        topic_entry = element(group_entry, "topics")
        topics = tuple(make(topic_entry, name=t, topic_id=topic_ids.get(t),
                            partition_indexes=tuple(ps)) for t, ps in sorted(by_topic.items()))
        return make(schema, groups=(make(group_entry, group_id=group_id, member_id=None,
                                         member_epoch=-1, topics=topics),),
                    require_stable=True)
    topic_entry = element(schema, "topics")
    return make(schema, group_id=group_id, require_stable=True, topics=tuple(
        make(topic_entry, name=t, partition_indexes=tuple(ps)) for t, ps in sorted(by_topic.items())))


def heartbeat_assignment(answer) -> tuple | None:
    """A KIP-848 heartbeat answer's assignment as the machines take it: ((topic id,
    (partitions...)), ...), None when the answer carries none."""
    if answer.assignment is None:
        return None
    return tuple((tp.topic_id, tuple(tp.partitions)) for tp in answer.assignment.topic_partitions)
