"""A minimal group consumer on roster.client: subscribe, poll records, commit.

    consumer = Consumer("localhost:9092", "billing", group_instance_id="worker-3")
    await consumer.subscribe(["invoices"])
    while True:
        for record in await consumer.poll(timeout_ms=1000):
            handle(record)
        await consumer.commit()

A partition's position is the offset of the next record poll() returns; commit() commits the
positions, so it never covers a record poll() has not returned. What a Fetch brings beyond
`max_records` is kept for the next poll() (roster.client.fetch_buffer), and dropped when the
partition is revoked or lost.
"""
from __future__ import annotations

import asyncio
import datetime
import logging

from roster.client.cluster import Cluster
from roster.client.connection import REQUEST_TIMEOUT_MS, ConnectionClosed
from roster.client.consumer_member import ConsumerGroupMember
from roster.client.errors import REFUSALS, AuthorizationError, fatal_exception
from roster.client.fetch_buffer import FetchBuffer
from roster.client.member import GroupMember
from roster.client.membership import MemberConfig
from roster.client.records import ConsumerRecord, decode_fetched
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.client")
FETCH, LIST_OFFSETS = 1, 2
EARLIEST, LATEST = -2, -1
# The partition's leader moved (or is being elected): ask Metadata again and retry, as
# Kafka's consumer does; never a reason to fail poll().
LEADER_MOVED = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch,
                          ErrorCode.unknown_leader_epoch, ErrorCode.leader_not_available,
                          ErrorCode.replica_not_available, ErrorCode.unknown_topic_or_partition,
                          ErrorCode.kafka_storage_error, ErrorCode.offset_not_available,
                          ErrorCode.unknown_topic_id})
RETRY_BACKOFF_MS = 100   # Kafka's retry.backoff.ms: after a failed fetch, before the next


class LeaderMoved(ConnectionClosed):
    """A partition's leader could not answer (it moved, or the broker is gone): retried."""
ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}


