"""The transaction admin APIs under ACLs (StandardAuthorizer, SASL PLAIN), as Kafka authorizes
them: DescribeTransactions needs DESCRIBE on each transactional id (the others are refused one by
one) and shows only the partitions of topics the principal may DESCRIBE; ListTransactions lists
only the ids the principal may DESCRIBE; WriteTxnMarkers (kafka-transactions abort) needs ALTER or
CLUSTER_ACTION on the cluster. Through the wire (roster's admin client) and through Kafka's
kafka-transactions with a --command-config."""
from __future__ import annotations

import subprocess

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import NewTopic

from roster.admin.client import AdminClient
from roster.admin.transactions import (
    AbortSpec,
    TransactionsError,
    abort,
    describe,
    list_transactions,
)
from tests.interop.test_acls import acl_settings, client_conf, command_config, roster_acls
from tests.support.kafka_tools import kafka_tool
from tests.support.security import PASSWORDS, SecureBroker

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("acls")]
TOPIC = "txn-admin-acls"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = SecureBroker(tmp_path_factory.mktemp("txn-admin-acls") / "data",
                          acl_settings()).start()
    admin = ConfluentAdmin(client_conf(broker, "admin"))
    for future in admin.create_topics([NewTopic(TOPIC, 1)]).values():
        future.result(timeout=10)
    yield broker
    broker.stop()


def grant(broker, *args: str) -> None:
    done = roster_acls(broker, "admin", "add", *args)
    assert done.returncode == 0, done.stderr


def wire(broker, user: str) -> AdminClient:
    return AdminClient(broker.listener("SASL_PLAINTEXT"), security={
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.username": user, "sasl.password": PASSWORDS[user]})


def open_transaction(broker, transactional_id: str) -> Producer:
    producer = Producer({**client_conf(broker, "admin"), "transactional.id": transactional_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"v")
    producer.flush(30)
    return producer


def test_only_what_alice_may_describe_is_listed_described_and_nobody_else_aborts(broker):
    visible, hidden = open_transaction(broker, "visible-1"), open_transaction(broker, "hidden-1")
    try:
        with wire(broker, "alice") as alice:
            assert list_transactions(alice)[0] == []          # no ACL: an empty listing
            with pytest.raises(TransactionsError, match="TRANSACTIONAL_ID_AUTHORIZATION"):
                describe(alice, "visible-1")
            spec = AbortSpec(TOPIC, 0, producer_id=0, producer_epoch=0)
            with pytest.raises(TransactionsError, match="CLUSTER_AUTHORIZATION_FAILED"):
                abort(alice, spec)
        grant(broker, "--allow-principal", "User:alice", "--operation", "Describe",
              "--transactional-id", "visible-", "--resource-pattern-type", "prefixed")
        with wire(broker, "alice") as alice:
            assert [(i, s) for i, _, s in list_transactions(alice)[0]] == [
                ("visible-1", "Ongoing")]
            assert describe(alice, "visible-1").partitions == []   # no DESCRIBE on the topic
            with pytest.raises(TransactionsError, match="TRANSACTIONAL_ID_AUTHORIZATION"):
                describe(alice, "hidden-1")
        grant(broker, "--allow-principal", "User:alice", "--operation", "Describe",
              "--topic", TOPIC)
        with wire(broker, "alice") as alice:
            assert describe(alice, "visible-1").partitions == [(TOPIC, 0)]
        # Kafka's tool, as alice: the same listing; abort refused on the cluster
        listed = tool_as(broker, "alice", "list")
        assert listed.returncode == 0 and "visible-1" in listed.stdout
        assert "hidden-1" not in listed.stdout
        grant(broker, "--allow-principal", "User:alice", "--operation", "Read", "--topic", TOPIC)
        refused = tool_as(broker, "alice", "abort", "--topic", TOPIC, "--partition", "0",
                          "--start-offset", "0")
        assert refused.returncode == 1 and "cluster authorization error" in refused.stderr
        # ALTER on the cluster is enough (Kafka asks it before CLUSTER_ACTION)
        grant(broker, "--allow-principal", "User:alice", "--operation", "Alter", "--cluster")
        aborted = tool_as(broker, "alice", "abort", "--topic", TOPIC, "--partition", "0",
                          "--start-offset", "0")
        assert aborted.returncode == 0, aborted.stderr
    finally:
        visible.abort_transaction(30)
        hidden.abort_transaction(30)


def tool_as(broker, user: str, *args: str) -> subprocess.CompletedProcess:
    done = kafka_tool(
        "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server",
        broker.listener("SASL_PLAINTEXT"), "--command-config",
        str(command_config(broker, user)), *args)
    print(f"$ kafka-transactions {' '.join(args)} -> {done.returncode}\n{done.stdout}"
          f"{done.stderr}")
    return done
