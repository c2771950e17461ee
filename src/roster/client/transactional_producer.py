"""A transactional producer (KIP-98, with KIP-447's group-member offsets), over asyncio.

    producer = TransactionalProducer("localhost:9092", "copier-1")
    await producer.init_transactions()        # fences any older producer with this id
    producer.begin_transaction()
    await producer.send("out", b"value", key=b"k")
    await producer.send_offsets_to_transaction({("in", 0): 42}, consumer.group_metadata())
    await producer.commit_transaction()       # or abort_transaction()

It speaks the classic transaction protocol (AddPartitionsToTxn before a partition's first batch,
AddOffsetsToTxn then TxnOffsetCommit, EndTxn), which roster and every Kafka broker serve. The
rules (allowed calls, sequences, what each error means) are `roster.client.transaction_state`;
this module only sends the requests.
"""
from __future__ import annotations

import asyncio
import datetime
import time

from roster.client.cluster import CoordinatorUnavailable
from roster.client.connection import REQUEST_TIMEOUT_MS, BrokerConnection, ConnectionClosed
from roster.client.errors import AuthorizationError
from roster.client.producer import Producer, ProduceError
from roster.client.records import OutgoingRecord, encode_batch
from roster.client.transaction_state import (
    MEMBER_FENCING,
    GroupMetadata,
    TransactionState,
)
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode as E

GROUP, TRANSACTION = 0, 1
# Produce v12+ and EndTxn v5+ belong to Transaction Version 2 (KIP-890), which this producer
# does not speak: it stays on the classic versions, as Kafka's clients do when TV2 is off.
CLASSIC_PRODUCE, CLASSIC_END_TXN, CLASSIC_TXN_OFFSET_COMMIT = 11, 4, 4
TIMEOUT = datetime.timedelta(seconds=30)


