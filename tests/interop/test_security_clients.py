"""Real clients over TLS and SASL: confluent-kafka, kafka-python, aiokafka and kcat each
produce, consume in a group and commit over SSL (mutual TLS), SASL_PLAINTEXT and SASL_SSL with
PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; OAUTHBEARER with confluent-kafka and kafka-python.

One broker serves the whole matrix (one listener per protocol); certificates come from trustme
in the test's directory and users are added with `roster users --data-dir` before it starts.
The committed offsets are read back on the PLAINTEXT listener, which also checks that Metadata
and FindCoordinator sent each client to its own listener (a client sent elsewhere fails)."""
from __future__ import annotations

import asyncio
import itertools
import subprocess
import time

import pytest

from tests.support.security import (
    PASSWORDS,
    SecureBroker,
    add_users_offline,
    make_oauth,
    make_pki,
    secure_settings,
)

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("security")]

COUNT = 5
DEADLINE_S = 30
CASES = [("SSL", None)] + [(protocol, mechanism)
                           for protocol in ("SASL_PLAINTEXT", "SASL_SSL")
                           for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")]
_names = itertools.count()


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    root = tmp_path_factory.mktemp("security-clients")
    pki = make_pki(root / "pki")
    oauth = make_oauth(root)
    add_users_offline(root / "data", root)
    broker = SecureBroker(root / "data", secure_settings(pki, oauth)).start()
    yield broker, pki, oauth
    broker.stop()


def _user(client: str, mechanism: str | None) -> str:
    # PLAIN: the JAAS user for two clients, a SCRAM-store user for the two others
    if mechanism == "PLAIN" and client in ("confluent", "kcat"):
        return "admin"
    return "alice"


def rdkafka_config(broker, pki, oauth, client, protocol, mechanism) -> dict:
    config = {"bootstrap.servers": broker.listener(protocol), "security.protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        config["ssl.ca.location"] = str(pki.ca)
    if protocol == "SSL":
        config["ssl.certificate.location"] = str(pki.client_cert)
        config["ssl.key.location"] = str(pki.client_key)
    if mechanism == "OAUTHBEARER":
        config["sasl.mechanism"] = "OAUTHBEARER"
        config["oauth_cb"] = lambda _: (oauth.token("carol", 600), time.time() + 600)
    elif mechanism:
        user = _user(client, mechanism)
        config.update({"sasl.mechanism": mechanism, "sasl.username": user,
                       "sasl.password": PASSWORDS[user]})
    return config


def python_config(broker, pki, oauth, client, protocol, mechanism) -> dict:
    """kafka-python's and aiokafka's keyword arguments."""
    config = {"bootstrap_servers": broker.listener(protocol), "security_protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        if client == "aiokafka":
            from aiokafka.helpers import create_ssl_context
            config["ssl_context"] = create_ssl_context(
                cafile=str(pki.ca), certfile=str(pki.client_cert) if protocol == "SSL" else None,
                keyfile=str(pki.client_key) if protocol == "SSL" else None)
        else:
            config["ssl_cafile"] = str(pki.ca)
            if protocol == "SSL":
                config["ssl_certfile"] = str(pki.client_cert)
                config["ssl_keyfile"] = str(pki.client_key)
    if mechanism == "OAUTHBEARER":
        from kafka.net.sasl.oauth import AbstractTokenProvider

        class Provider(AbstractTokenProvider):
            def token(self):
                return oauth.token("carol", 600)
        config.update({"sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": Provider()})
    elif mechanism:
        user = _user(client, mechanism)
        config.update({"sasl_mechanism": mechanism, "sasl_plain_username": user,
                       "sasl_plain_password": PASSWORDS[user]})
    return config


# -- each client: produce COUNT records, consume them in a group, commit ---------------------

def run_confluent(broker, pki, oauth, protocol, mechanism, topic, group) -> list[bytes]:
    from confluent_kafka import Consumer, Producer
    config = rdkafka_config(broker, pki, oauth, "confluent", protocol, mechanism)
    producer = Producer({**config, "linger.ms": 0})
    for i in range(COUNT):
        producer.produce(topic, value=f"{topic}-{i}".encode())
    assert producer.flush(DEADLINE_S) == 0
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(seen) < COUNT and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            seen.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return seen


def run_kafka_python(broker, pki, oauth, protocol, mechanism, topic, group) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer
    config = python_config(broker, pki, oauth, "kafka-python", protocol, mechanism)
    producer = KafkaProducer(**config)
    for i in range(COUNT):
        producer.send(topic, f"{topic}-{i}".encode())
    producer.flush(DEADLINE_S)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, **config)
    seen = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(seen) < COUNT and time.monotonic() < deadline:
            for messages in consumer.poll(timeout_ms=500).values():
                seen.extend(m.value for m in messages)
        consumer.commit()
    finally:
        consumer.close()
    return seen


def run_aiokafka(broker, pki, oauth, protocol, mechanism, topic, group) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    config = python_config(broker, pki, oauth, "aiokafka", protocol, mechanism)

    async def run():
        producer = AIOKafkaProducer(**config)
        await producer.start()
        try:
            for i in range(COUNT):
                await producer.send_and_wait(topic, f"{topic}-{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=group, auto_offset_reset="earliest",
                                    enable_auto_commit=False, **config)
        await consumer.start()
        seen = []
        try:
            deadline = time.monotonic() + DEADLINE_S
            while len(seen) < COUNT and time.monotonic() < deadline:
                for messages in (await consumer.getmany(timeout_ms=500)).values():
                    seen.extend(m.value for m in messages)
            await consumer.commit()
        finally:
            await consumer.stop()
        return seen

    return asyncio.run(run())


def run_kcat(broker, pki, oauth, protocol, mechanism, topic, group) -> list[bytes]:
    config = rdkafka_config(broker, pki, oauth, "kcat", protocol, mechanism)
    options = [arg for key, value in config.items() if key != "bootstrap.servers"
               for arg in ("-X", f"{key}={value}")]
    lines = "".join(f"{topic}-{i}\n" for i in range(COUNT))
    produced = subprocess.run(["kcat", "-P", "-b", config["bootstrap.servers"], "-t", topic,
                               *options], input=lines, capture_output=True, text=True,
                              timeout=DEADLINE_S)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(["kcat", "-b", config["bootstrap.servers"], "-G", group, topic,
                               "-c", str(COUNT), "-q", "-X", "auto.offset.reset=earliest",
                               *options], capture_output=True, text=True, timeout=DEADLINE_S)
    assert consumed.returncode == 0, consumed.stderr
    return [line.encode() for line in consumed.stdout.splitlines()]


RUNNERS = {"confluent": run_confluent, "kafka-python": run_kafka_python,
           "aiokafka": run_aiokafka, "kcat": run_kcat}
MATRIX = [(client, protocol, mechanism) for client in RUNNERS for protocol, mechanism in CASES]
MATRIX += [("confluent", "SASL_SSL", "OAUTHBEARER"), ("kafka-python", "SASL_SSL", "OAUTHBEARER")]


def committed(broker, group: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": broker.listener("PLAINTEXT"), "group.id": group})
    try:
        [position] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        return position.offset
    finally:
        consumer.close()


@pytest.mark.parametrize("client,protocol,mechanism", MATRIX,
                         ids=[f"{c}-{p}-{m or 'mtls'}" for c, p, m in MATRIX])
def test_produce_consume_in_a_group_and_commit(secured, client, protocol, mechanism):
    broker, pki, oauth = secured
    n = next(_names)
    topic, group = f"secure-{n}", f"secure-group-{n}"
    values = RUNNERS[client](broker, pki, oauth, protocol, mechanism, topic, group)
    assert sorted(values) == sorted(f"{topic}-{i}".encode() for i in range(COUNT))
    assert committed(broker, group, topic) == COUNT
    log = broker.log_text()
    assert "Traceback" not in log
    if protocol == "SSL":
        assert "as User:CN=client,OU=apps,O=roster tests with a client certificate " \
               "on listener SSL" in log
