"""The admin side of transactions through Kafka's own tool (`kafka-transactions`, 4.4.0 jars) and
`roster transactions`, against roster and the Apache Kafka 4.4 peer with the same assertions:

- list (with the duration and transactional-id pattern filters) and describe show what the
  coordinator holds;
- a confluent-kafka transactional producer with transaction.timeout.ms of 15 minutes writes to
  two partitions and is SIGKILLed: read_committed readers stop at its first offset. find-hanging
  reports nothing (the coordinator still owns the transaction and would abort it at its
  timeout: Kafka's definition of hanging), describe-producers shows its start offset, and
  `kafka-transactions abort` (partition 0) and `roster transactions abort` (partition 1) write
  the abort markers (WriteTxnMarkers): read_committed readers move on, past the killed
  producer's records, to what was written after them;
- (roster only) a transaction its coordinator has lost is what find-hanging reports, and the
  tools close it; WriteTxnMarkers refuses an unknown partition, an older producer epoch and
  __transaction_state,
  and an abort on the group's __consumer_offsets partition drops the pending offsets.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer
from kafka import TopicPartition as KpPartition

from roster.admin.client import AdminClient
from roster.admin.transactions import AbortSpec, TransactionsError, abort, describe
from roster.protocol.errors import ErrorCode
from tests.interop.test_kafka_tools import table, tool
from tests.interop.test_read_committed import confluent_read, end_of_log
from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import PEER_SETTINGS, unique_name
from tests.support.process import BrokerProcess
from tests.support.transactions import TxnClient, create_topics, fetch_offsets

TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
BOTH = pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
LONG_TIMEOUT_MS = 900_000     # transaction.max.timeout.ms's default: the longest allowed

# A transactional producer that writes to partitions 0 and 1 of a topic, says so, and waits to
# be killed with its transaction open.
KILLED_PRODUCER = """
import sys
from confluent_kafka import Producer
from kafka import KafkaConsumer
from kafka import TopicPartition as KpPartition
bootstrap, topic, transactional_id, timeout_ms = sys.argv[1:]
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                     "transaction.timeout.ms": int(timeout_ms)})
producer.init_transactions(30)
producer.begin_transaction()
for partition in (0, 1):
    for i in range(3):
        producer.produce(topic, value=b"killed-%d" % i, partition=partition)
