"""Real clients under ACLs: what each one sees when refused (confluent-kafka, kafka-python,
roster.client), that the ACLs `roster acls add --producer/--consumer` create are enough, that
a static group (KIP-345) keeps its members through a rolling bounce under ACLs, and that
revoking a member's group READ stops it with GROUP_AUTHORIZATION_FAILED at its next heartbeat."""
from __future__ import annotations

import asyncio
import json
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.interop.test_acls import acl_settings, add_acls, client_conf, roster_acls
from tests.support import groups
from tests.support.groups import ConfluentMember, Watch
from tests.support.security import PASSWORDS, SecureBroker

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("acls")]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    root = tmp_path_factory.mktemp("acl-clients")
    broker = SecureBroker(root / "data", acl_settings()).start()
    admin = AdminClient(client_conf(broker, "admin"))
    for future in admin.create_topics([NewTopic(t, 3) for t in (
            "orders", "payments", "static-events", "roster-topic", "idem", "hidden",
            "visible")]).values():
        future.result(timeout=10)
    yield broker
    broker.stop()


def remove(broker, *args):
    done = roster_acls(broker, "admin", "remove", "--force", *args)
    assert done.returncode == 0, done.stderr


def produce(broker, user, topic, count=3) -> list:
    outcomes = []
    producer = Producer({**client_conf(broker, user), "message.timeout.ms": 5000})
    for i in range(count):
        producer.produce(topic, f"{user}-{i}".encode(), on_delivery=lambda e, m: outcomes.append(e))
    producer.flush(15)
    return outcomes


