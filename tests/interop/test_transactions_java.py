"""The Java client 4.4 (Kafka's own TransactionalMessageCopier: a consume-transform-produce loop
with sendOffsetsToTransaction(offsets, groupMetadata) of a subscribed group member) copies a
topic exactly once through roster's transaction coordinator: every input record once in the
output, a commit marker per transaction, and the group's offset at the end of the input. With
the finalized transaction.version at 2 the client speaks Transaction Version 2 (KIP-890: no
AddPartitionsToTxn/AddOffsetsToTxn, the epoch bumped by every EndTxn, so each commit marker
carries the next epoch); at 1 it speaks the classic protocol (one epoch throughout)."""
from __future__ import annotations

import subprocess

import pytest
from confluent_kafka import Producer

from tests.support.kafka_peer import java_command
from tests.support.process import BrokerProcess
from tests.support.transactions import create_topics, fetch_offsets, log_entries

pytestmark = pytest.mark.interop

RECORDS = 50
PER_TRANSACTION = 10


@pytest.fixture(scope="module", params=[2, 1], ids=["tv2", "classic"])
def broker(request, tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("transactions-java"), {
        "transaction.state.log.num.partitions": "3", "transaction.version": str(request.param),
        "group.initial.rebalance.delay.ms": "0"}).start()
    process.transaction_version = request.param
    yield process
    process.stop()


def copy(broker, source: str, target: str, group: str, transactional_id: str) -> None:
    done = subprocess.run(java_command(
        "org.apache.kafka.tools.TransactionalMessageCopier", "--broker-list", broker.bootstrap,
        "--input-topic", source, "--input-partition", "0", "--output-topic", target,
        "--consumer-group", group, "--transactional-id", transactional_id,
        "--transaction-size", str(PER_TRANSACTION), "--group-mode", "--use-group-metadata"),
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_java_copier_copies_exactly_once(broker):
    create_topics(broker.bootstrap, "java-in", "java-out")
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(RECORDS):
        p.produce("java-in", value=b"r%d" % i)
    p.flush(30)
    copy(broker, "java-in", "java-out", "java-copier", "java-copier-tx")
    entries = log_entries(broker.bootstrap, "java-out")
    values = [v for kind, _, vs in entries if kind == "data" for v in vs]
    assert values == [b"r%d" % i for i in range(RECORDS)]
    assert [kind for kind, _, _ in entries].count("commit") == RECORDS // PER_TRANSACTION
    assert "abort" not in [kind for kind, _, _ in entries]
    assert fetch_offsets(broker.bootstrap, "java-copier", "java-in", [0]) == {0: RECORDS}
    epochs = [epoch for kind, _, epoch in entries if kind == "commit"]
    if broker.transaction_version == 2:
        assert epochs == list(range(epochs[0], epochs[0] + len(epochs)))
    else:
        assert set(epochs) == {epochs[0]}
