"""ShareConsumer: a member of a share group (KIP-932, queues for Kafka), in pure Python on
asyncio. Records of the subscribed topics are shared by every member: each poll() returns
records this member has acquired (no other member gets them while it holds them), and each
is acknowledged: accepted (done), released (delivered again, to any member, its delivery
count one higher), rejected (never delivered again) or renewed (held longer).

    consumer = ShareConsumer({"bootstrap.servers": "localhost:9092", "group.id": "orders",
                              "share.acknowledgement.mode": "explicit"})
    await consumer.subscribe(["invoices"])
    while True:
        for record in await consumer.poll(timeout=1.0):
            try:
                handle(record.value)
                consumer.acknowledge(record)                           # ACCEPT
            except Retryable:
                consumer.acknowledge(record, AcknowledgeType.RELEASE)  # again, later
            except Poison:
                consumer.acknowledge(record, AcknowledgeType.REJECT)   # never again
        await consumer.commit_sync()      # optional: the next poll() sends them anyway
    await consumer.close()

Modelled on Kafka's KafkaShareConsumer (and confluent_kafka.ShareConsumer):
- `share.acknowledgement.mode` "implicit" (the default): every record a poll() returned is
  accepted by the next poll(), commit_sync(), commit_async() or close(); acknowledge() raises.
  "explicit": acknowledge() each record; a poll() while one is not acknowledged raises
  UnacknowledgedRecords ("All records must be acknowledged in explicit acknowledgement mode.").
- Acknowledgements travel on the next ShareFetch to the record's broker, or in a
  ShareAcknowledge from commit_sync()/commit_async()/close(). commit_sync() returns each
  partition's outcome ({(topic, partition): None or AcknowledgementError}); every outcome also
  goes to the acknowledgement commit callback, called from poll(), commit_sync() and close().
- RENEW (KIP-1222) keeps a record's acquisition lock for another lock duration
  (share.record.lock.duration.ms) without delivering it anew: the next poll() sends the
  renewal alone (a ShareFetch that asks for no records) and returns the renewed records again,
  to be acknowledged once processed. It needs explicit mode and a broker with ShareFetch v2.
- close() accepts what implicit mode owes, sends the pending acknowledgements and closes each
  broker's share session (epoch -1), then leaves the group; the broker releases whatever this
  member still holds at once, for other members.
- Settings Kafka refuses for a share consumer (group.instance.id, auto.offset.reset, ...) raise
  ShareConsumerConfigError here at construction, saying what to use instead
  (share_consumer_config.py).

poll(timeout) returns at most max.poll.records records; what a round of ShareFetches (one per
broker, each for up to max.poll.records) acquired beyond that waits in the consumer for the
next poll (share.acquire.mode record_limit makes the broker's answer a hard cap too). The pure
cores are share_consumer_membership.ShareMembership (the heartbeat) and
share_consumer_fetch.ShareFetchCore (sessions and acknowledgements); this module does the I/O.
"""
from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable

from roster.client.cluster import Cluster
from roster.client.connection import ConnectionClosed
from roster.client.errors import fatal_exception
from roster.client.membership import MemberConfig
from roster.client.share_consumer_config import (
    ShareConsumerConfigError,
    ShareConsumerSettings,
    settings_from,
)
from roster.client.share_consumer_fetch import (
    AcknowledgeType,
    AcknowledgementError,
    AckResult,
    CannotAcknowledge,
    FetchLimits,
    ShareFetchCore,
    ShareRecord,
)
from roster.client.share_consumer_member import ShareGroupMember, ShareGroupUnsupported
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.client")

__all__ = ["ShareConsumer", "ShareRecord", "AcknowledgeType", "AcknowledgementError",
           "CannotAcknowledge", "UnacknowledgedRecords", "ShareConsumerConfigError",
           "ShareGroupUnsupported", "ImplicitAcknowledgement"]


class UnacknowledgedRecords(RuntimeError):
    """poll() in explicit mode while a record from the last poll is not acknowledged (Kafka's
    client raises IllegalStateException with the same words)."""


class ImplicitAcknowledgement(RuntimeError):
    """acknowledge() in implicit mode (Kafka: IllegalStateException)."""


