"""Transactions on a real broker: confluent-kafka's transactional producer (the classic
protocol) commits and aborts, markers land in every partition of the transaction, a zombie is
fenced, a timed-out transaction is aborted by the coordinator, and a broker killed right after
PrepareCommit became durable completes the commit after its restart. Offsets committed inside
a transaction (KIP-447) stay pending until the marker, and a zombie group member is fenced."""
from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from roster.protocol.errors import ErrorCode as E
from tests.support.process import BrokerProcess
from tests.support.transactions import (
    Member,
    TxnClient,
    create_topics,
    fetch_offsets,
    join_alone,
    log_entries,
    wait_for,
)

pytestmark = pytest.mark.interop

SETTINGS = {"transaction.state.log.num.partitions": "3", "num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("transactions"), SETTINGS).start()
    create_topics(process.bootstrap, "tx-wire-fence", "tx-wire-errors", "tx-timeout", "tx-out",
                  "tx-aio", "tx-kp")
    create_topics(process.bootstrap, "tx-in", partitions=2)
    yield process
    process.stop()


def producer(broker, transactional_id: str, **extra) -> Producer:
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": transactional_id,
                  **extra})
    p.init_transactions(30)
    return p


def data_values(entries) -> list[bytes]:
    return [v for kind, _, values in entries if kind == "data" for v in values]


def test_confluent_commit_and_abort_write_markers(broker):
    p = producer(broker, "cf-1")
    p.begin_transaction()
    for i in range(3):
        p.produce("tx-commit", value=b"c%d" % i)
        p.produce("tx-commit-2", value=b"d%d" % i)
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce("tx-commit", value=b"aborted")
    p.flush(30)                    # sent, so the partition is in the transaction
    p.abort_transaction(30)
    entries = wait_for(lambda: (e := log_entries(broker.bootstrap, "tx-commit"))
                       and e[-1][0] == "abort" and e, "the abort marker")
    assert [e[0] for e in entries] == ["data"] * len(entries[:-3]) + ["commit", "data", "abort"]
    assert data_values(entries) == [b"c0", b"c1", b"c2", b"aborted"]
    other = wait_for(lambda: (e := log_entries(broker.bootstrap, "tx-commit-2"))
                     and e[-1][0] == "commit" and e, "the commit marker")
    assert data_values(other) == [b"d0", b"d1", b"d2"]
    # both markers are this producer's
    assert {e[1] for e in entries} == {entries[0][1]}


def test_a_new_producer_fences_the_zombie(broker):
    zombie = producer(broker, "cf-fence")
    zombie.begin_transaction()
    zombie.produce("tx-fence", value=b"zombie")
    zombie.flush(30)
    successor = producer(broker, "cf-fence")    # aborts the zombie's open transaction
    successor.begin_transaction()
    successor.produce("tx-fence", value=b"successor")
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as refused:
        zombie.commit_transaction(30)
    assert refused.value.args[0].fatal()
    entries = log_entries(broker.bootstrap, "tx-fence")
    assert [(e[0], data_values([e]) or None) for e in entries] == [
        ("data", [b"zombie"]), ("abort", None), ("data", [b"successor"]), ("commit", None)]


def test_a_zombie_writes_nothing_after_it_is_fenced(broker):
    old = TxnClient(broker.bootstrap, "wire-fence")
    new = TxnClient(broker.bootstrap, "wire-fence")
    try:
        old.init_until_done()
        assert old.add("tx-wire-fence", 0) == [E.none]
        assert old.produce("tx-wire-fence", 0, [b"before"]) is E.none
        # the successor waits while the old producer's transaction is aborted for it
        assert new.init() is E.concurrent_transactions
        new.init_until_done()
        assert new.epoch == old.epoch + 2     # one bump fences, one is the successor's
        assert old.produce("tx-wire-fence", 0, [b"zombie"]) is E.invalid_producer_epoch
        assert old.add("tx-wire-fence", 0) == [E.producer_fenced]
        assert old.end(commit=True) is E.producer_fenced
        assert old.end(commit=True, version=1) is E.invalid_producer_epoch   # before KIP-588
        assert data_values(log_entries(broker.bootstrap, "tx-wire-fence")) == [b"before"]
    finally:
        old.close()
        new.close()


