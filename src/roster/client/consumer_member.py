"""ConsumerGroupMember: the asyncio driver around ConsumerMembership (the consumer group
protocol, KIP-848). The same surface as GroupMember (member.py), so Consumer can use either:

    member = ConsumerGroupMember("localhost:9092", MemberConfig("billing"), on_assigned=print)
    await member.start(["invoices"])
    await member.commit({("invoices", 0): 42})
    await member.close()            # static members leave with epoch -2, others with -1

It owns the sockets (bootstrap connection for metadata, one to the coordinator), the clock
and the member id (a random uuid, kept for the member's lifetime, KIP-1082); every group
decision is the machine's.
"""
from __future__ import annotations

import datetime
import logging
import time
import uuid
from collections.abc import Callable

from roster.client.connection import REQUEST_TIMEOUT_MS, ConnectionClosed
from roster.client.consumer_membership import (
    ConsumerMembership,
    NeedTopicIds,
    Reconciled,
    State,
)
from roster.client.member_driver import MemberDriver, heartbeat_assignment
from roster.client.membership import MemberConfig, Send
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode
from roster.security.client import SecurityError

log = logging.getLogger("roster.client")


class ConsumerGroupMember(MemberDriver):
    def __init__(self, bootstrap: str, config: MemberConfig, *, client_id: str = "roster-client",
                 server_assignor: str | None = None, on_assigned: Callable | None = None,
                 on_revoked: Callable | None = None, on_lost: Callable | None = None,
                 clock: Callable[[], float] = time.time, security=None,
                 member_id: str | None = None, request_timeout_ms: int = REQUEST_TIMEOUT_MS,
                 **_ignored) -> None:
        super().__init__(ConsumerMembership(config, member_id or str(uuid.uuid4()),
                                            server_assignor),
                         bootstrap, client_id=client_id, on_assigned=on_assigned,
                         on_revoked=on_revoked, on_lost=on_lost, clock=clock, security=security,
                         request_timeout_ms=request_timeout_ms)

    # -- public API (as GroupMember's; the rest is MemberDriver's) --------------------------------

    async def wait_stable(self, timeout_s: float = 60.0) -> None:
        await self.wait_for(lambda: self.machine.state in (State.STABLE, State.FATAL)
                            and self.machine.pending is None, timeout_s)
        if self.machine.fatal:
            raise self._fatal_error()

    # -- the loop --------------------------------------------------------------------------------

    async def _run(self) -> None:
        await self._tick_until(State.CLOSED)

    def _own_action(self, action) -> bool:
        if isinstance(action, NeedTopicIds):
            self._spawn(self._resolve(action.topic_ids))
            return True
        if isinstance(action, Reconciled):   # on_revoked has returned (it comes first)
            self.machine.reconciled(action, self.now())
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
            answer = await self._coordinator.call(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                                                  lambda v: _heartbeat(v, send.fields))
        except (ConnectionClosed, SecurityError) as exc:
            log.info("lost the connection to the coordinator: %s", exc)
            self._drop_coordinator()
            await self._handle(machine.on_connection_lost(self.now()))
            return
        if send.fields["member_epoch"] < 0:
            return   # the answer to a leave
        assignment = heartbeat_assignment(answer)
        interval = round(answer.heartbeat_interval.total_seconds() * 1000)
        await self._handle(machine.on_heartbeat(answer.error_code, answer.member_epoch,
                                                interval, assignment, self.now()))

    async def _resolve(self, topic_ids) -> None:
        """Metadata by topic id (v10+) for the ids an assignment names."""
        def body(version):
            schema = request_schema(ApiKey.METADATA, version)
            entry = element(schema, "topics")
            return make(schema, topics=tuple(make(entry, name=None, topic_id=t)
                                             for t in topic_ids),
                        allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False)
        try:
            answer = await self._bootstrap_call(ApiKey.METADATA, body)
        except (ConnectionClosed, SecurityError) as exc:   # (SecurityError: reconnecting)
            log.warning("metadata by topic id failed: %s", exc)
            return
        names = {}
        for topic in answer.topics:
            if topic.error_code is ErrorCode.none and topic.name:
                names[topic.topic_id] = topic.name
                self.topic_ids[topic.name] = topic.topic_id
        await self._handle(self.machine.on_topic_names(names, self.now()))


def _heartbeat(version: int, f: dict):
    schema = request_schema(ApiKey.CONSUMER_GROUP_HEARTBEAT, version)
    owned = None
    if f["topic_partitions"] is not None:
        entry = element(schema, "topic_partitions")
        owned = tuple(make(entry, topic_id=t, partitions=tuple(ps))
                      for t, ps in f["topic_partitions"])
    names = f["subscribed_topic_names"]
    return make(schema, group_id=f["group_id"], member_id=f["member_id"],
                member_epoch=f["member_epoch"], instance_id=f["instance_id"],
                rack_id=f["rack_id"],
                rebalance_timeout=datetime.timedelta(milliseconds=f["rebalance_timeout_ms"]),
                subscribed_topic_names=None if names is None else tuple(names),
                subscribed_topic_regex=f["subscribed_topic_regex"],
                server_assignor=f["server_assignor"], topic_partitions=owned)
