"""ShareGroupMember: the asyncio driver around ShareMembership (share_consumer_membership.py):
the bootstrap connection, the coordinator connection, the clock and the heartbeat loop, on
roster.client's MemberDriver as the other members. Every group decision is the machine's.

    member = ShareGroupMember("localhost:9092", MemberConfig("orders"))
    await member.start(["invoices"])
    member.assignment        # ((topic, partition), ...) as the broker assigned it
    await member.close()     # leaves with epoch -1
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable

from roster.client.connection import REQUEST_TIMEOUT_MS, ConnectionClosed
from roster.client.member_driver import MemberDriver, heartbeat_assignment
from roster.client.membership import MemberConfig, Send
from roster.client.share_consumer_membership import (
    NO_SHARE_GROUPS,
    NeedTopicIds,
    ShareMembership,
    State,
)
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.codec import request_schema
from roster.security.client import SecurityError

log = logging.getLogger("roster.client")


class ShareGroupUnsupported(RuntimeError):
    """The broker has no share groups (its ApiVersions lacks ShareGroupHeartbeat)."""


class ShareGroupMember(MemberDriver):
    def __init__(self, bootstrap: str, config: MemberConfig, *,
                 client_id: str = "roster-share-consumer",
                 clock: Callable[[], float] = time.time, security=None,
                 member_id: str | None = None,
                 request_timeout_ms: int = REQUEST_TIMEOUT_MS) -> None:
        super().__init__(ShareMembership(config, member_id or str(uuid.uuid4())), bootstrap,
                         client_id=client_id, on_assigned=None, on_revoked=None, on_lost=None,
                         clock=clock, security=security, request_timeout_ms=request_timeout_ms)

    @property
    def assignment_ids(self) -> frozenset:
        return self.machine.owned_ids

    async def start(self, topics: list[str]) -> None:
        connection = await self._bootstrap_connection()
        if ApiKey.SHARE_GROUP_HEARTBEAT not in connection.versions:
            raise ShareGroupUnsupported(NO_SHARE_GROUPS)
        await super().start(topics)

    async def subscribe(self, topics: list[str]) -> None:
        if topics:
            await self.fetch_metadata(tuple(topics))   # topic ids, to name the assignment
            self._learn_names()
        await super().subscribe(topics)

    async def unsubscribe(self) -> None:
        """Leave the group; subscribe() joins it again."""
        await self._handle(self.machine.unsubscribe(self.now()))

    async def wait_assigned(self, timeout_s: float = 60.0) -> None:
        """Until the broker has assigned this member something (or it failed)."""
        await self.wait_for(lambda: bool(self.machine.owned) or self.machine.fatal is not None,
                            timeout_s)
        if self.machine.fatal:
            raise self._fatal_error()

    # -- the loop --------------------------------------------------------------------------------

    async def _run(self) -> None:
        await self._tick_until(State.CLOSED)

    def _own_action(self, action) -> bool:
        if isinstance(action, NeedTopicIds):
            self._spawn(self._resolve())
            return True
        return False

    async def _send(self, send: Send) -> None:
        machine = self.machine
        try:
            if send.api == "FindCoordinator":
                await self._find_coordinator(send)
                return
            if self._coordinator is None:
                raise ConnectionClosed("no coordinator")
            answer = await self._coordinator.call(ApiKey.SHARE_GROUP_HEARTBEAT,
                                                  lambda v: _heartbeat(v, send.fields))
        except (ConnectionClosed, SecurityError) as exc:
            if send.fields.get("member_epoch", 0) < 0:
                return   # leaving anyway
            log.info("lost the connection to the share group coordinator: %s", exc)
            self._drop_coordinator()
            await self._handle(machine.on_connection_lost(self.now()))
            return
        if send.fields["member_epoch"] < 0:
            return   # the answer to a leave
        assignment = heartbeat_assignment(answer)
        interval = round(answer.heartbeat_interval.total_seconds() * 1000)
        await self._handle(machine.on_heartbeat(answer.error_code, answer.error_message,
                                                answer.member_epoch, interval, assignment,
                                                self.now()))

    def _learn_names(self) -> None:
        self.machine.names.update({v: k for k, v in self.topic_ids.items()})

    async def _resolve(self) -> None:
        """Name the topic ids of an assignment: Metadata for the subscribed topics (the
        assignment only names subscribed topics), again after a backoff while one is still
        unknown (a topic just created)."""
        machine = self.machine
        while machine.pending is not None and machine.state is not State.CLOSED:
            try:
                await self.fetch_metadata(machine.subscription)
            except (ConnectionClosed, SecurityError) as exc:
                log.warning("metadata for the share group's topics failed: %s", exc)
            self._learn_names()
            await self._handle(machine.on_topic_names({}, self.now()))
            if machine.pending is not None:
                await asyncio.sleep(machine.config.retry_backoff_ms / 1000)


def _heartbeat(version: int, f: dict):
    names = f["subscribed_topic_names"]
    return make(request_schema(ApiKey.SHARE_GROUP_HEARTBEAT, version),
                group_id=f["group_id"], member_id=f["member_id"],
                member_epoch=f["member_epoch"], rack_id=f["rack_id"],
                subscribed_topic_names=None if names is None else tuple(names))

