"""The Spark connector under ACLs: a query refused by the broker fails with roster's
AuthorizationError, which names the resource and the operation (and the ACL that would allow
it), in batch (Describe, then Read on the topic) and in streaming as a group member (the
group refused)."""
from __future__ import annotations

import pytest

from tests.interop.test_acls import acl_settings, add_acls
from tests.support.security import PASSWORDS, SecureBroker

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark-acls")
    broker = SecureBroker(root / "data", acl_settings()).start()
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.interop.test_acls import client_conf
    admin = AdminClient(client_conf(broker, "admin"))
    admin.create_topics([NewTopic("spark-acl", 2)])["spark-acl"].result(timeout=10)
    from confluent_kafka import Producer
    producer = Producer(client_conf(broker, "admin"))
    for i in range(10):
        producer.produce("spark-acl", f"r{i}".encode(), partition=i % 2)
    assert producer.flush(15) == 0
    yield broker
    broker.stop()


def options(broker) -> dict[str, str]:
    return {"bootstrap.servers": broker.listener("SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": PASSWORDS["alice"]}


def test_refused_queries_name_the_resource_and_operation(spark, broker, tmp_path):
    def batch_error() -> str:
        with pytest.raises(Exception) as caught:
            spark.read.format("roster").options(**options(broker)) \
                .option("subscribe", "spark-acl").load().count()
        return str(caught.value)

    message = batch_error()
    assert "not authorized to DESCRIBE topic 'spark-acl' (TOPIC_AUTHORIZATION_FAILED)" \
        in message, message[-2000:]
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Describe", "--topic",
        "spark-acl")
    message = batch_error()
    assert "not authorized to READ topic 'spark-acl' (TOPIC_AUTHORIZATION_FAILED)" in message, \
        message[-2000:]
    assert "roster acls add --allow-principal <principal> --operation Read --topic spark-acl" \
        in message

    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Read", "--topic",
        "spark-acl")
    query = spark.readStream.format("roster").options(**options(broker)) \
        .option("subscribe", "spark-acl").option("group.id", "spark-acl-readers") \
        .option("group.instance.id", "spark-acl-1").load() \
        .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "cp")).start()
    try:
        with pytest.raises(Exception) as failed:
            query.awaitTermination(60)
        error = str(failed.value)
    finally:
        if query.isActive:
            query.stop()
    assert "group 'spark-acl-readers' (GROUP_AUTHORIZATION_FAILED)" in error, error[-2000:]
