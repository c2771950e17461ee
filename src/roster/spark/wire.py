"""The broker calls the connector makes besides group membership, over roster.client's
connections: topic metadata, log bounds (ListOffsets), fetching one offset range, committed
offsets of a group (OffsetFetch/OffsetCommit with metadata, as a memberless "simple" group), and
creating the sink's marker topic. Everything is asyncio; `run_sync` drives it from plain code.

All of it works against Apache Kafka as well as roster: versions are negotiated per
connection, and OffsetCommit/OffsetFetch are capped at v9 so topics are named, not numbered.
"""
from __future__ import annotations

import asyncio
import datetime
import logging
import time

from roster.client import requests
from roster.client.bootstrap import Bootstrap
from roster.client.cluster import Cluster
from roster.client.connection import REQUEST_TIMEOUT_MS, BrokerConnection, ConnectionClosed
from roster.client.errors import refusal
from roster.frozen import frozen
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode
from roster.security.client import ClientSecurity

log = logging.getLogger("roster.spark")
FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH = (
    ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH)
FIND_COORDINATOR, CREATE_TOPICS, CREATE_PARTITIONS = (
    ApiKey.FIND_COORDINATOR, ApiKey.CREATE_TOPICS, ApiKey.CREATE_PARTITIONS)
EARLIEST, LATEST = -2, -1
BY_NAME = {OFFSET_COMMIT: 9, OFFSET_FETCH: 9}   # above v9 these name topics by id
TIMEOUT = datetime.timedelta(seconds=30)
RETRIABLE = {ErrorCode.not_leader_or_follower, ErrorCode.leader_not_available,
             ErrorCode.unknown_topic_or_partition, ErrorCode.request_timed_out,
             ErrorCode.kafka_storage_error, ErrorCode.not_coordinator,
             ErrorCode.coordinator_not_available, ErrorCode.coordinator_load_in_progress,
             ErrorCode.fenced_leader_epoch, ErrorCode.unknown_leader_epoch,
             ErrorCode.unknown_topic_id,   # a topic not yet known to every broker
             # ListOffsets at a newly elected leader whose high watermark is not established
             # yet (KIP-207; retriable in Kafka's clients and in roster.client's consumer)
             ErrorCode.offset_not_available,
             # require_stable: an offset is pending in an open transaction (a sink marker)
             ErrorCode.unstable_offset_commit}

TopicPartition = tuple[str, int]


def _refused(error: ErrorCode, resource: str, operation: str) -> None:
    """An authorization refusal raises AuthorizationError, naming what was refused."""
    refused = refusal(error, resource, operation)
    if refused is not None:
        raise refused


