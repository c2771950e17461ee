"""roster.client's transactional producer against a real broker: a commit is visible and an
abort invisible to read_committed consumers (roster.client's and librdkafka's), both visible to
read_uncommitted ones; a second producer with the same transactional.id fences the first, whose
writes never appear; send_offsets_to_transaction commits a static member's offsets with the
records, and a member of an old generation after a rebalance is fenced (KIP-447)."""
from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer as ConfluentConsumer

from roster.client.consumer import Consumer
from roster.client.producer import Producer
from roster.client.transactional_producer import TransactionalProducer
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.codec import encode_request, request_schema
from roster.protocol.errors import ErrorCode as E
from roster.client.transaction_state import (
    OffsetsFencedError,
    ProducerFencedError,
    TransactionError,
)
from tests.support.process import BrokerProcess
from tests.support.transactions import TxnClient, create_topics, log_entries

pytestmark = pytest.mark.interop

SETTINGS = {"transaction.state.log.num.partitions": "3", "num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0"}
WAIT_S = 30


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("client-transactions"), SETTINGS).start()
    create_topics(process.bootstrap, "ct-out", "ct-fence", "ct-in", "ct-eos-out")
    create_topics(process.bootstrap, "ct-two", partitions=2)
    yield process
    process.stop()


async def read_all(bootstrap: str, topic: str, isolation: str, until_offset: int,
                   partitions: int = 1) -> list[bytes]:
    """Every value a fresh roster.client consumer reads from `topic` until each partition's
    position reaches `until_offset` (the log end, markers included)."""
    consumer = Consumer(bootstrap, f"reader-{topic}-{isolation}-{time.monotonic_ns()}",
                        isolation_level=isolation)
    await consumer.subscribe([topic])
    values = []
    try:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            values += [r.value for r in await consumer.poll(timeout_ms=200)]
            positions = consumer.positions
            if len(positions) == partitions and \
                    all(p >= until_offset for p in positions.values()):
                return values
        raise AssertionError(f"{topic}: read {values}, positions {consumer.positions}")
    finally:
        await consumer.close()