class ShareConsumer:
    def __init__(self, config: dict | str | None = None, group_id: str | None = None,
                 **settings) -> None:
        """`ShareConsumer({"bootstrap.servers": ..., "group.id": ..., ...})` as
        confluent_kafka, or `ShareConsumer("host:9092", "group", max_poll_records=100)`
        (underscores for dots). `security=` takes the security settings as a dict, as
        roster.client's other clients; `on_commit=` the acknowledgement commit callback."""
        given = dict(config) if isinstance(config, dict) else {}
        if isinstance(config, str):
            given["bootstrap.servers"] = config
        if group_id is not None:
            given["group.id"] = group_id
        callback = settings.pop("on_commit", None)
        given.update(settings.pop("security", None) or {})   # as roster.client's other clients
        given.update(settings)
        self.settings: ShareConsumerSettings = settings_from(given)
        s = self.settings
        self._cluster = Cluster(s.bootstrap, s.client_id, s.security, s.request_timeout_ms)
        self.member = ShareGroupMember(
            s.bootstrap, MemberConfig(s.group_id, retry_backoff_ms=s.retry_backoff_ms,
                                      rack_id=s.rack_id),
            client_id=s.client_id, security=self._cluster.security,
            request_timeout_ms=s.request_timeout_ms)
        self._core = ShareFetchCore(s.group_id, self.member.machine.member_id, FetchLimits(
            s.fetch_max_wait_ms, s.fetch_min_bytes, s.fetch_max_bytes, s.max_poll_records,
            s.acquire_mode))
        self._callback: Callable | None = callback
        self._locks: dict[int, asyncio.Lock] = {}
        self._started = False
        self._closed = False
        self._pending_commits: set[asyncio.Task] = set()

    # -- the application's side -----------------------------------------------------------------

    @property
    def member_id(self) -> str:
        return self.member.machine.member_id

    @property
    def subscription(self) -> tuple[str, ...]:
        return self.member.machine.subscription

    @property
    def assignment(self) -> tuple[tuple[str, int], ...]:
        """The partitions the broker assigned this member ((topic, partition), ...)."""
        return self.member.assignment

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        """The broker's acquisition lock duration, from its last answer (None before one)."""
        return self._core.lock_timeout_ms

    def set_acknowledgement_commit_callback(self, callback: Callable | None) -> None:
        """callback({(topic, partition): {offset, ...}}, exception or None), once per
        partition whose acknowledgements the broker answered (Kafka's
        AcknowledgementCommitCallback.onComplete). Called from poll(), commit_sync() and
        close()."""
        self._callback = callback

    async def subscribe(self, topics) -> None:
        self._ensure_open()
        topics = [topics] if isinstance(topics, str) else list(topics)
        if not topics or any(not t for t in topics):
            raise ValueError("Topic collection to subscribe to cannot contain null or empty "
                             "topic")
        if not self._started:
            await self.member.start(topics)
            self._started = True
        else:
            await self.member.subscribe(topics)

    async def unsubscribe(self) -> None:
        """Stop reading: acknowledge what is owed (implicit mode), close the share sessions
        (what this member still holds goes back to the group) and leave the group. A later
        subscribe() joins it again."""
        self._ensure_open()
        if not self._started or not self.subscription:
            return
        if not self.settings.explicit:
            self._core.acknowledge_all(AcknowledgeType.ACCEPT)
        await self._acknowledge_everywhere(final=True)
        self._core.forget_delivered()
        self._tell_results()
        await self.member.unsubscribe()

    def acknowledge(self, record: ShareRecord,
                    type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:  # noqa: A002
        """Acknowledge a record the last poll() returned (explicit mode only). Sent with the
        next poll(), commit_sync(), commit_async() or close()."""
        self._ensure_open()
        if not self.settings.explicit:
            raise ImplicitAcknowledgement(
                "Implicit acknowledgement of delivery is being used.")   # Kafka's words
        self._core.acknowledge(record, AcknowledgeType(type))

    def acknowledge_offset(self, topic: str, partition: int, offset: int,
                           type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:  # noqa: A002
        """acknowledge() by where the record is (confluent_kafka's acknowledge_offset, Kafka's
        acknowledge(topic, partition, offset, type))."""
        self._ensure_open()
        record = self._core.held(topic, partition, offset)
        if record is None:
            raise CannotAcknowledge("The record cannot be acknowledged.")
        self.acknowledge(record, type)

    async def poll(self, timeout: float = 1.0) -> list[ShareRecord]:
        """Records acquired for this member, waiting up to `timeout` seconds for some."""
        self._ensure_open()
        self._raise_if_failed()
        if not self.subscription:
            raise RuntimeError("Consumer is not subscribed to any topics.")
        core = self._core
        if self.settings.explicit:
            if core.unacknowledged():
                raise UnacknowledgedRecords(
                    "All records must be acknowledged in explicit acknowledgement mode.")
        else:
            core.acknowledge_all(AcknowledgeType.ACCEPT)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0)
        limit = self.settings.max_poll_records
        try:
            if core.has_renewals():
                if core.renewing:
                    await self._round(0, renewing=True)
                # the renewed records alone, as Kafka's client returns them (records waiting
                # beyond max.poll.records come with the next poll)
                return core.take_renewed()
            if core.waiting:
                # acquired by an earlier fetch beyond max.poll.records: returned now; what
                # is acknowledged goes at once, as Kafka's client sends it then
                if core.nodes_with_acks():
                    await self._acknowledge_everywhere(final=False)
                return core.take(limit)
            while True:
                remaining = max(0, round((deadline - loop.time()) * 1000))
                if not self.member.machine.owned_ids:
                    await self._send_stray_acknowledgements()
                    if remaining <= 0:
                        return []
                    await self._wait_assignment(remaining)
                    continue
                await self._round(min(remaining, self.settings.fetch_max_wait_ms))
                records = core.take(limit)
                if records or loop.time() >= deadline:
                    return records
                self._raise_if_failed()
        finally:
            self._tell_results()

    async def commit_sync(self, timeout: float | None = None
                          ) -> dict[tuple[str, int], AcknowledgementError | None]:
        """Send every pending acknowledgement now (ShareAcknowledge) and wait for the answers:
        {(topic, partition): None, or the AcknowledgementError}."""
        self._ensure_open()
        if not self.settings.explicit:
            self._core.acknowledge_all(AcknowledgeType.ACCEPT)
        work = self._acknowledge_everywhere(final=False)
        try:
            outcome = await (asyncio.wait_for(work, timeout) if timeout is not None else work)
        finally:
            self._tell_results()
        return {(r.topic, r.partition): r.exception for r in outcome}

    def commit_async(self) -> asyncio.Task:
        """As commit_sync(), without waiting: the outcome goes to the acknowledgement commit
        callback (from the next poll(), commit_sync() or close())."""
        self._ensure_open()
        if not self.settings.explicit:
            self._core.acknowledge_all(AcknowledgeType.ACCEPT)
        task = asyncio.ensure_future(self._acknowledge_everywhere(final=False))
        self._pending_commits.add(task)
        task.add_done_callback(self._pending_commits.discard)
        return task

    async def close(self, timeout: float = 30.0) -> None:
        """Acknowledge what is owed, close the share sessions (their held records go back to
        the group at once) and leave the group."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._started:
                if not self.settings.explicit:
                    self._core.acknowledge_all(AcknowledgeType.ACCEPT)
                if self._pending_commits:
                    await asyncio.wait(list(self._pending_commits), timeout=timeout)
                try:
                    await asyncio.wait_for(self._acknowledge_everywhere(final=True), timeout)
                except (asyncio.TimeoutError, ConnectionClosed) as exc:
                    log.warning("share consumer %s: closing the share sessions: %s",
                                self.member_id, exc)
                self._tell_results()
                await self.member.close()
        finally:
            self._cluster.close()

    async def __aenter__(self) -> ShareConsumer:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # -- inside ------------------------------------------------------------------------------

    def _ensure_open(self) -> None:
        if self._closed:
            raise RuntimeError("This consumer has already been closed.")

    def _raise_if_failed(self) -> None:
        fatal = self.member.fatal
        if fatal is not None:
            raise fatal_exception(fatal, self.settings.group_id, self.subscription)

    def _tell_results(self) -> None:
        results = self._core.take_results()
        if self._callback is None:
            return
        for result in results:
            self._callback({(result.topic, result.partition): set(result.offsets)},
                           result.exception)

    async def _wait_assignment(self, wait_ms: int) -> None:
        try:
            await self.member.wait_for(lambda: bool(self.member.machine.owned_ids)
                                       or self.member.fatal is not None, wait_ms / 1000)
        except asyncio.TimeoutError:
            pass
        self._raise_if_failed()

    def _learn_topics(self) -> None:
        for topic_id, name in self.member.machine.names.items():
            self._core.learn_topic(name, topic_id)
        for name, topic_id in self._cluster.topic_ids.items():
            self._core.learn_topic(name, topic_id)

    async def _leaders(self) -> dict[int, set]:
        """The assigned partitions by the broker leading each (Metadata when one is unknown)."""
        self._learn_topics()
        machine = self.member.machine
        owned = [(machine.names[t], t, p) for t, p in machine.owned_ids if t in machine.names]
        if any((name, p) not in self._cluster.leaders for name, _, p in owned):
            try:
                await self._cluster.refresh(sorted({name for name, _, _ in owned}))
            except ConnectionClosed as exc:
                log.info("share consumer: metadata failed: %s", exc)
        by_node: dict[int, set] = {}
        for name, topic_id, partition in owned:
            node = self._cluster.leaders.get((name, partition))
            if node is not None:
                by_node.setdefault(node, set()).add((topic_id, partition))
        return by_node

    async def _round(self, wait_ms: int, renewing: bool = False) -> list[ShareRecord]:
        """One ShareFetch to every broker leading an assigned partition (and a
        ShareAcknowledge to any other broker owed acknowledgements), all at once."""
        by_node = await self._leaders()
        leading = {key: node for node, keys in by_node.items() for key in keys}
        for key, holder in list(self._core.holders.items()):
            if key in self._core.acks and leading.get(key, holder) != holder:
                # the leader moved: the records were acquired at the old one, lost with it
                self._core.drop_acks(holder, ErrorCode.not_leader_or_follower, {key})
        nodes = set(by_node) | self._core.nodes_with_acks()
        if renewing:
            nodes = self._core.nodes_with_acks()
        if not nodes:
            await asyncio.sleep(min(wait_ms, self.settings.retry_backoff_ms) / 1000)
            return []
        batches = await asyncio.gather(*(self._with_node(n, by_node.get(n, set()), wait_ms)
                                         for n in sorted(nodes)))
        return [r for batch in batches for r in batch]

    async def _with_node(self, node: int, wanted: set, wait_ms: int) -> list[ShareRecord]:
        core = self._core
        async with self._locks.setdefault(node, asyncio.Lock()):
            try:
                connection = await self._cluster.node(node)
            except (ConnectionClosed, KeyError) as exc:
                log.info("share consumer: broker %d out of reach: %s", node, exc)
                core.drop_acks(node, ErrorCode.network_exception)
                core.sessions.pop(node, None)
                await asyncio.sleep(self.settings.retry_backoff_ms / 1000)
                return []
            # acknowledgements for partitions this broker no longer serves us go first
            stray = {key for key, acks in core.acks.items()
                     if acks and core.holders.get(key) == node and key not in wanted}
            if stray:
                await self._acknowledge(connection, node, final=False, keys=stray)
            if not wanted:
                return []
            version = _version(connection, ApiKey.SHARE_FETCH)
            if version < 2 and self.settings.acquire_mode != 0:
                raise ShareConsumerConfigError(
                    f"The v1 ShareFetch only supports ShareAcquireMode.BATCH_OPTIMIZED "
                    f"(Kafka's words): broker {node} serves ShareFetch v1 only, so "
                    f"share.acquire.mode must be batch_optimized")
            exchange = core.fetch_request(node, wanted, version, wait_ms)
            try:
                answer = await connection.call(
                    ApiKey.SHARE_FETCH, lambda v: _share_fetch(v, exchange.fields),
                    highest=version, timeout_ms=self._cluster.request_timeout_ms + wait_ms)
            except ConnectionClosed as exc:
                log.info("ShareFetch to broker %d failed: %s", node, exc)
                core.on_failure(exchange)
                self._cluster.forget(connection)
                return []
            records, moved = core.on_fetch_answer(exchange, answer)
            self._stale(moved)
            if answer.error_code.value or moved:
                # refused (the member not known yet, a session to start again) or a leader
                # moved: back off before the next round instead of asking again at once
                log.info("ShareFetch to broker %d: %s %s", node, answer.error_code.name,
                         answer.error_message or "")
                await asyncio.sleep(self.settings.retry_backoff_ms / 1000)
            return records

    async def _acknowledge(self, connection, node: int, final: bool,
                           keys=None) -> list[AckResult]:
        version = _version(connection, ApiKey.SHARE_ACKNOWLEDGE)
        exchange = self._core.acknowledge_request(node, version, final=final, keys=keys)
        if exchange is None:
            return []
        try:
            answer = await connection.call(ApiKey.SHARE_ACKNOWLEDGE,
                                           lambda v: _share_acknowledge(v, exchange.fields),
                                           highest=version)
        except ConnectionClosed as exc:
            log.info("ShareAcknowledge to broker %d failed: %s", node, exc)
            self._core.on_failure(exchange)
            self._cluster.forget(connection)
            return exchange.outcome
        self._stale(self._core.on_acknowledge_answer(exchange, answer))
        return exchange.outcome

    async def _acknowledge_node(self, node: int, final: bool) -> list[AckResult]:
        async with self._locks.setdefault(node, asyncio.Lock()):
            try:
                connection = await self._cluster.node(node)
            except (ConnectionClosed, KeyError) as exc:
                exchange = self._core.acknowledge_request(node, 2, final=final)
                if exchange is not None:
                    self._core.on_failure(exchange)
                    return exchange.outcome
                log.info("share consumer: broker %d out of reach: %s", node, exc)
                return []
            return await self._acknowledge(connection, node, final)

    async def _acknowledge_everywhere(self, final: bool) -> list[AckResult]:
        core = self._core
        nodes = core.nodes_with_acks() | (set(core.sessions) if final else set())
        outcomes = await asyncio.gather(*(self._acknowledge_node(n, final)
                                          for n in sorted(nodes)))
        return [r for outcome in outcomes for r in outcome]

    async def _send_stray_acknowledgements(self) -> None:
        """Nothing assigned: acknowledgements still owed go by ShareAcknowledge."""
        if self._core.nodes_with_acks():
            await self._acknowledge_everywhere(final=False)

    def _stale(self, moved) -> None:
        for topic_id, partition in moved:
            name = self._core.names.get(topic_id)
            if name is not None:
                self._cluster.stale(name, partition)


def _version(connection, api_key: int) -> int:
    if api_key not in connection.versions:
        raise ShareGroupUnsupported(
            f"the broker does not serve {ApiKey(api_key).name} (no share groups)")
    return connection.versions[api_key]


def _share_fetch(version: int, f: dict):
    schema = request_schema(ApiKey.SHARE_FETCH, version)
    topic = element(schema, "topics")
    partition = element(topic, "partitions")
    batch = element(partition, "acknowledgement_batches")
    forgotten = element(schema, "forgotten_topics_data")
    return make(
        schema, group_id=f["group_id"], member_id=f["member_id"],
        share_session_epoch=f["share_session_epoch"],
        max_wait=datetime.timedelta(milliseconds=f["max_wait_ms"]), min_bytes=f["min_bytes"],
        max_bytes=f["max_bytes"], max_records=f["max_records"], batch_size=f["batch_size"],
        share_acquire_mode=f["share_acquire_mode"], is_renew_ack=f["is_renew_ack"],
        topics=tuple(make(topic, topic_id=t, partitions=tuple(
            make(partition, partition_index=p, acknowledgement_batches=tuple(
                make(batch, first_offset=first, last_offset=last, acknowledge_types=types)
                for first, last, types in batches))
            for p, batches in parts)) for t, parts in f["topics"]),
        forgotten_topics_data=tuple(make(forgotten, topic_id=t,
                                         partitions=tuple(p for p, _ in parts))
                                    for t, parts in f["forgotten_topics_data"]))


def _share_acknowledge(version: int, f: dict):
    schema = request_schema(ApiKey.SHARE_ACKNOWLEDGE, version)
    topic = element(schema, "topics")
    partition = element(topic, "partitions")
    batch = element(partition, "acknowledgement_batches")
    return make(
        schema, group_id=f["group_id"], member_id=f["member_id"],
        share_session_epoch=f["share_session_epoch"], is_renew_ack=f["is_renew_ack"],
        topics=tuple(make(topic, topic_id=t, partitions=tuple(
            make(partition, partition_index=p, acknowledgement_batches=tuple(
                make(batch, first_offset=first, last_offset=last, acknowledge_types=types)
                for first, last, types in batches))
            for p, batches in parts)) for t, parts in f["topics"]))
