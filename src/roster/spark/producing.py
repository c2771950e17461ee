"""The sink's producer: Arrow record batches in, Kafka record batches out, acks=all.

Spark hands the sink's `write()` its rows as Arrow record batches (the sink is an Arrow writer).
Each column is taken out of Arrow once, as a list, and each record goes straight into
aiokafka's compiled record-batch builder: no Row object and no per-record dataclass.

Records are produced in rounds of `sink.chunkRecords` records. A round has one record batch
per partition, and one Produce request per leader carries all of that round's batches, so a round
costs one acks=all round trip (one log flush on the broker) instead of one per partition. While a
round is in flight the next one is encoded. `produce()` returns only once every round is
acknowledged: the replay marker is committed after that.

Placement is Kafka's default partitioner, as in `roster.client.producer`: murmur2 of the key,
and round robin over the topic's partitions for records without a key, counted per topic in
record order, like a fresh roster.client Producer per task.
"""
from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterable

import pyarrow as pa

from roster.client.cluster import Cluster
from roster.client.connection import ConnectionClosed
from roster.client.producer import (
    DELIVERY_TIMEOUT_MS,
    RETRIABLE,
    RETRY_BACKOFF_MS,
    ProduceError,
    default_partition,
)
from roster.client.records import CODECS
from roster.client.transactional_producer import CLASSIC_PRODUCE, produce_request
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from roster.record_codec import DefaultRecordBatchBuilder
from roster.spark.options import Settings

RETRIES = 2**31 - 1   # bounded by the delivery timeout, as Kafka's producer
TopicPartition = tuple[str, int]
NO_HEADERS: list = []   # shared by records without headers: the builders only read it


def _as_bytes(column: pa.ChunkedArray | pa.Array) -> list:
    """A binary or string column as a list of bytes (None stays None)."""
    kind = column.type
    if pa.types.is_string(kind):
        column = column.cast(pa.binary())
    elif pa.types.is_large_string(kind):
        column = column.cast(pa.large_binary())
    return column.to_pylist()


def _headers(column) -> list:
    """array<struct<key,value>> as one list of (key, value) pairs per row (the struct's
    fields by position: Spark matched their names case-insensitively)."""
    return [[tuple(h.values()) for h in row] if row else [] for row in column.to_pylist()]


class Round:
    """The records of one produce round, one batch builder per partition. Inside a transaction
    (`txn`, a TransactionState) the batches are the producer's transactional batches: its id
    and epoch, and each partition's next sequence (rounds are built one after the other, so
    the sequence a builder starts at is the one reserved when the round is sealed)."""

    def __init__(self, codec: int, txn=None) -> None:
        self.codec = codec
        self.txn = txn
        self.builders: dict[TopicPartition, DefaultRecordBatchBuilder] = {}
        self.counts: dict[TopicPartition, int] = {}
        self.records = 0
        self.now_ms = int(time.time() * 1000)

    def builder(self, tp: TopicPartition) -> DefaultRecordBatchBuilder:
        builder = self.builders.get(tp)
        if builder is None:
            txn = self.txn
            builder = self.builders[tp] = DefaultRecordBatchBuilder(
                magic=2, compression_type=self.codec, is_transactional=txn is not None,
                producer_id=txn.producer_id if txn else -1,
                producer_epoch=txn.epoch if txn else -1,
                base_sequence=txn.next_sequence(tp, 0) if txn else -1, batch_size=1 << 30)
            self.counts[tp] = 0
        return builder

    def batches(self) -> dict[TopicPartition, bytes]:
        if self.txn is not None:
            for tp, count in self.counts.items():
                self.txn.next_sequence(tp, count)
        return {tp: bytes(builder.build()) for tp, builder in self.builders.items()}