async def committed_becomes(consumer: Consumer, tp, offset: int) -> int:
    """The group's committed offset for tp, once it is `offset` (or the last seen)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        seen = (await consumer.member.committed([tp]))[tp]
        if seen == offset or time.monotonic() > deadline:
            return seen


def confluent_values(bootstrap: str, topic: str, isolation: str, expected: int) -> list[bytes]:
    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": f"cf-{isolation}",
                                  "auto.offset.reset": "earliest", "isolation.level": isolation,
                                  "enable.auto.commit": False})
    consumer.subscribe([topic])
    values = []
    try:
        deadline = time.monotonic() + WAIT_S
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        return values
    finally:
        consumer.close()


def test_commit_is_visible_and_abort_invisible_to_read_committed(broker):
    async def scenario():
        producer = TransactionalProducer(broker.bootstrap, "ct-1")
        await producer.init_transactions()
        producer.begin_transaction()
        await producer.send("ct-out", b"committed-0")
        await producer.send("ct-out", b"committed-1")
        await producer.commit_transaction()
        producer.begin_transaction()
        await producer.send("ct-out", b"aborted")
        await producer.abort_transaction()
        producer.begin_transaction()
        await producer.send("ct-out", b"committed-2")
        await producer.commit_transaction()
        await producer.close()
        # 2 + 1 + 1 data records, 3 markers
        committed = await read_all(broker.bootstrap, "ct-out", "read_committed", 7)
        everything = await read_all(broker.bootstrap, "ct-out", "read_uncommitted", 7)
        return committed, everything

    committed, everything = asyncio.run(scenario())
    assert committed == [b"committed-0", b"committed-1", b"committed-2"]
    assert everything == [b"committed-0", b"committed-1", b"aborted", b"committed-2"]
    assert [e[0] for e in log_entries(broker.bootstrap, "ct-out")] == \
        ["data", "data", "commit", "data", "abort", "data", "commit"]
    assert confluent_values(broker.bootstrap, "ct-out", "read_committed", 3) == committed


def test_a_transaction_over_two_partitions_commits_both(broker):
    async def scenario():
        producer = TransactionalProducer(broker.bootstrap, "ct-two")
        await producer.init_transactions()
        producer.begin_transaction()
        for i in range(6):
            await producer.send("ct-two", b"v%d" % i, key=b"k%d" % i)
        await producer.commit_transaction()
        await producer.close()

    asyncio.run(scenario())
    values = confluent_values(broker.bootstrap, "ct-two", "read_committed", 6)
    assert sorted(values) == [b"v%d" % i for i in range(6)]
    assert log_entries(broker.bootstrap, "ct-two", 0)[-1][0] == "commit"
    assert log_entries(broker.bootstrap, "ct-two", 1)[-1][0] == "commit"


def test_a_second_producer_fences_the_first_and_the_zombie_writes_never_appear(broker):
    async def scenario():
        zombie = TransactionalProducer(broker.bootstrap, "ct-fence")
        await zombie.init_transactions()
        zombie.begin_transaction()
        await zombie.send("ct-fence", b"zombie")
        successor = TransactionalProducer(broker.bootstrap, "ct-fence")
        await successor.init_transactions()          # aborts the zombie's transaction
        with pytest.raises(ProducerFencedError, match="ct-fence"):
            await zombie.send("ct-fence", b"zombie-again")
        with pytest.raises(ProducerFencedError):
            await zombie.commit_transaction()
        with pytest.raises(ProducerFencedError):
            zombie.begin_transaction()
        successor.begin_transaction()
        await successor.send("ct-fence", b"successor")
        await successor.commit_transaction()
        await zombie.close()
        await successor.close()
        # zombie data, its abort marker, successor data, commit marker
        return await read_all(broker.bootstrap, "ct-fence", "read_committed", 4)

    assert asyncio.run(scenario()) == [b"successor"]


def test_send_offsets_commits_a_static_member_s_offsets_and_fences_an_old_generation(broker):
    async def scenario():
        plain = Producer(broker.bootstrap)
        for i in range(4):
            await plain.send("ct-in", b"in-%d" % i)
        await plain.close()
        consumer = Consumer(broker.bootstrap, "ct-eos", group_instance_id="ct-eos-1",
                            isolation_level="read_committed", session_timeout_ms=10_000)
        await consumer.subscribe(["ct-in"])
        producer = TransactionalProducer(broker.bootstrap, "ct-eos-tx")
        await producer.init_transactions()
        try:
            seen = []
            deadline = time.monotonic() + WAIT_S
            while len(seen) < 4 and time.monotonic() < deadline:
                seen += await consumer.poll(timeout_ms=200)
            producer.begin_transaction()
            for record in seen:
                await producer.send("ct-eos-out", record.value.replace(b"in", b"out"))
            metadata = consumer.group_metadata()
            assert metadata.group_instance_id == "ct-eos-1" and metadata.generation_id > 0
            await producer.send_offsets_to_transaction(consumer.positions, metadata)
            await producer.commit_transaction()
            # the commit marker (written after EndTxn is answered) makes them the group's
            assert await committed_becomes(consumer, ("ct-in", 0), 4) == 4

            # a second member joins: a rebalance, and the first member's generation is old
            other = Consumer(broker.bootstrap, "ct-eos", group_instance_id="ct-eos-2",
                             session_timeout_ms=10_000)
            await other.subscribe(["ct-in"])
            await consumer.member.wait_for(
                lambda: consumer.group_metadata().generation_id > metadata.generation_id,
                WAIT_S)
            producer.begin_transaction()
            await producer.send("ct-eos-out", b"zombie-output")
            with pytest.raises(OffsetsFencedError, match="ILLEGAL_GENERATION"):
                await producer.send_offsets_to_transaction({("ct-in", 0): 99}, metadata)
            with pytest.raises(TransactionError, match="abort"):
                await producer.commit_transaction()
            await producer.abort_transaction()
            assert await committed_becomes(consumer, ("ct-in", 0), 4) == 4
            await other.close()
        finally:
            await consumer.close()
            await producer.close()
        return await read_all(broker.bootstrap, "ct-eos-out", "read_committed", 7)

    assert asyncio.run(scenario()) == [b"out-%d" % i for i in range(4)]


def test_a_client_gone_during_end_txn_does_not_leave_its_id_pending(broker):
    """The connection closes while EndTxn waits for its __transaction_state write: the
    transaction still completes, and the next InitProducerId of the id gets through (the
    broker used to cancel the write's settling with the request, and answered
    CONCURRENT_TRANSACTIONS forever)."""
    for attempt in range(5):
        tx_id = f"ct-gone-{attempt}"
        client = TxnClient(broker.bootstrap, tx_id)
        client.init_until_done()
        assert client.add("ct-out", 0) == [E.none]
        assert client.produce("ct-out", 0, [b"gone-%d" % attempt]) is E.none
        body = make(request_schema(ApiKey.END_TXN, 3), transactional_id=tx_id,
                    producer_id=client.producer_id, producer_epoch=client.epoch, committed=True)
        client.wire.send_raw(encode_request(ApiKey.END_TXN, 3, 999, "gone", body))
        client.close()                     # gone before the answer
        successor = TxnClient(broker.bootstrap, tx_id)
        try:
            successor.init_until_done()    # asserts it ends within the wait
        finally:
            successor.close()