def test_protocol_errors(broker):
    client = TxnClient(broker.bootstrap, "wire-errors")
    try:
        assert client.init(timeout_ms=900_001) is E.invalid_transaction_timeout
        client.init_until_done()
        assert client.end(commit=True) is E.invalid_txn_state          # nothing is open
        # a batch for a partition the transaction does not hold
        assert client.produce("tx-wire-errors", 0, [b"x"]) is E.invalid_txn_state
        assert client.add("tx-wire-errors", 0, 7) == [E.unknown_topic_or_partition,
                                                      E.operation_not_attempted]
        [found] = client.find_coordinator().coordinators
        assert (found.error_code, found.key) == (E.none, "wire-errors")
    finally:
        client.close()


def test_a_timed_out_transaction_is_aborted_and_its_producer_fenced(broker):
    client = TxnClient(broker.bootstrap, "wire-timeout")
    try:
        client.init_until_done(timeout_ms=1000)
        assert client.add("tx-timeout", 0) == [E.none]
        assert client.produce("tx-timeout", 0, [b"late"]) is E.none
        entries = wait_for(lambda: (e := log_entries(broker.bootstrap, "tx-timeout"))
                           and e[-1][0] == "abort" and e, "the coordinator's abort", 20)
        assert entries[-1][2] == client.epoch + 1          # written with the fencing epoch
        assert client.end(commit=True) is E.producer_fenced
    finally:
        client.close()


# where the broker dies, counted in __transaction_state writes (1 Empty at InitProducerId,
# 2 Ongoing with the partitions, 3 Ongoing with the group's, 4 PrepareCommit, 5 CompleteCommit)
# or markers (1 of the 3: two partitions and the group's), or killed from outside before
# EndTxn; and how the transaction ends after the restart: never half
CRASHES = {
    "before EndTxn": (None, None, "abort"),
    "after PrepareCommit": ("ROSTER_TEST_KILL_AFTER_TXN_WRITES", "4", "commit"),
    "between the markers": ("ROSTER_TEST_KILL_AFTER_TXN_MARKERS", "1", "commit"),
    "after CompleteCommit": ("ROSTER_TEST_KILL_AFTER_TXN_WRITES", "5", "commit"),
}


@pytest.mark.parametrize("crash", list(CRASHES))
def test_broker_killed_during_end_txn_completes_the_transaction_after_restart(
        crash, tmp_path, monkeypatch):
    variable, count, outcome = CRASHES[crash]
    if variable is not None:
        monkeypatch.setenv(variable, count)
    process = BrokerProcess(tmp_path, SETTINGS).start()
    try:
        create_topics(process.bootstrap, "tx-crash", partitions=2)
        create_topics(process.bootstrap, "crash-input")
        client = TxnClient(process.bootstrap, "crash")
        client.init_until_done()
        assert client.add("tx-crash", 0, 1) == [E.none, E.none]
        assert client.add_offsets("crash-group") is E.none
        for partition in (0, 1):
            assert client.produce("tx-crash", partition, [b"one", b"two"]) is E.none
        assert client.commit_offsets("crash-group", "crash-input", {0: 7}) == [E.none]
        if variable is None:
            process.kill9()
        else:
            try:
                client.end(commit=True)     # answered or not: the broker dies around it
            except ConnectionError:
                pass
            process.proc.wait(30)
            monkeypatch.delenv(variable)
        client.close()
        process.start()
        # the same transactional id starts again once the transaction is complete (an open
        # one, never prepared, is aborted for it)
        again = TxnClient(process.bootstrap, "crash")
        again.init_until_done()
        again.close()
        for partition in (0, 1):
            entries = wait_for(lambda: (e := log_entries(process.bootstrap, "tx-crash",
                                                         partition)) and e[-1][0] != "data"
                               and e, f"the marker of partition {partition}")
            kinds = [e[0] for e in entries]
            assert kinds[0] == "data" and set(kinds[1:]) == {outcome}, (crash, kinds)
        # the offsets went with the transaction (the group's marker was written after the
        # groups were loaded, so it met them pending)
        wait_for(lambda: fetch_offsets(process.bootstrap, "crash-group", "crash-input", [0],
                                       require_stable=True) == {0: 7 if outcome == "commit"
                                                                else -1}, "the offsets")
    finally:
        process.stop()


