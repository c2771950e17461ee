"""Transactions on a real broker: confluent-kafka's transactional producer (the classic
protocol) commits and aborts, markers land in every partition of the transaction, a zombie is
fenced, a timed-out transaction is aborted by the coordinator, and a broker killed right after
PrepareCommit became durable completes the commit after its restart."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, Producer

from roster.protocol.errors import ErrorCode as E
from tests.support.process import BrokerProcess
from tests.support.transactions import TxnClient, create_topics, log_entries, wait_for

pytestmark = pytest.mark.interop

SETTINGS = {"transaction.state.log.num.partitions": "3", "num.partitions": "1",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("transactions"), SETTINGS).start()
    create_topics(process.bootstrap, "tx-wire-fence", "tx-wire-errors", "tx-timeout")
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
        assert client.add("tx-wire-errors", 0, 7) == [E.operation_not_attempted,
                                                      E.unknown_topic_or_partition]
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


def test_broker_killed_after_prepare_commit_completes_it_after_restart(tmp_path, monkeypatch):
    # writes to __transaction_state: 1 Empty (InitProducerId), 2 Ongoing, 3 PrepareCommit
    monkeypatch.setenv("ROSTER_TEST_KILL_AFTER_TXN_WRITES", "3")
    process = BrokerProcess(tmp_path, SETTINGS).start()
    try:
        create_topics(process.bootstrap, "tx-crash")
        client = TxnClient(process.bootstrap, "crash")
        client.init_until_done()
        assert client.add("tx-crash", 0) == [E.none]
        assert client.produce("tx-crash", 0, [b"one", b"two"]) is E.none
        with pytest.raises(ConnectionError):
            client.end(commit=True)
        client.close()
        process.proc.wait(30)
        monkeypatch.delenv("ROSTER_TEST_KILL_AFTER_TXN_WRITES")
        process.start()
        entries = wait_for(lambda: (e := log_entries(process.bootstrap, "tx-crash"))
                           and e[-1][0] != "data" and e, "the commit marker after restart")
        assert [e[0] for e in entries] == ["data", "commit"]
        # completed: the same transactional id starts again (once CompleteCommit is durable)
        again = TxnClient(process.bootstrap, "crash")
        again.init_until_done()
        assert (again.producer_id, again.epoch) == (client.producer_id, client.epoch + 1)
        again.close()
    finally:
        process.stop()