class ArrowProducer:
    """Produces the rows of Arrow record batches (acks=all) on a loop the caller drives."""

    def __init__(self, settings: Settings, loop: asyncio.AbstractEventLoop,
                 transaction=None) -> None:
        """`transaction`: a TransactionalProducer with its transaction begun; every batch is
        then written inside it (its partitions added before each round)."""
        if settings.compression not in CODECS:
            raise ValueError(f"unknown compression {settings.compression!r}; use one of "
                             f"{sorted(CODECS)}")
        self.settings = settings
        self.loop = loop
        self.cluster = Cluster(settings.bootstrap, settings.client_id, settings.security,
                               settings.request_timeout_ms)
        self._counters: dict[str, itertools.count] = {}
        self._in_flight: asyncio.Task | None = None
        self.transaction = transaction
        self._txn = transaction.transaction if transaction is not None else None

    def produce(self, batches: Iterable[pa.RecordBatch]) -> int:
        """Produce every row, a round at a time; returns how many once all are acknowledged."""
        limit = max(1, self.settings.produce_chunk_records)
        total = 0
        current = Round(CODECS[self.settings.compression], self._txn)
        for batch in batches:
            done = 0
            while done < batch.num_rows:
                take = min(limit - current.records, batch.num_rows - done)
                self._add(current, batch.slice(done, take))
                done += take
                if current.records >= limit:
                    total += current.records
                    self._send(current)
                    current = Round(current.codec, self._txn)
        if current.records:
            total += current.records
            self._send(current)
        self._wait()
        return total

    def close(self) -> None:
        """Release the connections. A round still in flight here is abandoned: the write
        failed elsewhere (Spark's input, or another round) and the task fails with that."""
        task, self._in_flight = self._in_flight, None
        if task is not None:
            if not task.done():
                task.cancel()
            try:
                self.loop.run_until_complete(task)
            except (asyncio.CancelledError, Exception):
                pass
        self.cluster.close()

    # -- rows into builders ---------------------------------------------------------------------

    def _add(self, current: Round, batch: pa.RecordBatch) -> None:
        names = batch.schema.names
        rows = batch.num_rows
        values = _as_bytes(batch.column("value"))
        fixed = self.settings.topic
        if fixed and "partition" not in names and "headers" not in names and \
                ("key" not in names or batch.column("key").null_count == rows):
            self._add_round_robin(current, fixed, values)
            return
        keys = _as_bytes(batch.column("key")) if "key" in names else [None] * rows
        headers = _headers(batch.column("headers")) if "headers" in names else None
        topics = None if fixed else batch.column("topic").to_pylist()
        partitions = batch.column("partition").to_pylist() if "partition" in names else None
        counts, now = current.counts, current.now_ms
        builders = current.builders
        for i in range(rows):
            topic = fixed or topics[i]
            if not topic:
                raise ValueError("a row has no topic (null topic column and no topic option)")
            key = keys[i]
            partition = partitions[i] if partitions is not None else None
            if partition is None:
                partition = default_partition(key, self._partition_count(topic),
                                              self._counter(topic))
            tp = (topic, partition)
            builder = builders.get(tp) or current.builder(tp)
            builder.append(counts[tp], now, key, values[i],
                           headers[i] if headers is not None else NO_HEADERS)
            counts[tp] += 1
        current.records += rows

    def _add_round_robin(self, current: Round, topic: str, values: list) -> None:
        """The rows of one batch without keys, headers or partitions, to one topic: the same
        placement as the per-row path (record j of the batch goes to partition (c + j) mod n,
        c being the topic's round-robin counter), but each partition's records are a stride
        of the batch, so the per-row work is only the builder's append."""
        count = self._partition_count(topic)
        first = next(self._counter(topic))
        self._counters[topic] = itertools.count(first + len(values))
        counts, now = current.counts, current.now_ms
        for i in range(min(count, len(values))):
            tp = (topic, (first + i) % count)
            append = (current.builders.get(tp) or current.builder(tp)).append
            n = counts[tp]
            for value in values[i::count]:
                append(n, now, None, value, NO_HEADERS)
                n += 1
            counts[tp] = n
        current.records += len(values)

    def _counter(self, topic: str) -> itertools.count:
        counter = self._counters.get(topic)
        if counter is None:
            counter = self._counters[topic] = itertools.count()
        return counter

    def _partition_count(self, topic: str) -> int:
        count = self.cluster.partitions.get(topic)
        if count is None:   # first record for this topic: metadata (creating it if allowed)
            self.loop.run_until_complete(self.cluster.refresh([topic], create=True))
            count = self.cluster.partitions.get(topic)
            if not count:
                raise ProduceError(topic, -1, ErrorCode.unknown_topic_or_partition, None)
        return count

    # -- rounds over the wire -------------------------------------------------------------------

    def _send(self, current: Round) -> None:
        """Wait for the round in flight, then put this one on the wire and return at once."""
        self._wait()
        self._in_flight = self.loop.create_task(self._produce(current.batches()))
        # One loop pass writes the request; its answers are read while the next round is built.
        self.loop.run_until_complete(asyncio.sleep(0))

    def _wait(self) -> None:
        task, self._in_flight = self._in_flight, None
        if task is not None:
            self.loop.run_until_complete(task)

    async def _produce(self, batches: dict[TopicPartition, bytes]) -> None:
        """Every batch acknowledged, or an error: retriable ones are retried after a metadata
        refresh, with only the batches that failed."""
        pending = dict(batches)
        if self.transaction is not None:
            await self.transaction.add_partitions(sorted(pending))
        # retried with the batches that failed, RETRY_BACKOFF_MS apart, until the delivery
        # timeout: a leader on a broker that died moves only once the broker is fenced
        deadline = time.monotonic() + DELIVERY_TIMEOUT_MS / 1000
        attempt = 0
        while True:
            by_leader: dict[int, tuple] = {}
            failure: Exception | None = None
            try:
                for tp in sorted(pending):
                    connection = await self.cluster.connection_for(*tp)
                    by_leader.setdefault(id(connection), (connection, {}))[1][tp] = pending[tp]
                answers = await asyncio.gather(*(self._request(c, b)
                                                 for c, b in by_leader.values()))
            except ConnectionClosed as exc:
                answers, failure = [], exc
            for answer in answers:
                for tp, (error, message) in answer.items():
                    if error in (ErrorCode.none, ErrorCode.duplicate_sequence_number):
                        pending.pop(tp, None)
                    elif error not in RETRIABLE:
                        raise ProduceError(tp[0], tp[1], error, message)
                    else:
                        self.cluster.stale(*tp)
                        failure = ProduceError(tp[0], tp[1], error, message)
            if not pending:
                return
            attempt += 1
            if attempt > RETRIES or time.monotonic() >= deadline:
                raise failure or ProduceError(*next(iter(pending)), ErrorCode.request_timed_out,
                                              "retries exhausted")
            await asyncio.sleep(RETRY_BACKOFF_MS / 1000)

    async def _request(self, connection, batches: dict[TopicPartition, bytes]):
        """One Produce request for several partitions; (error, message) per partition."""
        names = {topic_id: name for name, topic_id in self.cluster.topic_ids.items()}

        transactional_id = self.transaction.transactional_id if self.transaction else None
        try:
            answer = await connection.call(ApiKey.PRODUCE, lambda v: produce_request(
                v, transactional_id, batches, self.cluster.topic_ids),
                highest=CLASSIC_PRODUCE if transactional_id else None)
        except ConnectionClosed:
            self.cluster.forget(connection)
            raise
        result = {}
        for topic in answer.responses:
            name = getattr(topic, "name", None) or names.get(getattr(topic, "topic_id", None))
            for p in topic.partition_responses:
                result[(name, p.index)] = (p.error_code, getattr(p, "error_message", None))
        missing = [tp for tp in batches if tp not in result]
        if missing:
            raise ProduceError(missing[0][0], missing[0][1], ErrorCode.unknown_server_error,
                               "no answer for this partition in the Produce response")
        return result