# -- offsets inside transactions (KIP-447) ----------------------------------------------------

def test_offsets_committed_in_a_transaction_are_pending_until_the_marker(broker):
    client = TxnClient(broker.bootstrap, "wire-offsets")
    member = join_alone(broker.bootstrap, "eos-group", instance_id="eos-1")
    try:
        client.init_until_done()
        assert client.add("tx-out", 0) == [E.none]
        assert client.add_offsets("eos-group") is E.none
        assert client.produce("tx-out", 0, [b"derived"]) is E.none
        assert client.commit_offsets("eos-group", "tx-in", {0: 41, 1: 7}, member) == [E.none] * 2
        assert fetch_offsets(broker.bootstrap, "eos-group", "tx-in", [0, 1]) == {0: -1, 1: -1}
        assert fetch_offsets(broker.bootstrap, "eos-group", "tx-in", [0, 1],
                             require_stable=True) == {0: E.unstable_offset_commit,
                                                      1: E.unstable_offset_commit}
        assert client.end(commit=True) is E.none
        wait_for(lambda: fetch_offsets(broker.bootstrap, "eos-group", "tx-in", [0, 1],
                                       require_stable=True) == {0: 41, 1: 7},
                 "the committed offsets")
        # an aborted transaction's offsets are dropped
        assert client.add_offsets("eos-group") is E.none
        assert client.commit_offsets("eos-group", "tx-in", {0: 99}, member) == [E.none]
        assert client.end(commit=False) is E.none
        wait_for(lambda: fetch_offsets(broker.bootstrap, "eos-group", "tx-in", [0],
                                       require_stable=True) == {0: 41}, "the abort")
    finally:
        client.close()


def test_a_zombie_member_is_fenced_from_committing_offsets(broker):
    client = TxnClient(broker.bootstrap, "wire-zombie-member")
    try:
        client.init_until_done()
        # the group's partition was not added (no AddOffsetsToTxn): refused before the group
        assert client.commit_offsets("zombie-group", "tx-in", {0: 5}) == [E.invalid_txn_state]
        old = join_alone(broker.bootstrap, "zombie-group", instance_id="static-1")
        # the same static instance restarts: its old member id is a zombie now
        new = join_alone(broker.bootstrap, "zombie-group", instance_id="static-1")
        assert new.member_id != old.member_id
        assert client.add_offsets("zombie-group") is E.none
        assert client.commit_offsets("zombie-group", "tx-in", {0: 5}, old) == \
            [E.fenced_instance_id]
        dynamic = join_alone(broker.bootstrap, "zombie-dynamic")
        rejoined = join_alone(broker.bootstrap, "zombie-dynamic", member_id=dynamic.member_id)
        assert rejoined.generation > dynamic.generation
        assert client.add_offsets("zombie-dynamic") is E.none
        assert client.commit_offsets("zombie-dynamic", "tx-in", {0: 5}, dynamic) == \
            [E.illegal_generation]
        stranger = Member("not-a-member", rejoined.generation)
        assert client.commit_offsets("zombie-dynamic", "tx-in", {0: 5}, stranger) == \
            [E.unknown_member_id]
        assert client.commit_offsets("zombie-dynamic", "tx-in", {0: 5}, rejoined) == [E.none]
        assert client.end(commit=True) is E.none
    finally:
        client.close()


