"""GroupMember: the asyncio driver around the pure Membership machine.

It owns the sockets (a bootstrap connection for metadata, one to the group coordinator), the
clock, metadata refreshes and backoff, and calls the application's callbacks. All group
decisions are the machine's.

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
from roster.client.connection import ConnectionClosed
from roster.client.errors import fatal_exception
from roster.client.member_driver import MemberDriver, parse_bootstrap  # noqa: F401 (re-exported)
from roster.client.membership import (
    MemberConfig,
    Membership,
    NeedMetadata,
    Send,
    State,
)
from roster.protocol.build import element, make
from roster.protocol.errors import ErrorCode
from roster.security.client import SecurityError

log = logging.getLogger("roster.client")
METADATA = 3


class CommitFailed(RuntimeError):
    def __init__(self, errors: dict) -> None:
        super().__init__(f"offset commit failed: {errors}")
        self.errors = errors


class GroupMember(MemberDriver):
    def __init__(self, bootstrap: str, config: MemberConfig, *, client_id: str = "roster-client",
                 on_assigned: Callable | None = None, on_revoked: Callable | None = None,
                 on_lost: Callable | None = None, metadata_max_age_ms: int = 300_000,
                 clock: Callable[[], float] = time.time, security=None) -> None:
        super().__init__(Membership(config), bootstrap, client_id=client_id,
                         on_assigned=on_assigned, on_revoked=on_revoked, on_lost=on_lost,
                         clock=clock, security=security)
        self._metadata_age_ms = metadata_max_age_ms
        self._next_metadata_ms = 0

    # -- public API (the rest is MemberDriver's) ---------------------------------------------

    async def wait_stable(self, timeout_s: float = 60.0) -> None:
        await self.wait_for(lambda: self.machine.state in (State.STABLE, State.FATAL), timeout_s)
        if self.machine.fatal:
            raise fatal_exception(self.machine.fatal, self.machine.config.group_id)

    async def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        """Commit offsets as this member. Raises FencedError once fenced, CommitFailed else."""
        send = self.machine.commit_request(offsets)
        if self._coordinator is None:
            raise CommitFailed({tp: ErrorCode.coordinator_not_available for tp in offsets})
        await self._learn_topic_ids({topic for topic, _ in offsets})
        answer = await self._call(send)
        names = {v: k for k, v in self.topic_ids.items()}
        errors = requests.commit_errors(answer, names)
        await self._handle(self.machine.on_commit(errors, self.now()))
        failed = {tp: e for tp, e in errors.items() if e is not ErrorCode.none}
        if failed:
            if self.machine.fatal:
                raise fatal_exception(self.machine.fatal, self.machine.config.group_id)
            raise CommitFailed(failed)

    async def committed(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The group's committed offsets for these partitions (-1: none)."""
        if self._coordinator is None:
            await self.wait_for(lambda: self._coordinator is not None, 30)
        await self._learn_topic_ids({topic for topic, _ in partitions})
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        answer = await self._coordinator.call(9, lambda v: _offset_fetch(
            v, self.machine.config.group_id, by_topic, self.topic_ids))
        topics = answer.groups[0].topics if hasattr(answer, "groups") else answer.topics
        names = {v: k for k, v in self.topic_ids.items()}
        return {(getattr(t, "name", None) or names.get(t.topic_id), p.partition_index):
                p.committed_offset for t in topics for p in t.partitions}

    async def _learn_topic_ids(self, topics: set[str]) -> None:
        """OffsetCommit/OffsetFetch v10 name topics by id: make sure we know them."""
        missing = [t for t in topics if t not in self.topic_ids]
        if missing and self._coordinator is not None and self._coordinator.version(8) >= 10:
            await self.fetch_metadata(tuple(missing))

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
            api_key, lambda v: requests.build(send.api, v, send.fields, self.topic_ids))

    async def _refresh_metadata(self, topics: tuple[str, ...]) -> None:
        try:
            counts = await self.fetch_metadata(topics)
        except ConnectionClosed as exc:
            log.warning("metadata refresh failed: %s", exc)
            return
        await self._handle(self.machine.on_metadata(counts, self.now()))


def _offset_fetch(version: int, group_id: str, by_topic: dict[str, list[int]], topic_ids):
    schema = requests.request_schema(9, version)
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
