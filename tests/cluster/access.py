"""What a SASL user may do on a broker, asked with confluent-kafka as an application would:
each probe returns "ok" or the name of the error the broker answered (the client's own
KafkaError code name, e.g. TOPIC_AUTHORIZATION_FAILED), never a timeout taken for a refusal
(a probe that gets no answer in time raises). Used to check that the users and ACLs moved
from roster refuse on the Kafka cluster what they refused on roster."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

PATIENCE_S = 45.0   # a join or a refusal on a loaded two-core machine


def sasl_conf(bootstrap: str, user: str, password: str, mechanism: str) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def _name(error: KafkaError) -> str:
    return error.name()


def _close(producer: Producer) -> None:
    # what is still queued is not waited for: every probe has its answer by now
    producer.purge()
    try:
        producer.close()
    except KafkaException as exc:
        # a transactional producer the broker refused is fatally failed: its close() says
        # so again (the refusal, already taken as the probe's answer)
        if not exc.args[0].fatal():
            raise


def login(bootstrap: str, user: str, password: str, mechanism: str) -> str:
    """"ok" once a Metadata request as the user is answered, else the authentication error
    the client reports (KafkaError._AUTHENTICATION for a refused password)."""
    refused: list[KafkaError] = []
    seen = threading.Event()

    def on_error(error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            refused.append(error)
            seen.set()

    producer = Producer({**sasl_conf(bootstrap, user, password, mechanism),
                         "error_cb": on_error})
    deadline = time.monotonic() + PATIENCE_S
    try:
        while time.monotonic() < deadline:
            try:
                producer.list_topics(timeout=1.0)
                return "ok"
            except KafkaException:
                pass
            producer.poll(0.2)   # serves error_cb
            if seen.is_set():
                return _name(refused[0])
    finally:
        _close(producer)
    raise AssertionError(f"no answer to {user}'s login on {bootstrap} in {PATIENCE_S}s")


def produce(bootstrap: str, user: str, password: str, mechanism: str, topic: str,
            value: bytes) -> str:
    reports: list[KafkaError | None] = []
    producer = Producer({**sasl_conf(bootstrap, user, password, mechanism),
                         "enable.idempotence": False, "acks": "all",
                         "message.timeout.ms": int(PATIENCE_S * 1000)})
    producer.produce(topic, value, partition=0, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(PATIENCE_S + 5)
    _close(producer)
    if not reports:
        raise AssertionError(f"no delivery report for {user}'s write to {topic}")
    return "ok" if reports[0] is None else _name(reports[0])


def produce_transactionally(bootstrap: str, user: str, password: str, mechanism: str,
                            transactional_id: str, topic: str, value: bytes) -> str:
    """init, one record, commit; "ok" or the error that refused it."""
    producer = Producer({**sasl_conf(bootstrap, user, password, mechanism),
                         "transactional.id": transactional_id,
                         "transaction.timeout.ms": 60000})
    try:
        producer.init_transactions(PATIENCE_S)
        producer.begin_transaction()
        producer.produce(topic, value, partition=0)
        producer.commit_transaction(PATIENCE_S)
    except KafkaException as exc:
        error = exc.args[0]
        if error.code() == KafkaError._TIMED_OUT:
            raise AssertionError(f"{user}'s transaction {transactional_id}: {error}") from None
        return _name(error)
    finally:
        _close(producer)
    return "ok"


def consume(bootstrap: str, user: str, password: str, mechanism: str, topic: str,
            group: str) -> str:
    """Join `group` on `topic` from the earliest offset and read one record: "ok", or the
    refusal the consumer reports (TOPIC_ or GROUP_AUTHORIZATION_FAILED)."""
    consumer = Consumer({**sasl_conf(bootstrap, user, password, mechanism),
                         "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 10000})
    refused: list[KafkaError] = []
    consumer_error = lambda error: refused.append(error) if error.code() in (  # noqa: E731
        KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED) else None
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                if message.error() is None:
                    return "ok"
                consumer_error(message.error())
            if refused:
                return _name(refused[0])
        raise AssertionError(f"{user} read nothing from {topic} as {group} in {PATIENCE_S}s "
                             f"and was refused nothing")
    finally:
        consumer.close()