producer.flush(30)
print("wrote", flush=True)
sys.stdin.read()
"""


def roster_cli(target, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "roster", "--log-level", "WARNING",
                           "transactions", *args, "--bootstrap-server", target.bootstrap],
                          capture_output=True, text=True, timeout=60)
    print(f"$ roster transactions {' '.join(args)} -> {done.returncode}\n"
          f"{done.stdout}{done.stderr}")
    return done


def kafka_tool(target, *args: str) -> subprocess.CompletedProcess:
    return tool(target, TRANSACTIONS, *args)


def open_transaction(target, topic: str, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": target.bootstrap,
                         "transactional.id": transactional_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    producer.flush(30)
    return producer


def rows(done: subprocess.CompletedProcess, first: str) -> list[dict[str, str]]:
    assert done.returncode == 0, done.stdout + done.stderr
    return table(done.stdout, first)


@BOTH
def test_list_and_describe_show_the_coordinators_transactions(target):
    topic, prefix = unique_name("admin-txn"), unique_name("admin-id")
    create_topics(target.bootstrap, topic)
    ongoing = open_transaction(target, topic, f"{prefix}-open")
    done = open_transaction(target, topic, f"{prefix}-done")
    done.commit_transaction(30)
    try:
        # Kafka answers EndTxn once PrepareCommit is written and completes the commit after
        # the markers: a listing in that moment shows PrepareCommit, so wait it out (a tool
        # call used to take a JVM start, which hid it)
        deadline = time.monotonic() + 30
        while True:
            listed = {r["TransactionalId"]: r for r in rows(
                kafka_tool(target, "list", "--transactional-id-pattern", f"{prefix}-.*"),
                "TransactionalId")}
            settling = listed.get(f"{prefix}-done", {}).get("TransactionState") == "PrepareCommit"
            if not settling or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert {i: r["TransactionState"] for i, r in listed.items()} == {
            f"{prefix}-open": "Ongoing", f"{prefix}-done": "CompleteCommit"}
        only = rows(kafka_tool(target, "list", "--transactional-id-pattern", f"{prefix}-op"),
                    "TransactionalId")
        assert only == []                                  # the whole id must match
        recent = rows(kafka_tool(target, "list", "--duration-filter", "3600000"),
                      "TransactionalId")
        assert not {r["TransactionalId"] for r in recent} & set(listed)
        [described] = rows(kafka_tool(target, "describe", "--transactional-id",
                                      f"{prefix}-open"), "CoordinatorId")
        assert described["ProducerId"] == listed[f"{prefix}-open"]["ProducerId"]
        assert (described["TransactionState"], described["TopicPartitions"],
                described["TransactionTimeoutMs"]) == ("Ongoing", f"{topic}-0", "60000")
        assert int(described["TransactionDurationMs"]) >= 0
        missing = kafka_tool(target, "describe", "--transactional-id", f"{prefix}-never")
        assert missing.returncode == 1 and "could not be found" in missing.stderr
        bad = kafka_tool(target, "list", "--transactional-id-pattern", "(")
        assert bad.returncode == 1 and "INVALID_REGULAR_EXPRESSION" in bad.stdout + bad.stderr
        # roster's own command line, the same answers
        mine = {r["TransactionalId"]: r["TransactionState"] for r in rows(
            roster_cli(target, "list", "--transactional-id-pattern", f"{prefix}-.*",
                       "--state", "Ongoing", "--state", "CompleteCommit"), "TransactionalId")}
        assert mine == {f"{prefix}-open": "Ongoing", f"{prefix}-done": "CompleteCommit"}
        [row] = rows(roster_cli(target, "describe", "--transactional-id", f"{prefix}-open"),
                     "CoordinatorId")
        assert {k: row[k] for k in ("ProducerId", "TransactionState", "TopicPartitions")} == {
            k: described[k] for k in ("ProducerId", "TransactionState", "TopicPartitions")}
        # nothing open: the last column (partitions) is empty
        finished = roster_cli(target, "describe", "--transactional-id", f"{prefix}-done")
        assert finished.stdout.splitlines()[1].split()[1:5] == [
            f"{prefix}-done", listed[f"{prefix}-done"]["ProducerId"], "0", "CompleteCommit"]
        assert roster_cli(target, "describe", f"{prefix}-never").returncode == 1
    finally:
        ongoing.abort_transaction(30)


def start_killed_producer(target, topic: str, transactional_id: str) -> None:
    """Run the producer until it has written its open transaction, then SIGKILL it."""
    child = subprocess.Popen([sys.executable, "-c", KILLED_PRODUCER, target.bootstrap, topic,
                              transactional_id, str(LONG_TIMEOUT_MS)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "wrote"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    assert child.returncode == -signal.SIGKILL


def committed_ends(target, topic: str) -> list[int]:
    """ListOffsets LATEST under read_committed (the last stable offset) of partitions 0, 1."""
    consumer = KafkaConsumer(bootstrap_servers=target.bootstrap, isolation_level="read_committed")
    try:
        ends = consumer.end_offsets([KpPartition(topic, p) for p in (0, 1)])
        return [ends[KpPartition(topic, p)] for p in (0, 1)]
    finally:
        consumer.close()


@BOTH
def test_a_killed_producers_transaction_is_aborted_by_the_tools_and_readers_move_on(target):
    topic, transactional_id = unique_name("hanging"), unique_name("hanging-id")
    create_topics(target.bootstrap, topic, partitions=2)
    start_killed_producer(target, topic, transactional_id)
    after = Producer({"bootstrap.servers": target.bootstrap, "enable.idempotence": True})
    for partition in (0, 1):
        after.produce(topic, value=b"after-%d" % partition, partition=partition)
    after.flush(30)
    assert committed_ends(target, topic) == [0, 0]      # held at the transaction's start

    producers = rows(kafka_tool(target, "describe-producers", "--topic", topic,
                                "--partition", "0"), "ProducerId")
    assert sorted(p["CurrentTransactionStartOffset"] for p in producers) == ["0", "None"]
    # the coordinator still owns it (and would abort it at its timeout): not hanging
    assert rows(kafka_tool(target, "find-hanging", "--topic", topic,
                           "--max-transaction-timeout", "0"), "Topic") == []
    [described] = rows(roster_cli(target, "describe", transactional_id), "CoordinatorId")
    assert described["TransactionState"] == "Ongoing"
    assert sorted(described["TopicPartitions"].split(",")) == [f"{topic}-0", f"{topic}-1"]

    aborted = kafka_tool(target, "abort", "--topic", topic, "--partition", "0",
                         "--start-offset", "0")
    assert aborted.returncode == 0, aborted.stdout + aborted.stderr
    mine = roster_cli(target, "abort", "--topic", topic, "--partition", "1",
                      "--start-offset", "0")
    assert mine.returncode == 0 and mine.stdout.startswith("Aborted the transaction of producer")
    again = roster_cli(target, "abort", "--topic", topic, "--partition", "1",
                       "--start-offset", "0")
    assert again.returncode == 1 and "no open transaction starts at offset 0" in again.stderr

    end = end_of_log(target, topic)           # partition 0: 3 killed, 1 after, 1 marker
    assert end == 5
    assert committed_ends(target, topic) == [5, 5]      # the markers are written when answered
    assert confluent_read(target, topic, "read_committed", end) == [b"after-0"]
    assert confluent_read(target, topic, "read_uncommitted", end) == [
        b"killed-0", b"killed-1", b"killed-2", b"after-0"]


@pytest.mark.interop
def test_find_hanging_reports_a_transaction_its_coordinator_lost_and_abort_closes_it(tmp_path):
    """A transaction is *hanging* (Kafka's word) when the partitions hold it open and no
    coordinator will ever end it. roster's coordinator refuses transactional writes it does not
    know, so here the coordinator loses it: the producer is SIGKILLed, the broker stopped and
    __transaction_state emptied (a lost coordinator log)."""
    broker = BrokerProcess(tmp_path / "data", PEER_SETTINGS).start()
    try:
        topic = unique_name("lost")
        create_topics(broker.bootstrap, topic, partitions=2)
        start_killed_producer(broker, topic, unique_name("lost-id"))
        broker.stop()
        for state in (tmp_path / "data").glob("__transaction_state-*"):
            for file in state.iterdir():
                file.unlink()
        broker.start()
        assert rows(kafka_tool(broker, "list"), "TransactionalId") == []
        hanging = rows(kafka_tool(broker, "find-hanging", "--broker-id", "0",
                                  "--max-transaction-timeout", "0"), "Topic")
        assert sorted((h["Topic"], h["Partition"], h["StartOffset"]) for h in hanging) == [
            (topic, "0", "0"), (topic, "1", "0")]
        producer_id = int(hanging[0]["ProducerId"])
        with AdminClient(broker.bootstrap) as admin:       # WriteTxnMarkers' refusals
            for spec, error in ((AbortSpec(topic, 9, producer_id, 0), "UNKNOWN_TOPIC"),
                                (AbortSpec(topic, 0, producer_id, -1), "INVALID_PRODUCER_EPOCH"),
                                (AbortSpec("__transaction_state", 0, producer_id, 0),
                                 "INVALID_TOPIC_EXCEPTION")):
                with pytest.raises(TransactionsError, match=error):
                    abort(admin, spec)
        assert kafka_tool(broker, "abort", "--topic", topic, "--partition", "0",
                          "--start-offset", "0").returncode == 0
        assert roster_cli(broker, "abort", "--topic", topic, "--partition", "1",
                          "--producer-id", str(producer_id), "--producer-epoch", "0"
                          ).returncode == 0
        assert rows(kafka_tool(broker, "find-hanging", "--broker-id", "0",
                               "--max-transaction-timeout", "0"), "Topic") == []
        assert committed_ends(broker, topic) == [4, 4]      # 3 records and the marker each
        assert confluent_read(broker, topic, "read_committed", 4) == []
    finally:
        broker.stop()


@pytest.mark.interop
def test_aborting_on_the_offsets_partition_drops_the_pending_offsets(roster_broker):
    """Offsets committed inside a transaction stay pending (require_stable: UNSTABLE_OFFSET_
    COMMIT) until a marker reaches the group's __consumer_offsets partition: an administrator's
    abort there drops them, as the coordinator's own abort marker does."""
    group, transactional_id = unique_name("admin-group"), unique_name("admin-offsets")
    create_topics(roster_broker.bootstrap, group)
    client = TxnClient(roster_broker.bootstrap, transactional_id)
    try:
        client.init_until_done()
        assert client.add_offsets(group) is ErrorCode.none
        assert client.commit_offsets(group, group, {0: 12}) == [ErrorCode.none]
        assert fetch_offsets(roster_broker.bootstrap, group, group, [0], require_stable=True) \
            == {0: ErrorCode.unstable_offset_commit}
        with AdminClient(roster_broker.bootstrap) as admin:
            [(topic, partition)] = describe(admin, transactional_id).partitions
            assert topic == "__consumer_offsets"
            abort(admin, AbortSpec(topic, partition, client.producer_id, client.epoch))
        assert fetch_offsets(roster_broker.bootstrap, group, group, [0], require_stable=True) \
            == {0: -1}
    finally:
        client.close()