def test_confluent_send_offsets_to_transaction_with_a_static_member(broker):
    create_topics(broker.bootstrap, "eos-in", "eos-out")
    source = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(5):
        source.produce("eos-in", value=b"in-%d" % i)
    source.flush(30)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cf-eos",
                         "group.instance.id": "cf-eos-1", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.subscribe(["eos-in"])
    p = producer(broker, "cf-eos-tx")
    try:
        seen = []
        deadline = time.monotonic() + 30
        while len(seen) < 5 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.append(message.value())
        assert seen == [b"in-%d" % i for i in range(5)]
        p.begin_transaction()
        for value in seen:
            p.produce("eos-out", value=value.replace(b"in", b"out"))
        p.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                      consumer.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        [committed] = wait_for(lambda: (c := consumer.committed(
            [TopicPartition("eos-in", 0)], 10)) and c[0].offset == 5 and c, "the offsets")
        assert committed.offset == 5
        assert data_values(log_entries(broker.bootstrap, "eos-out")) == \
            [b"out-%d" % i for i in range(5)]
    finally:
        consumer.close()


def test_aiokafka_commits_and_aborts(broker):
    from aiokafka import AIOKafkaProducer

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="aio-1",
                             enable_idempotence=True)
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait("tx-aio", b"committed")
            await p.begin_transaction()
            await p.send_and_wait("tx-aio", b"aborted")
            await p.abort_transaction()
        finally:
            await p.stop()

    asyncio.run(run())
    entries = wait_for(lambda: (e := log_entries(broker.bootstrap, "tx-aio"))
                       and e[-1][0] == "abort" and e, "aiokafka's abort marker")
    assert [(e[0], data_values([e]) or None) for e in entries] == [
        ("data", [b"committed"]), ("commit", None), ("data", [b"aborted"]), ("abort", None)]


def test_kafka_python_commits_and_aborts(broker):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kp-1")
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send("tx-kp", b"committed").get(30)
        p.commit_transaction()
        p.begin_transaction()
        p.send("tx-kp", b"aborted").get(30)
        p.abort_transaction()
    finally:
        p.close(5)
    entries = wait_for(lambda: (e := log_entries(broker.bootstrap, "tx-kp"))
                       and e[-1][0] == "abort" and e, "kafka-python's abort marker")
    assert [(e[0], data_values([e]) or None) for e in entries] == [
        ("data", [b"committed"]), ("commit", None), ("data", [b"aborted"]), ("abort", None)]


def test_pending_offsets_survive_a_restart_and_complete_after_it(tmp_path):
    process = BrokerProcess(tmp_path, SETTINGS).start()
    try:
        create_topics(process.bootstrap, "tx-restart-out", "some-input")
        client = TxnClient(process.bootstrap, "restart-offsets")
        client.init_until_done()
        assert client.add("tx-restart-out", 0) == [E.none]
        assert client.add_offsets("restart-group") is E.none
        assert client.produce("tx-restart-out", 0, [b"x"]) is E.none
        assert client.commit_offsets("restart-group", "some-input", {0: 12}) == [E.none]
        client.close()
        process.restart()      # the transaction stays open across it
        assert fetch_offsets(process.bootstrap, "restart-group", "some-input", [0],
                             require_stable=True) == {0: E.unstable_offset_commit}
        restarted = TxnClient(process.bootstrap, "restart-offsets")
        restarted.init_until_done()     # fences the open transaction: aborted, offsets dropped
        wait_for(lambda: fetch_offsets(process.bootstrap, "restart-group", "some-input", [0],
                                       require_stable=True) == {0: -1}, "the dropped offsets")
        assert restarted.add_offsets("restart-group") is E.none
        assert restarted.commit_offsets("restart-group", "some-input", {0: 13}) == [E.none]
        assert restarted.end(commit=True) is E.none
        wait_for(lambda: fetch_offsets(process.bootstrap, "restart-group", "some-input", [0],
                                       require_stable=True) == {0: 13}, "the committed offset")
        restarted.close()
        process.kill9()
        process.start()        # replayed: the transactional batches and their markers
        assert fetch_offsets(process.bootstrap, "restart-group", "some-input", [0],
                             require_stable=True) == {0: 13}
    finally:
        process.stop()
