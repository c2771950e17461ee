"""GroupMember: the asyncio driver around the pure Membership machine.

It owns the sockets (a bootstrap connection for metadata, one to the group coordinator), the
clock, metadata refreshes and backoff, and calls the application's callbacks. All group
decisions are the machine's. A callback is awaited where its action comes, while this loop goes
on: an on_revoked that takes its time (finishing work, committing) does not stop the heartbeats
that keep the member in the group; the JoinGroup goes once it has returned.

    member = GroupMember("localhost:9092", MemberConfig("billing", group_instance_id="w-3"),
                         on_assigned=print)
    await member.start(["invoices"])
    ...
    await member.commit({("invoices", 0): 42})
    await member.close()          # a static member stays in the group; leave() leaves
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from roster.client import requests
from roster.client.connection import REQUEST_TIMEOUT_MS, ConnectionClosed
from roster.client.member_driver import CommitFailed, MemberDriver, parse_bootstrap  # noqa: F401 (CommitFailed, parse_bootstrap: re-exported)
from roster.client.membership import (
    MemberConfig,
    Membership,
    NeedMetadata,
    RejoinWhenRevoked,
    Send,
    State,
)
from roster.security.client import SecurityError

log = logging.getLogger("roster.client")
# The broker holds a JoinGroup until the rebalance completes (up to the rebalance timeout): Kafka's
# Java client waits that long plus this lapse before it gives the JoinGroup up
# (AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE), and never less than request.timeout.ms.
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000


class GroupMember(MemberDriver):
    def __init__(self, bootstrap: str, config: MemberConfig, *, client_id: str = "roster-client",
                 on_assigned: Callable | None = None, on_revoked: Callable | None = None,
                 on_lost: Callable | None = None, metadata_max_age_ms: int = 300_000,
                 clock: Callable[[], float] = time.time, security=None,
                 request_timeout_ms: int = REQUEST_TIMEOUT_MS) -> None:
        super().__init__(Membership(config), bootstrap, client_id=client_id,
                         on_assigned=on_assigned, on_revoked=on_revoked, on_lost=on_lost,
                         clock=clock, security=security, request_timeout_ms=request_timeout_ms)
        self._metadata_age_ms = metadata_max_age_ms
        self._next_metadata_ms = 0

    # -- public API (the rest is MemberDriver's) ---------------------------------------------

    async def wait_stable(self, timeout_s: float = 60.0) -> None:
        await self.wait_for(lambda: self.machine.state in (State.STABLE, State.FATAL), timeout_s)
        if self.machine.fatal:
            raise self._fatal_error()

    # -- the loop ------------------------------------------------------------------------------

    async def _run(self) -> None:
        while self.machine.state not in (State.CLOSED,):
            now = self.now()
            await self._handle(self.machine.tick(now))
            if now >= self._next_metadata_ms and self.machine.state is State.STABLE:
                self._next_metadata_ms = now + self._metadata_age_ms
                self._spawn(self._refresh_metadata(self.machine.watched_topics()))
            deadline = self.machine.next_deadline()
            wait_ms = self._next_metadata_ms - now
            if deadline is not None:
                wait_ms = min(wait_ms, deadline - now)
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), max(wait_ms, 1) / 1000)
            except asyncio.TimeoutError:
                pass

    def _own_action(self, action) -> bool:
        if isinstance(action, NeedMetadata):
            self._spawn(self._refresh_metadata(action.topics))
            return True
        if isinstance(action, RejoinWhenRevoked):   # on_revoked has returned (it comes first)
            self._spawn(self._handle(self.machine.revoked(self.now())))
            return True
        return False

    async def _send(self, send: Send) -> None:
        machine = self.machine
        try:
            if send.api == "FindCoordinator":
                await self._find_coordinator(send)
                return
            answer = await self._call(send)
        except (ConnectionClosed, SecurityError) as exc:
            if isinstance(exc, SecurityError):  # e.g. the user was deleted: retried, loudly
                log.error("cannot connect to the coordinator: %s", exc)
            else:
                log.info("lost the connection to the coordinator: %s", exc)
            self._drop_coordinator()
            await self._handle(machine.on_connection_lost(self.now()))
            return
        now = self.now()
        if send.api == "JoinGroup":
            await self._handle(machine.on_join(answer, now))
        elif send.api == "SyncGroup":
            await self._handle(machine.on_sync(answer, now))
        elif send.api == "Heartbeat":
            await self._handle(machine.on_heartbeat(answer.error_code, now))
        elif send.api == "LeaveGroup":
            await self._handle(machine.on_leave(answer.error_code, now))

    async def _call(self, send: Send):
        if self._coordinator is None:
            raise ConnectionClosed("no coordinator")
        api_key = requests.API_KEYS[send.api]
        return await self._coordinator.call(
            api_key, lambda v: requests.build(send.api, v, send.fields, self.topic_ids),
            timeout_ms=self._timeout_ms(send.api))

    def _timeout_ms(self, api: str) -> int | None:
        """JoinGroup's own timeout (None: the connection's request timeout). SyncGroup keeps
        request.timeout.ms, as in Kafka's Java client."""
        if api != "JoinGroup":
            return None
        return join_group_timeout_ms(self.request_timeout_ms,
                                     self.machine.config.rebalance_timeout_ms)

    async def _refresh_metadata(self, topics: tuple[str, ...]) -> None:
        try:
            counts = await self.fetch_metadata(topics)
        except (ConnectionClosed, SecurityError) as exc:   # (SecurityError: reconnecting)
            log.warning("metadata refresh failed: %s", exc)
            return
        await self._handle(self.machine.on_metadata(counts, self.now()))


def join_group_timeout_ms(request_timeout_ms: int, rebalance_timeout_ms: int) -> int:
    """How long a JoinGroup may go unanswered: the broker parks it until the rebalance ends."""
    return max(request_timeout_ms, rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
