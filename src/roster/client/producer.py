"""A minimal producer: records to partitions (Kafka's default partitioning), one batch per
partition per call, with compression and acks."""
from __future__ import annotations

import asyncio
import datetime
import itertools
import time

from kafka.partitioner.default import murmur2

from roster.client.cluster import Cluster
from roster.client.connection import REQUEST_TIMEOUT_MS, ConnectionClosed
from roster.client.errors import AuthorizationError
from roster.client.records import OutgoingRecord, encode_batch
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode

RETRIABLE = {ErrorCode.not_leader_or_follower, ErrorCode.unknown_topic_or_partition,
             ErrorCode.leader_not_available, ErrorCode.request_timed_out,
             ErrorCode.kafka_storage_error, ErrorCode.not_enough_replicas,
             ErrorCode.not_enough_replicas_after_append,
             # a topic just created, not yet known to every broker (Kafka: retriable)
             ErrorCode.unknown_topic_id}
# Kafka's producer defaults: a batch is retried (retry.backoff.ms apart) until
# delivery.timeout.ms has passed, which rides out a leader election on a cluster (a dead
# broker is fenced after broker.session.timeout.ms, 9 s by default, before its partitions move).
DELIVERY_TIMEOUT_MS = 120_000
RETRY_BACKOFF_MS = 100


class ProduceError(RuntimeError):
    def __init__(self, topic: str, partition: int, error: ErrorCode, message: str | None) -> None:
        super().__init__(f"cannot produce to {topic}-{partition}: {error.name}"
                         + (f" ({message})" if message else ""))
        self.error = error


def default_partition(key: bytes | None, partitions: int, counter) -> int:
    """Kafka's default: murmur2 of the key, positive, modulo the partition count; records
    without a key are spread round-robin."""
    if key is None:
        return next(counter) % partitions
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class Producer:
    def __init__(self, bootstrap: str, *, acks: int = -1, compression: str = "none",
                 client_id: str = "roster-producer", retries: int = 2**31 - 1, security=None,
                 request_timeout_ms: int = REQUEST_TIMEOUT_MS,
                 delivery_timeout_ms: int = DELIVERY_TIMEOUT_MS) -> None:
        self._cluster = Cluster(bootstrap, client_id, security, request_timeout_ms)
        self._acks = acks
        self._compression = compression
        self._retries = retries
        self._delivery_timeout_ms = delivery_timeout_ms
        self._round_robin: dict[str, itertools.count] = {}

    async def send(self, topic: str, value: bytes | None, key: bytes | None = None,
                   partition: int | None = None, headers=(), timestamp_ms: int | None = None):
        """Send one record; returns (partition, offset)."""
        return (await self.send_many(topic, [OutgoingRecord(value, key, tuple(headers),
                                                            timestamp_ms)], partition))[0]

    async def send_many(self, topic: str, records: list[OutgoingRecord],
                        partition: int | None = None) -> list[tuple[int, int]]:
        """Send records (one batch per partition); returns (partition, offset) for each."""
        if topic not in self._cluster.partitions:
            await self._cluster.refresh([topic], create=True)
        count = self._cluster.partitions.get(topic)
        if not count:
            raise ProduceError(topic, -1, ErrorCode.unknown_topic_or_partition, None)
        counter = self._round_robin.setdefault(topic, itertools.count())
        by_partition: dict[int, list[int]] = {}
        for index, record in enumerate(records):
            target = partition if partition is not None else \
                default_partition(record.key, count, counter)
            by_partition.setdefault(target, []).append(index)
        placed: list[tuple[int, int] | None] = [None] * len(records)
        for target, indexes in by_partition.items():
            base = await self._produce(topic, target, [records[i] for i in indexes])
            for n, i in enumerate(indexes):
                placed[i] = (target, base + n if base >= 0 else -1)
        return placed

    async def _produce(self, topic: str, partition: int, records: list[OutgoingRecord]) -> int:
        """The batch's base offset, once the leader acknowledged it. A leader that moved or a
        broker that went away is looked up again and the batch retried, until `retries` or
        the delivery timeout is spent (a retry after a lost answer may write it twice: this
        producer is not idempotent)."""
        batch = encode_batch(records, self._compression, int(time.time() * 1000))
        deadline = time.monotonic() + self._delivery_timeout_ms / 1000
        attempt = 0
        while True:
            connection = None
            try:
                connection = await self._cluster.connection_for(topic, partition)
                answer = await connection.call(ApiKey.PRODUCE, lambda v: self._request(
                    v, topic, partition, batch))
            except ConnectionClosed as exc:
                if connection is not None:   # the leader's broker went away mid-request
                    self._cluster.forget(connection)
                failure: Exception = exc
            else:
                if self._acks == 0:
                    return -1
                result = answer.responses[0].partition_responses[0]
                if result.error_code is ErrorCode.none:
                    return result.base_offset
                if result.error_code is ErrorCode.topic_authorization_failed:
                    raise AuthorizationError(result.error_code, topic, "WRITE")
                failure = ProduceError(topic, partition, result.error_code,
                                       getattr(result, "error_message", None))
                if result.error_code not in RETRIABLE:
                    raise failure
                self._cluster.stale(topic, partition)
            attempt += 1
            if attempt > self._retries or time.monotonic() >= deadline:
                raise failure
            await asyncio.sleep(RETRY_BACKOFF_MS / 1000)

    def _request(self, version: int, topic: str, partition: int, batch: bytes):
        schema = request_schema(ApiKey.PRODUCE, version)
        topic_entry = element(schema, "topic_data")
        partition_entry = element(topic_entry, "partition_data")
        return make(schema, transactional_id=None, acks=self._acks,
                    timeout=datetime.timedelta(seconds=30), topic_data=(make(
                        topic_entry, name=topic, topic_id=self._cluster.topic_ids.get(topic),
                        partition_data=(make(partition_entry, index=partition,
                                             records=batch),)),))

    async def close(self) -> None:
        self._cluster.close()