class Consumer:
    def __init__(self, bootstrap: str, group_id: str, *, group_instance_id: str | None = None,
                 assignors: tuple[str, ...] = ("range",), auto_offset_reset: str = "earliest",
                 session_timeout_ms: int = 45_000, heartbeat_interval_ms: int = 3_000,
                 rebalance_timeout_ms: int = 300_000, metadata_max_age_ms: int = 300_000,
                 max_partition_fetch_bytes: int = 1 << 20, client_id: str = "roster-consumer",
                 on_assigned=None, on_revoked=None, on_lost=None, security=None,
                 group_protocol: str = "classic",
                 group_remote_assignor: str | None = None,
                 isolation_level: str = "read_uncommitted",
                 request_timeout_ms: int = REQUEST_TIMEOUT_MS) -> None:
        if auto_offset_reset not in ("earliest", "latest"):
            raise ValueError("auto_offset_reset must be 'earliest' or 'latest'")
        if isolation_level not in ISOLATION_LEVELS:
            raise ValueError("isolation_level must be 'read_uncommitted' or 'read_committed'")
        # read_committed: Fetch returns only up to the last stable offset, and the records of
        # aborted transactions are dropped here (Kafka's consumer, isolation.level)
        self._isolation = ISOLATION_LEVELS[isolation_level]
        self._cluster = Cluster(bootstrap, client_id, security, request_timeout_ms)
        self._reset = EARLIEST if auto_offset_reset == "earliest" else LATEST
        self._max_partition_bytes = max_partition_fetch_bytes
        self._user = {"assigned": on_assigned, "revoked": on_revoked, "lost": on_lost}
        self._buffer = FetchBuffer()
        self._turn = 0
        self._fetch_failed = False   # in this poll: then it backs off instead of spinning
        if group_protocol not in ("classic", "consumer"):
            raise ValueError("group_protocol must be 'classic' or 'consumer'")
        # "consumer": the KIP-848 protocol, the broker assigns (group_remote_assignor: uniform
        # or range); session timeout and heartbeat interval are then the broker's
        member_class = ConsumerGroupMember if group_protocol == "consumer" else GroupMember
        extra = {"server_assignor": group_remote_assignor} if group_protocol == "consumer" \
            else {}
        self.member = member_class(
            bootstrap, MemberConfig(group_id, group_instance_id, session_timeout_ms,
                                    rebalance_timeout_ms, heartbeat_interval_ms,
                                    assignors=tuple(assignors)),
            client_id=client_id, metadata_max_age_ms=metadata_max_age_ms,
            security=self._cluster.security, request_timeout_ms=request_timeout_ms,
            on_assigned=self._assigned, on_revoked=self._revoked, on_lost=self._lost, **extra)

    @property
    def positions(self) -> dict[tuple[str, int], int]:
        """The next offset poll() returns, per owned partition that has started (and, inside
        on_revoked, the partitions being revoked)."""
        return self._buffer.positions()

    @property
    def assignment(self) -> tuple[tuple[str, int], ...]:
        return self.member.assignment

    async def subscribe(self, topics: list[str]) -> None:
        await self.member.start(topics)

    # -- rebalance callbacks ------------------------------------------------------------------

    async def _call_user(self, which: str, partitions) -> None:
        callback = self._user[which]
        if callback is not None:
            outcome = callback(partitions)
            if asyncio.iscoroutine(outcome):
                await outcome

    async def _assigned(self, partitions) -> None:
        await self._call_user("assigned", partitions)

    async def _revoked(self, partitions) -> None:
        await self._call_user("revoked", partitions)   # it may still commit self.positions
        for tp in partitions:
            self._buffer.drop(tp)

    async def _lost(self, partitions) -> None:
        await self._call_user("lost", partitions)
        for tp in partitions:
            self._buffer.drop(tp)

    # -- reading ------------------------------------------------------------------------------

    async def poll(self, timeout_ms: int = 1000, max_records: int = 500) -> list[ConsumerRecord]:
        """Up to `max_records` records, each partition's in log order, starting at its
        position. Records fetched beyond that wait for the next call."""
        fatal = self.member.fatal
        if fatal is not None and fatal.error in REFUSALS:
            raise fatal_exception(fatal, self.member.machine.config.group_id,
                                  getattr(self.member.machine, "subscription", ()))
        assigned = list(self.member.assignment)
        if not assigned:
            await asyncio.sleep(min(timeout_ms, 100) / 1000)  # nothing to read yet
            return []
        self._fetch_failed = False
        try:
            await self._initialise_positions([tp for tp in assigned if tp not in self._buffer])
        except ConnectionClosed as exc:   # coordinator or a leader moving: the next poll
            log.info("cannot set the starting positions yet: %s", exc)
            self._fetch_failed = True
        buffer = self._buffer
        # Every partition with nothing buffered is fetched (without waiting), whatever the
        # others hold, so a partition with a long backlog cannot starve the rest; the order
        # rotates so no partition is always asked first.
        self._turn += 1
        start = self._turn % len(assigned)
        order = assigned[start:] + assigned[:start]
        for tp in order:
            if tp in buffer and not buffer.buffered(tp):
                await self._fetch(tp, 0)
        if not buffer.buffered():
            # nothing anywhere: wait for records on one partition, at most timeout_ms
            waiting = next((tp for tp in order if tp in buffer), None)
            if waiting is not None and not self._fetch_failed:
                await self._fetch(waiting, timeout_ms)
        if self._fetch_failed and not buffer.buffered():
            await asyncio.sleep(min(timeout_ms, RETRY_BACKOFF_MS) / 1000)
        return buffer.take(max_records, list(self.member.assignment))

    async def _initialise_positions(self, partitions) -> None:
        if not partitions:
            return
        generation = self.member.machine.generation
        committed = await self.member.committed(partitions)
        for tp in partitions:
            offset = committed.get(tp, -1)
            if offset < 0:
                offset = await self._log_offset(tp, self._reset)
            # a rebalance during the awaits: the answer may predate the new owner's commits
            if self.member.machine.generation == generation and tp in self.member.assignment \
                    and tp not in self._buffer:
                self._buffer.seek(tp, offset)

    async def _log_offset(self, tp: tuple[str, int], which: int) -> int:
        topic, partition = tp
        connection = await self._cluster.connection_for(topic, partition)

        def body(version):
            schema = request_schema(LIST_OFFSETS, version)
            entry = element(schema, "topics")
            part = element(entry, "partitions")
            return make(schema, replica_id=-1, isolation_level=self._isolation,
                        timeout=datetime.timedelta(seconds=30), topics=(make(
                            entry, name=topic, partitions=(make(
                                part, partition_index=partition, timestamp=which,
                                current_leader_epoch=-1),)),))
        try:
            answer = await connection.call(LIST_OFFSETS, body)
        except ConnectionClosed:
            self._cluster.forget(connection)
            raise
        result = answer.topics[0].partitions[0]
        if result.error_code in LEADER_MOVED:
            self._cluster.stale(topic, partition)
            raise LeaderMoved(f"ListOffsets {topic}-{partition}: {result.error_code.name}")
        if result.error_code is ErrorCode.topic_authorization_failed:
            raise AuthorizationError(result.error_code, topic, "DESCRIBE")
        if result.error_code is not ErrorCode.none:
            raise LeaderMoved(f"ListOffsets {topic}-{partition}: {result.error_code.name}")
        return result.offset

    async def _fetch(self, tp: tuple[str, int], wait_ms: int) -> None:
        """One Fetch at the partition's fetch offset; its records go to the buffer (unless
        the partition was revoked, re-assigned or reset while the Fetch was in flight)."""
        topic, partition = tp
        state = self._buffer.state(tp)
        offset = state.fetch_offset
        connection = None
        try:
            connection = await self._cluster.connection_for(topic, partition)
            # the broker may hold the Fetch for wait_ms (poll's timeout_ms) before answering
            answer = await connection.call(FETCH, lambda v: self._fetch_request(
                v, topic, partition, offset, wait_ms),
                timeout_ms=self._cluster.request_timeout_ms + wait_ms)
        except ConnectionClosed as exc:
            # the leader's broker went away: forget it, so the next fetch asks who leads now
            log.info("fetch from %s-%d failed: %s", topic, partition, exc)
            if connection is not None:
                self._cluster.forget(connection)
            self._fetch_failed = True
            return
        data = answer.responses[0].partitions[0]
        if data.error_code in LEADER_MOVED:
            log.info("fetch from %s-%d: %s; looking up its leader again", topic, partition,
                     data.error_code.name)
            self._cluster.stale(topic, partition)
            self._fetch_failed = True
            return
        if data.error_code is ErrorCode.offset_out_of_range:
            try:
                reset = await self._log_offset(tp, self._reset)
            except ConnectionClosed as exc:
                log.info("cannot look up %s-%d's reset offset yet: %s", topic, partition, exc)
                self._fetch_failed = True
                return
            if self._buffer.state(tp) is state and state.fetch_offset == offset:
                log.warning("%s-%d: offset %d is out of range; resetting to %d", topic,
                            partition, offset, reset)
                self._buffer.seek(tp, reset)
            return
        if data.error_code is ErrorCode.topic_authorization_failed:
            raise AuthorizationError(data.error_code, topic, "READ")
        if data.error_code is not ErrorCode.none or not data.records:
            return
        aborted = [(a.producer_id, a.first_offset)
                   for a in getattr(data, "aborted_transactions", None) or ()]
        records, following = decode_fetched(topic, partition, data.records, aborted)
        self._buffer.add(tp, state, offset, records, following)

    def _fetch_request(self, version: int, topic: str, partition: int, offset: int, wait_ms: int):
        schema = request_schema(FETCH, version)
        entry = element(schema, "topics")
        part = element(entry, "partitions")
        return make(schema, replica_id=-1, max_wait=datetime.timedelta(milliseconds=wait_ms),
                    min_bytes=1, max_bytes=self._max_partition_bytes,
                    isolation_level=self._isolation, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=(),
                    topics=(make(entry, topic=topic, topic_id=self._cluster.topic_ids.get(topic),
                                 partitions=(make(part, partition=partition, fetch_offset=offset,
                                                  partition_max_bytes=self._max_partition_bytes),)),))

    # -- committing ---------------------------------------------------------------------------

    def group_metadata(self):
        """This member for TransactionalProducer.send_offsets_to_transaction (KIP-447)."""
        return self.member.group_metadata()

    async def commit(self, offsets: dict[tuple[str, int], int] | None = None) -> None:
        """Commit the given offsets, or the position of every owned partition: the offset after
        the last record poll() returned (records fetched but not yet returned are not
        covered)."""
        if offsets is None:
            offsets = self.positions
        if offsets:
            await self.member.commit(offsets)

    async def close(self) -> None:
        await self.member.close()
        self._cluster.close()

    async def leave(self) -> None:
        await self.member.leave()
        self._cluster.close()