class TransactionalProducer(Producer):
    def __init__(self, bootstrap: str, transactional_id: str, *,
                 transaction_timeout_ms: int = 60_000, max_block_ms: int = 60_000,
                 compression: str = "none", client_id: str = "roster-transactional-producer",
                 security=None, clock=time.monotonic,
                 request_timeout_ms: int = REQUEST_TIMEOUT_MS) -> None:
        super().__init__(bootstrap, acks=-1, compression=compression, client_id=client_id,
                         security=security, request_timeout_ms=request_timeout_ms)
        self.transaction = TransactionState(transactional_id, max_block_ms=max_block_ms)
        self._timeout_ms = transaction_timeout_ms
        self._clock = clock

    @property
    def transactional_id(self) -> str:
        return self.transaction.transactional_id

    # -- the API ---------------------------------------------------------------------------------

    async def init_transactions(self) -> None:
        """Get this id's producer id with a new epoch. Any older producer with the same id is
        fenced, and its open transaction aborted before this returns."""
        self.transaction.initializing()
        t = self.transaction
        answer = await self._coordinated(
            TRANSACTION, t.transactional_id, ApiKey.INIT_PRODUCER_ID, "InitProducerId",
            lambda v: make(request_schema(ApiKey.INIT_PRODUCER_ID, v),
                           transactional_id=t.transactional_id,
                           transaction_timeout=datetime.timedelta(milliseconds=self._timeout_ms),
                           producer_id=-1, producer_epoch=-1))
        t.initialized(answer.producer_id, answer.producer_epoch)

    def begin_transaction(self) -> None:
        self.transaction.begin()

    async def send_offsets_to_transaction(self, offsets: dict[tuple[str, int], int | tuple],
                                          group: GroupMetadata | str) -> None:
        """Commit these offsets (the next offset to read, per partition, or (offset, metadata))
        for the group inside the transaction. Pass the member's `group_metadata()` (generation, member id and
        group.instance.id): a member fenced by a rebalance then cannot commit (KIP-447), and
        OffsetsFencedError says so."""
        t = self.transaction
        t.check_sending()
        if isinstance(group, str):
            group = GroupMetadata(group)
        if group.group_id not in t.groups:
            await self._coordinated(
                TRANSACTION, t.transactional_id, ApiKey.ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn",
                lambda v: make(request_schema(ApiKey.ADD_OFFSETS_TO_TXN, v),
                               transactional_id=t.transactional_id, producer_id=t.producer_id,
                               producer_epoch=t.epoch, group_id=group.group_id))
            t.groups.add(group.group_id)
        if offsets:
            await self._txn_offset_commit(offsets, group)

    async def add_partitions(self, partitions) -> None:
        """Add these partitions to the open transaction (those not in it yet). send() does it
        itself; a caller that writes its own transactional batches (the Spark sink) calls it
        before their Produce."""
        self.transaction.check_sending()
        missing = self.transaction.to_add(partitions)
        if missing:
            await self._add_partitions(missing)

    async def commit_transaction(self) -> None:
        await self._end(True)

    async def abort_transaction(self) -> None:
        await self._end(False)

    # -- records ---------------------------------------------------------------------------------

    async def _produce(self, topic: str, partition: int, records: list[OutgoingRecord]) -> int:
        t = self.transaction
        tp = (topic, partition)
        await self.add_partitions([tp])
        batch = encode_batch(records, self._compression, int(time.time() * 1000),
                             producer_id=t.producer_id, producer_epoch=t.epoch,
                             base_sequence=t.next_sequence(tp, len(records)), transactional=True)
        started, attempt = self._now(), 0
        while True:
            connection = None
            try:
                connection = await self._cluster.connection_for(topic, partition)
                answer = await connection.call(ApiKey.PRODUCE, lambda v: self._batch_request(
                    v, topic, partition, batch), highest=CLASSIC_PRODUCE)
                result = answer.responses[0].partition_responses[0]
                error = result.error_code
            except ConnectionClosed:
                # the leader's broker went away: forget it, so the retry asks who leads now
                if connection is not None:
                    self._cluster.forget(connection)
                error = E.request_timed_out
            # a retried batch keeps its sequence: the broker answers a duplicate with the
            # offset it already has, so nothing is written twice
            if error in (E.none, E.duplicate_sequence_number):
                return result.base_offset
            if error is E.topic_authorization_failed:
                raise AuthorizationError(error, topic, "WRITE")
            attempt += 1
            retry = t.on_error(error, f"Produce to {topic}-{partition}", started, self._now(),
                               attempt)
            self._cluster.stale(topic, partition)   # the retry looks the leader up again
            await asyncio.sleep(retry.after_ms / 1000)

    def _batch_request(self, version: int, topic: str, partition: int, batch: bytes):
        return produce_request(version, self.transactional_id, {(topic, partition): batch},
                               self._cluster.topic_ids)

    async def _add_partitions(self, partitions: list[tuple[str, int]]) -> None:
        t = self.transaction

        def body(version):
            schema = request_schema(ApiKey.ADD_PARTITIONS_TO_TXN, version)
            entry = element(schema, "v3_and_below_topics")
            by_topic: dict[str, list[int]] = {}
            for topic, partition in partitions:
                by_topic.setdefault(topic, []).append(partition)
            return make(schema, v3_and_below_transactional_id=t.transactional_id,
                        v3_and_below_producer_id=t.producer_id,
                        v3_and_below_producer_epoch=t.epoch,
                        v3_and_below_topics=tuple(make(entry, name=n, partitions=tuple(ps))
                                                  for n, ps in sorted(by_topic.items())))

        def errors(answer):
            found = {(topic.name, p.partition_index): p.partition_error_code
                     for topic in answer.results_by_topic_v3_and_below
                     for p in topic.results_by_partition}
            # OPERATION_NOT_ATTEMPTED only accompanies the real refusal: report that one
            real = [e for e in found.values() if e not in (E.none, E.operation_not_attempted)]
            return real[0] if real else E.none

        await self._coordinated(TRANSACTION, t.transactional_id, ApiKey.ADD_PARTITIONS_TO_TXN,
                                "AddPartitionsToTxn", body, error_of=errors, highest=3)
        t.added(partitions)

    # -- offsets and the end ---------------------------------------------------------------------

    async def _txn_offset_commit(self, offsets, group: GroupMetadata) -> None:
        t = self.transaction

        def body(version):
            schema = request_schema(ApiKey.TXN_OFFSET_COMMIT, version)
            topic_entry = element(schema, "topics")
            partition_entry = element(topic_entry, "partitions")
            by_topic: dict[str, list] = {}
            for (topic, partition), value in sorted(offsets.items()):
                offset, note = value if isinstance(value, tuple) else (value, "")
                by_topic.setdefault(topic, []).append(make(
                    partition_entry, partition_index=partition, committed_offset=offset,
                    committed_leader_epoch=-1, committed_metadata=note))
            return make(schema, transactional_id=t.transactional_id, group_id=group.group_id,
                        producer_id=t.producer_id, producer_epoch=t.epoch,
                        generation_id=group.generation_id, member_id=group.member_id,
                        group_instance_id=group.group_instance_id,
                        topics=tuple(make(topic_entry, name=n, partitions=tuple(ps))
                                     for n, ps in by_topic.items()))

        refused: dict = {}

        def errors(answer):
            found = {(topic.name, p.partition_index): p.error_code
                     for topic in answer.topics for p in topic.partitions}
            refused.clear()
            refused.update({tp: e for tp, e in found.items() if e in MEMBER_FENCING})
            if refused:
                return E.none      # not an error of the producer: raised below
            real = [e for e in found.values() if e is not E.none]
            return real[0] if real else E.none

        await self._coordinated(GROUP, group.group_id, ApiKey.TXN_OFFSET_COMMIT,
                                "TxnOffsetCommit", body, error_of=errors,
                                highest=CLASSIC_TXN_OFFSET_COMMIT)
        if refused:
            raise t.member_refused(refused)

    async def _end(self, commit: bool) -> None:
        t = self.transaction
        if not t.ending(commit):
            t.ended()
            return
        await self._coordinated(
            TRANSACTION, t.transactional_id, ApiKey.END_TXN,
            "EndTxn(commit)" if commit else "EndTxn(abort)",
            lambda v: make(request_schema(ApiKey.END_TXN, v),
                           transactional_id=t.transactional_id, producer_id=t.producer_id,
                           producer_epoch=t.epoch, committed=commit),
            highest=CLASSIC_END_TXN)
        t.ended()

    # -- one request to a coordinator, retried ---------------------------------------------

    async def _coordinated(self, key_type: int, key: str, api_key: int, what: str, body, *,
                           error_of=lambda answer: answer.error_code, highest=None):
        """Send to the coordinator of `key` until the answer is not retriable (within
        max_block_ms); the answer, or the error the state machine raises."""
        started, attempt = self._now(), 0
        while True:
            connection: BrokerConnection | None = None
            try:
                connection = await self._cluster.coordinator(key, key_type)
                answer = await connection.call(api_key, body, highest=highest)
                error = error_of(answer)
            except CoordinatorUnavailable as exc:
                error = exc.error
            except ConnectionClosed:
                if connection is not None:
                    self._cluster.forget(connection)
                error = E.coordinator_not_available
            if error is E.none:
                return answer
            attempt += 1
            retry = self.transaction.on_error(error, what, started, self._now(), attempt)
            await asyncio.sleep(retry.after_ms / 1000)

    def _now(self) -> int:
        return int(self._clock() * 1000)


def produce_request(version: int, transactional_id: str | None, batches: dict, topic_ids):
    """One acks=all Produce request carrying a batch per (topic, partition)."""
    schema = request_schema(ApiKey.PRODUCE, version)
    topic_entry = element(schema, "topic_data")
    partition_entry = element(topic_entry, "partition_data")
    by_topic: dict[str, list] = {}
    for (topic, partition), data in batches.items():
        by_topic.setdefault(topic, []).append(make(partition_entry, index=partition,
                                                   records=data))
    return make(schema, transactional_id=transactional_id, acks=-1, timeout=TIMEOUT,
                topic_data=tuple(make(topic_entry, name=topic, topic_id=topic_ids.get(topic),
                                      partition_data=tuple(entries))
                                 for topic, entries in by_topic.items()))


__all__ = ["TransactionalProducer", "GroupMetadata", "ProduceError"]
