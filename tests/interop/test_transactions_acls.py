"""Transactions under ACLs, as Kafka checks them, with confluent-kafka's transactional producer:
without WRITE/DESCRIBE on its transactional id it is refused (TRANSACTIONAL_ID_AUTHORIZATION_
FAILED, from FindCoordinator's DESCRIBE); with the ACLs `roster acls add --producer
--transactional-id` creates it commits; offsets sent to the transaction need READ on the group
(GROUP_AUTHORIZATION_FAILED without it)."""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.interop.test_acls import acl_settings, add_acls, client_conf
from tests.support.security import SecureBroker

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("acls")]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    root = tmp_path_factory.mktemp("acl-transactions")
    broker = SecureBroker(root / "data", acl_settings(**{
        "transaction.state.log.num.partitions": "3"})).start()
    admin = AdminClient(client_conf(broker, "admin"))
    for future in admin.create_topics([NewTopic("tx-acl", 1)]).values():
        future.result(timeout=10)
    yield broker
    broker.stop()


def transactional(broker, user: str, transactional_id: str) -> Producer:
    return Producer({**client_conf(broker, user), "transactional.id": transactional_id})


def test_a_transactional_producer_needs_its_transactional_id(broker):
    add_acls(broker, "--allow-principal", "User:alice", "--producer", "--topic", "tx-acl")
    refused = transactional(broker, "alice", "tx-alice")
    with pytest.raises(KafkaException) as caught:
        refused.init_transactions(20)
    assert caught.value.args[0].name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    add_acls(broker, "--allow-principal", "User:alice", "--producer", "--topic", "tx-acl",
        "--transactional-id", "tx-alice")
    allowed = transactional(broker, "alice", "tx-alice")
    allowed.init_transactions(20)
    allowed.begin_transaction()
    allowed.produce("tx-acl", b"allowed")
    allowed.commit_transaction(20)
    reader = Consumer({**client_conf(broker, "admin"), "group.id": "tx-acl-reader"})
    assert reader.get_watermark_offsets(TopicPartition("tx-acl", 0), 10) == (0, 2)  # + marker
    reader.close()
    # offsets into the transaction: READ on the group is needed
    allowed.begin_transaction()
    allowed.produce("tx-acl", b"with offsets")
    metadata = Consumer({**client_conf(broker, "alice"), "group.id": "tx-acl-group"})
    with pytest.raises(KafkaException) as caught:
        allowed.send_offsets_to_transaction([TopicPartition("tx-acl", 0, 1)],
                                            metadata.consumer_group_metadata(), 20)
    assert caught.value.args[0].name() == "GROUP_AUTHORIZATION_FAILED"
    metadata.close()