def consume_first_error_or_records(conf: dict, topic: str, want: int, deadline_s=20.0):
    consumer = Consumer({**conf, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got, error = [], None
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end and len(got) < want and error is None:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                error = msg.error()
            else:
                got.append(msg.value())
    finally:
        consumer.close()
    return got, error


def test_confluent_producer_and_consumer_refused_then_allowed(broker):
    refused = produce(broker, "bob", "orders")
    assert {e.name() for e in refused} == {"TOPIC_AUTHORIZATION_FAILED"}
    # librdkafka asked Metadata several times; the audit trail says it once a minute
    broker.wait_for_line("Principal = User:bob is Denied operation = DESCRIBE")
    denied = [line for line in broker.output if "Principal = User:bob is Denied operation = "
              "DESCRIBE from host = 127.0.0.1 on resource = Topic:LITERAL:orders based on "
              "rule DefaultDeny" in line]
    assert len(denied) == 1, denied
    add_acls(broker, "--allow-principal", "User:bob", "--producer", "--topic", "orders")
    assert produce(broker, "bob", "orders") == [None, None, None]

    conf = {**client_conf(broker, "alice"), "group.id": "order-readers"}
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
    got, error = consume_first_error_or_records(conf, "orders", 3)
    assert error is not None and error.name() == "GROUP_AUTHORIZATION_FAILED", error
    add_acls(broker, "--allow-principal", "User:alice", "--consumer", "--topic", "orders",
        "--group", "order-readers")
    got, error = consume_first_error_or_records(conf, "orders", 3)
    assert error is None and sorted(got) == [b"bob-0", b"bob-1", b"bob-2"]


def test_an_idempotent_producer_needs_write_on_some_topic_or_idempotent_write(broker):
    """Kafka 3.0+ (KIP-679): InitProducerId without a transactional id is allowed with
    IDEMPOTENT_WRITE on the cluster or WRITE on any topic; else CLUSTER_AUTHORIZATION_FAILED."""
    def produce_idempotent(user):
        """The delivery reports, or the fatal error confluent-kafka raises."""
        outcomes = []
        producer = Producer({**client_conf(broker, user), "enable.idempotence": True,
                             "message.timeout.ms": 5000})
        try:
            producer.produce("idem", b"x", on_delivery=lambda e, m: outcomes.append(e))
            producer.flush(15)
        except (KafkaException, SystemError) as exc:
            # raised from a callback: SystemError, caused by the KafkaException
            return (exc if isinstance(exc, KafkaException) else exc.__cause__).args[0]
        return outcomes

    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Describe", "--topic", "idem")
    refused = produce_idempotent("alice")
    assert (refused.name(), refused.fatal()) == ("CLUSTER_AUTHORIZATION_FAILED", True)
    add_acls(broker, "--allow-principal", "User:alice", "--producer", "--topic", "idem")
    assert produce_idempotent("alice") == [None]  # WRITE on a topic is enough: no --idempotent

def test_kafka_python_sees_kafkas_exceptions(broker):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
    common = dict(bootstrap_servers=broker.listener("SASL_PLAINTEXT"),
                  security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                  sasl_plain_username="bob", sasl_plain_password=PASSWORDS["bob"])
    producer = KafkaProducer(**common, max_block_ms=5000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("payments", b"x").get(timeout=10)
    finally:
        producer.close()
    add_acls(broker, "--allow-principal", "User:bob", "--operation", "Read", "--topic", "payments")
    consumer = KafkaConsumer("payments", **common, group_id="payment-readers",
                             consumer_timeout_ms=5000)
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            for _ in consumer:
                pass
    finally:
        consumer.close()


def test_roster_client_names_the_resource_and_operation(broker):
    from roster.client.consumer import Consumer as RosterConsumer
    from roster.client.errors import AuthorizationError
    from roster.client.producer import Producer as RosterProducer
    security = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": "bob", "sasl.password": PASSWORDS["bob"]}

    async def main():
        producer = RosterProducer(broker.listener("SASL_PLAINTEXT"), security=security)
        with pytest.raises(AuthorizationError) as refused:
            await producer.send("roster-topic", b"x")
        assert refused.value.resource == "roster-topic"
        assert refused.value.operation in ("DESCRIBE", "WRITE")
        assert "roster acls add --allow-principal <principal>" in str(refused.value)
        await producer.close()
        consumer = RosterConsumer(broker.listener("SASL_PLAINTEXT"), "roster-group",
                                  security=security)
        await consumer.subscribe(["orders"])
        with pytest.raises(AuthorizationError) as refused:
            for _ in range(100):
                await consumer.poll(100)
        assert (refused.value.resource_type, refused.value.resource) == ("group", "roster-group")
        assert "GROUP_AUTHORIZATION_FAILED" in str(refused.value)
        await consumer.close()

    asyncio.run(main())


def test_static_group_under_acls_bounces_without_rebalance_and_stops_when_revoked(broker):
    topic, group, partitions = "static-events", "static-readers", 3
    add_acls(broker, "--allow-principal", "User:alice", "--consumer", "--topic", topic, "--group",
        group)
    watch = Watch()

    def member(i, name):
        return ConfluentMember(watch, broker.listener("SASL_PLAINTEXT"), group, topic, name,
                               f"static-{i}", {"heartbeat.interval.ms": 500,
                                               "session.timeout.ms": 10000,
                                               **client_conf(broker, "alice")})

    slots = [member(i, f"s{i}") for i in range(2)]
    started = list(slots)
    try:
        for m in slots:
            m.start()
        groups.wait_split(watch, slots, partitions)
        before = slots[0].assigned
        others_before = slots[1].callbacks()
        slots[0].stop()  # a static member leaves no LeaveGroup behind
        again = member(0, "s0-again")
        started.append(again)
        again.start()
        watch.wait_for(lambda: again.count("assign") >= 1, groups.DEADLINE_S,
                       lambda: "the bounced member got its partitions back")
        assert again.assigned == before
        assert slots[1].callbacks() == others_before, "the bounce rebalanced the other member"
        # revoke: an explicit DENY wins over the ALLOW
        add_acls(broker, "--deny-principal", "User:alice", "--operation", "Read", "--group", group)
        watch.wait_for(lambda: any(e.name() == "GROUP_AUTHORIZATION_FAILED"
                                   for m in (again, slots[1]) for e in m.errors),
                       groups.DEADLINE_S, lambda: "a member refused at its next heartbeat")
    finally:
        for m in started:
            m.stop()
        remove(broker, "--group", group)


def test_aiokafka_and_kcat(broker):
    """The rest of the matrix: aiokafka raises Kafka's exception; kcat's listing shows only
    the topics the principal may describe (Metadata filters rather than refuses), and its
    produce is refused."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import TopicAuthorizationFailedError

    async def aiokafka_produce():
        producer = AIOKafkaProducer(bootstrap_servers=broker.listener("SASL_PLAINTEXT"),
                                    security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                    sasl_plain_username="alice",
                                    sasl_plain_password=PASSWORDS["alice"])
        await producer.start()
        try:
            await producer.send_and_wait("hidden", b"x")
        finally:
            await producer.stop()

    with pytest.raises(TopicAuthorizationFailedError):
        asyncio.run(aiokafka_produce())

    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Describe", "--topic",
        "visible")
    kcat = ["kcat", "-b", broker.listener("SASL_PLAINTEXT"), "-X",
            "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=PLAIN", "-X",
            "sasl.username=alice", "-X", f"sasl.password={PASSWORDS['alice']}"]
    listed = subprocess.run(kcat + ["-L", "-J"], capture_output=True, text=True, timeout=30)
    names = {t["topic"] for t in json.loads(listed.stdout)["topics"]}
    assert "visible" in names and "hidden" not in names and "__consumer_offsets" not in names
    produced = subprocess.run(kcat + ["-P", "-t", "hidden"], input="x\n", capture_output=True,
                              text=True, timeout=30)
    assert produced.returncode != 0 and "authorization failed" in produced.stderr.lower(), \
        produced.stderr[-1000:]


def test_allow_everyone_if_no_acl_found(tmp_path):
    """PLAINTEXT clients are User:ANONYMOUS: with allow.everyone.if.no.acl.found=true they may
    use what no ACL mentions, and lose a topic as soon as an ACL mentions it."""
    broker = SecureBroker(tmp_path / "data", acl_settings(
        **{"allow.everyone.if.no.acl.found": "true"})).start()
    try:
        anonymous = {"bootstrap.servers": broker.listener("PLAINTEXT"),
                     "message.timeout.ms": 5000}

        def produce_anonymously(topic):
            outcomes = []
            producer = Producer(anonymous)
            producer.produce(topic, b"x", on_delivery=lambda e, m: outcomes.append(e))
            producer.flush(15)
            return outcomes

        assert produce_anonymously("open") == [None]
        add_acls(broker, "--allow-principal", "User:alice", "--operation", "Write", "--topic", "open")
        refused = produce_anonymously("open")
        assert [e.name() for e in refused] == ["TOPIC_AUTHORIZATION_FAILED"]
        assert produce_anonymously("still-open") == [None]
    finally:
        broker.stop()


def test_the_consumer_group_protocol_under_acls(broker):
    """KIP-848 (ConsumerGroupHeartbeat): READ on the group, DESCRIBE on the subscribed topics."""
    from roster.client.consumer import Consumer as RosterConsumer
    from roster.client.errors import AuthorizationError
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Read", "--topic", "payments")
    conf = {**client_conf(broker, "alice"), "group.id": "kip848-readers",
            "group.protocol": "consumer"}
    got, error = consume_first_error_or_records(conf, "payments", 1)
    assert error is not None and error.name() == "GROUP_AUTHORIZATION_FAILED", error

    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Read", "--group",
        "kip848-roster")
    security = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": "alice", "sasl.password": PASSWORDS["alice"]}

    async def main():
        consumer = RosterConsumer(broker.listener("SASL_PLAINTEXT"), "kip848-roster",
                                  security=security, group_protocol="consumer")
        await consumer.subscribe(["hidden"])
        try:
            with pytest.raises(AuthorizationError) as refused:
                for _ in range(100):
                    await consumer.poll(100)
        finally:
            await consumer.close()
        return refused.value

    refused = asyncio.run(main())
    assert (refused.resource_type, refused.resource, refused.operation) == (
        "topic", "hidden", "DESCRIBE"), str(refused)