class BrokerError(RuntimeError):
    def __init__(self, message: str, error: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.error = error


@frozen
class FetchResult:
    error: ErrorCode
    high_watermark: int
    log_start_offset: int
    records: bytes
    aborted: tuple[tuple[int, int], ...] = ()   # read_committed: (producer id, first offset)


class Broker:
    """One client's connections: a roster.client Cluster (leaders, one connection per broker),
    a bootstrap connection for whole-cluster metadata, and group coordinators by group."""

    def __init__(self, bootstrap: str, client_id: str = "roster-spark",
                 security: ClientSecurity | None = None, isolation_level: int = 0,
                 request_timeout_ms: int = REQUEST_TIMEOUT_MS) -> None:
        """`isolation_level` 1 (read_committed): ListOffsets' LATEST is the last stable offset
        and Fetch stops there, with the aborted transactions of what it returns."""
        self.bootstrap = bootstrap
        self.isolation_level = isolation_level
        self.client_id = client_id
        self.security = security
        self.request_timeout_ms = request_timeout_ms
        self.cluster = Cluster(bootstrap, client_id, security, request_timeout_ms)
        self._bootstrap = Bootstrap(bootstrap)   # any of them: one broker down stops nothing
        self._meta: BrokerConnection | None = None
        self._coordinators: dict[str, BrokerConnection] = {}

    # -- metadata ------------------------------------------------------------------------------

    async def _metadata(self, topics: list[str] | None):
        if self._meta is None or self._meta.closed:   # (closed: a request on it timed out)
            self._meta = await self._bootstrap.connect(
                lambda host, port: BrokerConnection.open(
                    host, port, self.client_id, security=self.security,
                    request_timeout_ms=self.request_timeout_ms))

        def body(version):
            schema = request_schema(METADATA, version)
            entry = element(schema, "topics")
            return make(schema, allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False,
                        topics=None if topics is None else tuple(
                            make(entry, name=t, topic_id=None) for t in topics))
        try:
            answer = await self._meta.call(METADATA, body)
        except ConnectionClosed:
            self._meta_failed()
            raise
        self._bootstrap.learn({b.node_id: (b.host, b.port) for b in answer.brokers})
        return answer

    def _meta_failed(self) -> None:
        """The metadata connection failed: the next one goes to another broker."""
        if self._meta is not None:
            self._meta.close()
        self._meta = None
        self._bootstrap.failed()

    async def partition_counts(self, topics: list[str] | None) -> dict[str, int]:
        """Partition counts of these topics (None: every non-internal topic) that exist. An
        internal topic named explicitly is read too (`__roster_group_events`: roster report)."""
        answer = await self._metadata(topics)
        for t in answer.topics:  # a subscribed topic it may not see: say so, not "no topic"
            _refused(t.error_code, t.name, "DESCRIBE")
        return {t.name: len(t.partitions) for t in answer.topics
                if t.error_code is ErrorCode.none
                and (topics is not None or not getattr(t, "is_internal", False))}

    async def resolve(self, subscribe: tuple[str, ...], pattern: str | None,
                      matches) -> dict[str, int]:
        """The subscribed topics that exist, with their partition counts."""
        if pattern is None:
            return await self.partition_counts(list(subscribe))
        return {t: n for t, n in (await self.partition_counts(None)).items() if matches(t)}

    # -- log bounds ----------------------------------------------------------------------------

    async def list_offsets(self, partitions, which: int) -> dict[TopicPartition, int]:
        """EARLIEST (log start) or LATEST (log end) offset of each partition."""
        return await retrying(lambda: self._list_offsets(partitions, which), "ListOffsets")

    async def _list_offsets(self, partitions, which: int) -> dict[TopicPartition, int]:
        partitions = sorted(set(partitions))
        by_connection: dict[int, tuple[BrokerConnection, list]] = {}
        for tp in partitions:
            connection = await self.cluster.connection_for(*tp)
            by_connection.setdefault(id(connection), (connection, []))[1].append(tp)
        result = {}
        for connection, tps in by_connection.values():
            answer = await connection.call(LIST_OFFSETS, lambda v: _list_offsets(v, tps, which,
                                                                     self.isolation_level))
            for topic in answer.topics:
                for p in topic.partitions:
                    if p.error_code is not ErrorCode.none:
                        _refused(p.error_code, topic.name, "DESCRIBE")
                        if p.error_code in RETRIABLE:
                            self.cluster.forget(connection)
                        raise BrokerError(f"ListOffsets for {topic.name}-{p.partition_index}: "
                                          f"{p.error_code.name}", p.error_code)
                    result[(topic.name, p.partition_index)] = p.offset
        return result

    # -- fetching ------------------------------------------------------------------------------

    async def fetch(self, topic: str, partition: int, offset: int, max_bytes: int,
                    wait_ms: int) -> FetchResult:
        connection = await self.cluster.connection_for(topic, partition)
        try:
            answer = await connection.call(FETCH, lambda v: _fetch(
                v, topic, self.cluster.topic_ids.get(topic), partition, offset, max_bytes,
                wait_ms, self.isolation_level), timeout_ms=self.request_timeout_ms + wait_ms)
        except ConnectionClosed:
            self.cluster.forget(connection)
            raise
        data = answer.responses[0].partitions[0]
        if data.error_code in RETRIABLE:
            self.cluster.forget(connection)
        aborted = tuple((a.producer_id, a.first_offset)
                        for a in getattr(data, "aborted_transactions", None) or ())
        return FetchResult(data.error_code, data.high_watermark,
                           getattr(data, "log_start_offset", -1), data.records or b"", aborted)

    # -- a group's committed offsets, without membership -----------------------------------

    async def _call_coordinator(self, group: str, api_key: int, build):
        """One request to the group's coordinator; a closed connection is forgotten, so the
        caller's retry looks the coordinator up again."""
        connection = await self._coordinator(group)
        try:
            return await connection.call(api_key, build)
        except ConnectionClosed:
            self._drop_coordinator(group)
            raise

    async def _coordinator(self, group: str) -> BrokerConnection:
        connection = self._coordinators.get(group)
        if connection is not None:
            return connection
        if self._meta is None or self._meta.closed:
            await self._metadata([])
        try:
            answer = await self._meta.call(FIND_COORDINATOR, lambda v: requests.build(
                "FindCoordinator", v, {"key": group, "key_type": 0}, {}))
        except ConnectionClosed:
            self._meta_failed()
            raise
        error, host, port = requests.find_coordinator_answer(answer)
        if error is not ErrorCode.none:
            _refused(error, group, "DESCRIBE")
            raise BrokerError(f"no coordinator for group {group}: {error.name}", error)
        connection = await BrokerConnection.open(host, port, self.client_id, caps=BY_NAME,
                                                 security=self.security,
                                                 request_timeout_ms=self.request_timeout_ms)
        self._coordinators[group] = connection
        return connection

    def _drop_coordinator(self, group: str) -> None:
        connection = self._coordinators.pop(group, None)
        if connection is not None:
            connection.close()

    async def committed(self, group: str, partitions) -> dict[TopicPartition, tuple[int, str]]:
        """(committed offset or -1, metadata) per partition."""
        return await retrying(lambda: self._committed(group, partitions), "OffsetFetch")

    async def _committed(self, group: str, partitions):
        partitions = sorted(set(partitions))
        answer = await self._call_coordinator(group, OFFSET_FETCH, lambda v: _offset_fetch(
            v, group, partitions))
        if hasattr(answer, "groups"):
            entry = answer.groups[0]
            error, topics = entry.error_code, entry.topics
        else:
            error, topics = answer.error_code, answer.topics
        if error is not ErrorCode.none:
            _refused(error, group, "DESCRIBE")
            if error in RETRIABLE:
                self._drop_coordinator(group)
            raise BrokerError(f"OffsetFetch for group {group}: {error.name}", error)
        result = {tp: (-1, "") for tp in partitions}
        for topic in topics:
            for p in topic.partitions:
                if p.error_code is not ErrorCode.none:
                    _refused(p.error_code, topic.name, "DESCRIBE")
                    raise BrokerError(f"OffsetFetch for {topic.name}-{p.partition_index}: "
                                      f"{p.error_code.name}", p.error_code)
                result[(topic.name, p.partition_index)] = (p.committed_offset, p.metadata or "")
        return result

    async def commit(self, group: str, offsets: dict[TopicPartition, tuple[int, str]]) -> None:
        """Commit as a simple group (generation -1, no member id): allowed while the group
        has no members, which is the case for the sink's marker groups."""
        await retrying(lambda: self._commit(group, offsets), "OffsetCommit")

    async def _commit(self, group: str, offsets) -> None:
        answer = await self._call_coordinator(group, OFFSET_COMMIT, lambda v: _offset_commit(
            v, group, offsets))
        for topic in answer.topics:
            for p in topic.partitions:
                if p.error_code is not ErrorCode.none:
                    _refused(p.error_code, group if p.error_code is
                             ErrorCode.group_authorization_failed else topic.name, "READ")
                    if p.error_code in RETRIABLE:
                        self._drop_coordinator(group)
                    raise BrokerError(f"OffsetCommit to {group} for {topic.name}-"
                                      f"{p.partition_index}: {p.error_code.name}", p.error_code)

    # -- topics --------------------------------------------------------------------------------

    async def ensure_partition(self, topic: str, partition: int) -> None:
        """Make sure `topic` has a partition `partition`: create the topic, or grow it (to a
        power of two, so that a few tasks with rising ids do not grow it one by one)."""
        wanted = 8
        while wanted <= partition:
            wanted *= 2
        for _ in range(10):
            counts = await self.partition_counts([topic])
            have = counts.get(topic, 0)
            if have > partition:
                return
            if self._meta is None or self._meta.closed:
                await self._metadata([])
            if have == 0:
                answer = await self._meta.call(CREATE_TOPICS, lambda v: _create_topic(
                    v, topic, wanted))
                error = answer.topics[0].error_code
            else:
                answer = await self._meta.call(CREATE_PARTITIONS, lambda v: _grow(
                    v, topic, wanted))
                error = answer.results[0].error_code
            if error not in (ErrorCode.none, ErrorCode.topic_already_exists,
                             ErrorCode.invalid_partitions):
                raise BrokerError(f"cannot create {topic} with {wanted} partitions: "
                                  f"{error.name}", error)
            await asyncio.sleep(0.05)  # created or grown (maybe by another task): look again
        raise BrokerError(f"{topic} did not get a partition {partition}")

    def close(self) -> None:
        self.cluster.close()
        for group in list(self._coordinators):
            self._drop_coordinator(group)
        if self._meta is not None:
            self._meta.close()
            self._meta = None


async def retrying(step, what: str, timeout_s: float = 60.0, backoff_s: float = 0.2):
    """Run `step()` again after a lost connection or a retriable error (a moved leader or
    coordinator, a coordinator still loading) for up to `timeout_s` (Kafka's
    default.api.timeout.ms: on a cluster a dead broker's partitions move only once it is
    fenced, 9 s by default); other errors propagate at once."""
    deadline = time.monotonic() + timeout_s
    attempt = 0
    while True:
        try:
            return await step()
        except (ConnectionClosed, BrokerError) as exc:
            if isinstance(exc, BrokerError) and exc.error not in RETRIABLE:
                raise
            if time.monotonic() >= deadline:
                raise
            log.info("%s failed (%s); retrying", what, exc)
            attempt += 1
            await asyncio.sleep(min(backoff_s * attempt, 1.0))


def run_sync(coroutine_function, *args, bootstrap: str, client_id: str = "roster-spark",
             security: ClientSecurity | None = None, isolation_level: int = 0):
    """Run `coroutine_function(broker, *args)` on a fresh event loop with a fresh Broker."""
    async def main():
        broker = Broker(bootstrap, client_id, security, isolation_level)
        try:
            return await coroutine_function(broker, *args)
        finally:
            broker.close()
    return asyncio.run(main())


# -- request bodies ------------------------------------------------------------------------------

def _by_topic(partitions) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return grouped


def _list_offsets(version, partitions, which, isolation_level):
    schema = request_schema(LIST_OFFSETS, version)
    entry = element(schema, "topics")
    part = element(entry, "partitions")
    return make(schema, replica_id=-1, isolation_level=isolation_level, timeout=TIMEOUT,
                topics=tuple(make(entry, name=topic, partitions=tuple(
                    make(part, partition_index=p, timestamp=which, current_leader_epoch=-1)
                    for p in ps)) for topic, ps in sorted(_by_topic(partitions).items())))


def _fetch(version, topic, topic_id, partition, offset, max_bytes, wait_ms, isolation_level):
    schema = request_schema(FETCH, version)
    entry = element(schema, "topics")
    part = element(entry, "partitions")
    return make(schema, replica_id=-1, max_wait=datetime.timedelta(milliseconds=wait_ms),
                min_bytes=1, max_bytes=max_bytes, isolation_level=isolation_level,
                session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=(), topics=(make(
                    entry, topic=topic, topic_id=topic_id, partitions=(make(
                        part, partition=partition, fetch_offset=offset, log_start_offset=-1,
                        current_leader_epoch=-1, last_fetched_epoch=-1,
                        partition_max_bytes=max_bytes),)),))


def _offset_fetch(version, group, partitions):
    schema = request_schema(OFFSET_FETCH, version)
    grouped = sorted(_by_topic(partitions).items())
    if version >= 8:
        group_entry = element(schema, "groups")
        topic_entry = element(group_entry, "topics")
        return make(schema, require_stable=True, groups=(make(
            group_entry, group_id=group, member_id=None, member_epoch=-1, topics=tuple(
                make(topic_entry, name=t, partition_indexes=tuple(ps)) for t, ps in grouped)),))
    topic_entry = element(schema, "topics")
    return make(schema, group_id=group, require_stable=True, topics=tuple(
        make(topic_entry, name=t, partition_indexes=tuple(ps)) for t, ps in grouped))


def _offset_commit(version, group, offsets):
    schema = request_schema(OFFSET_COMMIT, version)
    topic_entry = element(schema, "topics")
    part = element(topic_entry, "partitions")
    grouped: dict[str, list] = {}
    for (topic, partition), (offset, metadata) in sorted(offsets.items()):
        grouped.setdefault(topic, []).append((partition, offset, metadata))
    return make(schema, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                group_instance_id=None, retention_time=datetime.timedelta(milliseconds=-1),
                topics=tuple(make(topic_entry, name=topic, partitions=tuple(
                    make(part, partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                         committed_timestamp=-1, committed_metadata=m) for p, o, m in parts))
                    for topic, parts in sorted(grouped.items())))


def _create_topic(version, topic, partitions):
    schema = request_schema(CREATE_TOPICS, version)
    entry = element(schema, "topics")
    return make(schema, timeout=TIMEOUT, validate_only=False, topics=(make(
        entry, name=topic, num_partitions=partitions, replication_factor=-1, assignments=(),
        configs=()),))


def _grow(version, topic, partitions):
    schema = request_schema(CREATE_PARTITIONS, version)
    entry = element(schema, "topics")
    return make(schema, timeout=TIMEOUT, validate_only=False, topics=(make(
        entry, name=topic, count=partitions, assignments=None),))
