"""Fault injection (broker/faults) observed by real clients: each fault is armed over the
console's HTTP port of a test-mode broker in a child process, the client meets it (its own
error, its retry) and recovers; the flight recorder tells what was done."""
from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
import uuid

import pytest

from tests.support.process import BrokerProcess

pytestmark = pytest.mark.interop

TEST_MODE = {"roster.test.mode": "true", "http.port": "0",
             "group.initial.rebalance.delay.ms": "0"}


def call(url: str, method: str = "GET", document=None, query: str = ""):
    """(status, JSON answer) of a request to the fault routes."""
    data = None if document is None else json.dumps(document).encode()
    request = urllib.request.Request(url + "faults" + query, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


class Faulty:
    """A test-mode broker and its fault routes."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker
        line = broker.wait_for_line("roster console on ")
        self.url = line.split("roster console on ", 1)[1].split(" ", 1)[0]

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def arm(self, action: str, **arguments) -> dict:
        status, answer = call(self.url, "POST", {"action": action, **arguments})
        assert status == 200, answer
        return answer

    def rules(self) -> list[dict]:
        status, answer = call(self.url)
        assert status == 200, answer
        return answer["faults"]

    def fired(self, rule_id: int) -> int | None:
        """How often a rule in force acted; None once it is gone (used up)."""
        return next((r["fired"] for r in self.rules() if r["id"] == rule_id), None)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("faults") / "data", TEST_MODE).start()
    yield Faulty(broker)
    broker.stop()


@pytest.fixture(autouse=True)
def cleared(faulty):
    yield
    call(faulty.url, "DELETE")


def topic_with(faulty, records: int = 3) -> str:
    from confluent_kafka import Producer
    topic = f"faults-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": faulty.bootstrap})
    for i in range(records):
        producer.produce(topic, value=f"v{i}".encode())
    assert producer.flush(30) == 0
    return topic


def wait_for(predicate, timeout_s: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {timeout_s} s")


# -- confluent-kafka (librdkafka) --------------------------------------------------------------

def test_confluent_commit_gets_the_injected_error_then_commits(faulty):
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": faulty.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        message = wait_for(lambda: consumer.poll(0.5), what="record")
        rule = faulty.arm("fail_next_commit", group=group, error="OFFSET_METADATA_TOO_LARGE")
        with pytest.raises(KafkaException) as failed:
            consumer.commit(message, asynchronous=False)
        assert failed.value.args[0].code() == KafkaError.OFFSET_METADATA_TOO_LARGE
        assert faulty.fired(rule["id"]) is None   # used up
        consumer.commit(message, asynchronous=False)   # the next one is the broker's own
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed[0].offset == message.offset() + 1
    finally:
        consumer.close()


def test_confluent_producer_meets_a_full_disk_and_its_retry_succeeds(faulty):
    from confluent_kafka import KafkaError, Producer
    topic = topic_with(faulty, records=1)
    faulty.arm("fail_appends", count=1, topic=topic)
    reports = []
    strict = Producer({"bootstrap.servers": faulty.bootstrap, "retries": 0,
                       "enable.idempotence": False})
    strict.produce(topic, b"lost", on_delivery=lambda err, msg: reports.append(err))
    strict.flush(30)
    assert reports[0] is not None and reports[0].code() == KafkaError.KAFKA_STORAGE_ERROR
    # a producer that retries (the default) rides over it
    faulty.arm("fail_appends", count=2, topic=topic)
    retrying = Producer({"bootstrap.servers": faulty.bootstrap, "retry.backoff.ms": 50})
    reports.clear()
    retrying.produce(topic, b"kept", on_delivery=lambda err, msg: reports.append(err))
    retrying.flush(30)
    assert reports == [None]
    assert [r for r in faulty.rules() if r.get("topic") == topic] == []


def test_confluent_commit_waits_out_a_loading_coordinator(faulty):
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": faulty.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        message = wait_for(lambda: consumer.poll(0.5), what="record")
        rule = faulty.arm("refuse_coordinator", seconds=1.5,
                          error="COORDINATOR_LOAD_IN_PROGRESS", group_id=group)
        # librdkafka retries a little, then hands the error to the application
        with pytest.raises(KafkaException) as failed:
            consumer.commit(message, asynchronous=False)
        assert failed.value.args[0].code() == KafkaError.COORDINATOR_LOAD_IN_PROGRESS
        wait_for(lambda: faulty.fired(rule["id"]) is None, what="the window to pass")
        consumer.commit(message, asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed[0].offset == message.offset() + 1
    finally:
        consumer.close()


def test_confluent_heartbeat_not_coordinator_looks_the_coordinator_up_again(faulty):
    from confluent_kafka import Consumer
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": faulty.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "heartbeat.interval.ms": 100})
    try:
        consumer.subscribe([topic])
        message = wait_for(lambda: consumer.poll(0.5), what="record")
        lookups = faulty.arm("delay", api="FindCoordinator", ms=0, count=None)
        rule = faulty.arm("fail_next", api="Heartbeat", error="NOT_COORDINATOR",
                          group_id=group)
        wait_for(lambda: faulty.fired(rule["id"]) is None, what="the heartbeat refused")
        # librdkafka marks the coordinator dead and asks FindCoordinator again
        wait_for(lambda: faulty.fired(lookups["id"]), what="a coordinator lookup")
        consumer.commit(message, asynchronous=False)
        assert consumer.assignment()
    finally:
        consumer.close()


# -- kafka-python ------------------------------------------------------------------------------

def test_kafka_python_commit_fails_with_illegal_generation_and_it_rejoins(faulty):
    from kafka import KafkaConsumer
    from kafka.errors import CommitFailedError
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"
    assigned = []

    from kafka import ConsumerRebalanceListener

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, partitions):
            assigned.append(sorted(p.partition for p in partitions))

        def on_partitions_revoked(self, partitions):
            pass

    consumer = KafkaConsumer(bootstrap_servers=faulty.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        consumer.subscribe([topic], listener=Listener())
        consumer.topics()   # metadata before the first join (see tests/support/groups.py)
        wait_for(lambda: consumer.poll(500), what="records")
        faulty.arm("fail_next", api="OffsetCommit", error="ILLEGAL_GENERATION",
                   group_id=group)
        with pytest.raises(CommitFailedError):
            consumer.commit()
        wait_for(lambda: consumer.poll(200) is not None and len(assigned) >= 2,
                 what="a second assignment after rejoining")
        consumer.commit()
    finally:
        consumer.close()


def test_kafka_python_answers_are_delayed(faulty):
    from kafka import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=faulty.bootstrap)
    try:
        admin.list_topics()
        rule = faulty.arm("delay", api="Metadata", ms=700, count=1)
        started = time.monotonic()
        admin.list_topics()
        assert time.monotonic() - started >= 0.6
        assert faulty.fired(rule["id"]) is None
    finally:
        admin.close()


# -- aiokafka ----------------------------------------------------------------------------------

def test_aiokafka_heartbeat_told_rebalance_in_progress_rejoins(faulty):
    from aiokafka import AIOKafkaConsumer
    from aiokafka.abc import ConsumerRebalanceListener
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"

    async def run():
        assignments = []

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                pass

            async def on_partitions_assigned(self, assigned):
                assignments.append(sorted(p.partition for p in assigned))

        consumer = AIOKafkaConsumer(bootstrap_servers=faulty.bootstrap, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False,
                                    heartbeat_interval_ms=100)
        await consumer.start()
        try:
            consumer.subscribe([topic], listener=Listener())
            await consumer.getmany(timeout_ms=5000)
            while not assignments:
                await consumer.getmany(timeout_ms=200)
            rule = faulty.arm("fail_next", api="Heartbeat", error="REBALANCE_IN_PROGRESS",
                              group_id=group)
            deadline = time.monotonic() + 30
            while len(assignments) < 2 and time.monotonic() < deadline:
                await consumer.getmany(timeout_ms=200)
            assert len(assignments) >= 2, "aiokafka did not rejoin"
            assert faulty.fired(rule["id"]) is None
            await consumer.commit()
        finally:
            await consumer.stop()

    asyncio.run(run())


# -- roster.client -----------------------------------------------------------------------------

def test_roster_client_survives_a_dropped_connection_and_a_forced_rebalance(faulty):
    from roster.client.consumer import Consumer
    topic = topic_with(faulty, records=4)
    group = f"g-{uuid.uuid4().hex[:8]}"

    async def run():
        assigned = []
        consumer = Consumer(faulty.bootstrap, group, heartbeat_interval_ms=100,
                            on_assigned=lambda partitions: assigned.append(partitions))
        await consumer.subscribe([topic])
        try:
            seen = []
            deadline = time.monotonic() + 30
            while len(seen) < 4 and time.monotonic() < deadline:
                seen += await consumer.poll(timeout_ms=200)
            assert len(seen) == 4
            rule = faulty.arm("drop_connection", api="Heartbeat", group_id=group)
            while faulty.fired(rule["id"]) is not None and time.monotonic() < deadline:
                await consumer.poll(timeout_ms=100)
            # the client's own answer while it has no coordinator: CommitFailed, then it
            # finds the coordinator again and commits
            from roster.client.member_driver import CommitFailed
            while True:
                try:
                    await consumer.commit()
                    break
                except CommitFailed:
                    assert time.monotonic() < deadline
                    await consumer.poll(timeout_ms=100)
            before = len(assigned)
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: faulty.arm("force_rebalance", group=group))
            while len(assigned) == before and time.monotonic() < deadline:
                await consumer.poll(timeout_ms=100)
            assert len(assigned) > before, "the member did not go through a new generation"
            await consumer.commit()
        finally:
            await consumer.close()

    asyncio.run(run())


# -- the flight recorder -----------------------------------------------------------------------

def test_every_injection_is_in_the_group_history(faulty):
    from roster.admin.client import AdminClient
    from roster.observability import history
    group = f"g-{uuid.uuid4().hex[:8]}"
    faulty.arm("fail_next", api="JoinGroup", error="COORDINATOR_NOT_AVAILABLE",
               group_id=group)
    with AdminClient(faulty.bootstrap) as client:
        lines = wait_for(lambda: [line for line in history.history_lines(client, group)
                                  if "fault" in line], what="a fault event")
    assert "armed fail JOIN_GROUP COORDINATOR_NOT_AVAILABLE" in lines[0]
    # and on the console
    from tests.support.http import http_get
    status, _, page = http_get(faulty.url)   # the recent events of every group
    assert status == 200 and "armed fail JOIN_GROUP COORDINATOR_NOT_AVAILABLE" in page


def test_a_fault_naming_no_group_is_recorded_under_roster_faults(faulty):
    from roster.admin.client import AdminClient
    from roster.observability import history
    marker = f"m-{uuid.uuid4().hex[:8]}"
    faulty.arm("delay", api="ListOffsets", ms=1, count=1, client_id=marker)
    with AdminClient(faulty.bootstrap) as client:
        wait_for(lambda: [line for line in history.history_lines(client, "roster.faults")
                          if "armed delay LIST_OFFSETS" in line], what="the fault's event")


# -- coordinator actions -------------------------------------------------------------------------

def test_confluent_member_removed_hears_it_and_rejoins(faulty):
    from confluent_kafka import Consumer
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"
    events = []
    consumer = Consumer({"bootstrap.servers": faulty.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "heartbeat.interval.ms": 100})
    try:
        consumer.subscribe([topic], on_assign=lambda c, ps: events.append("assigned"),
                           on_revoke=lambda c, ps: events.append("revoked"),
                           on_lost=lambda c, ps: events.append("lost"))
        message = wait_for(lambda: consumer.poll(0.5), what="record")
        member_id = consumer.memberid()
        outcome = faulty.arm("remove_member", group=group, member_id=member_id)
        assert outcome["error"] == "NONE"
        # its next heartbeat is told UNKNOWN_MEMBER_ID: the partitions are lost, and it
        # joins again under a new member id
        wait_for(lambda: consumer.poll(0.1) is None and events[-1:] == ["assigned"]
                 and "lost" in events and consumer.memberid() != member_id,
                 what="a new assignment under a new member id")
        consumer.commit(message, asynchronous=False)
    finally:
        consumer.close()


def test_confluent_static_member_fenced_gets_a_fatal_error(faulty):
    from confluent_kafka import Consumer, KafkaError
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": faulty.bootstrap, "group.id": group,
                         "group.instance.id": "worker-1", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "heartbeat.interval.ms": 100})
    try:
        consumer.subscribe([topic])
        wait_for(lambda: consumer.poll(0.5), what="record")
        outcome = faulty.arm("fence_instance", group=group, instance_id="worker-1")
        assert outcome["error"] == "NONE" and outcome["fenced_member_id"] != \
            outcome["member_id"]

        def fatal():   # librdkafka hands a fatal error over as a consumer error
            message = consumer.poll(0.1)
            return message if message is not None and message.error() is not None \
                and message.error().code() == KafkaError._FATAL else None
        error = wait_for(fatal, what="a fatal error").error()
        assert "Static consumer fenced by other consumer with same group.instance.id" \
            in error.str()
    finally:
        consumer.close()


def test_consumer_protocol_member_removed_rejoins(faulty):
    from confluent_kafka import Consumer
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"
    events = []
    consumer = Consumer({"bootstrap.servers": faulty.bootstrap, "group.id": group,
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        consumer.subscribe([topic], on_assign=lambda c, ps: events.append(("assigned", len(ps))),
                           on_lost=lambda c, ps: events.append(("lost", len(ps))),
                           on_revoke=lambda c, ps: events.append(("revoked", len(ps))))
        message = wait_for(lambda: consumer.poll(0.5), what="record")
        outcome = faulty.arm("remove_member", group=group, member_id=consumer.memberid())
        assert outcome["error"] == "NONE"
        # its next heartbeat is told UNKNOWN_MEMBER_ID: the partitions are lost and it joins
        # again (KIP-848 clients keep their own member id)
        wait_for(lambda: consumer.poll(0.1) is None and ("lost", 1) in events
                 and events[-1] == ("assigned", 1), what="a new membership")
        consumer.commit(message, asynchronous=False)
    finally:
        consumer.close()


# -- the coordinator lookup path, and narrowing by client id -------------------------------------

def test_aiokafka_commit_looks_the_coordinator_up_until_it_answers(faulty):
    from aiokafka import AIOKafkaConsumer
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"

    async def run():
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=faulty.bootstrap, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        try:
            while not await consumer.getmany(timeout_ms=200):
                pass
            rule = faulty.arm("refuse_coordinator", seconds=1.5, error="NOT_COORDINATOR",
                              group_id=group)
            started = time.monotonic()
            await consumer.commit()   # retried, with FindCoordinator between, until it works
            assert time.monotonic() - started >= 1.0
            assert faulty.fired(rule["id"]) is None
        finally:
            await consumer.stop()

    asyncio.run(run())


def test_kafka_python_commit_sync_rides_out_a_coordinator_refusing(faulty):
    from kafka import KafkaConsumer
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = KafkaConsumer(topic, bootstrap_servers=faulty.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        wait_for(lambda: consumer.poll(500), what="records")
        faulty.arm("refuse_coordinator", seconds=1.5, error="NOT_COORDINATOR", group_id=group)
        started = time.monotonic()
        consumer.commit()
        assert time.monotonic() - started >= 1.0
    finally:
        consumer.close()


def test_a_fault_for_one_client_id_leaves_the_others_alone(faulty):
    from confluent_kafka import KafkaError, Producer
    topic = topic_with(faulty, records=1)
    faulty.arm("fail_next", api="Produce", error="TOPIC_AUTHORIZATION_FAILED", count=None,
               client_id="unlucky")
    reports = {}
    for client_id in ("unlucky", "lucky"):
        producer = Producer({"bootstrap.servers": faulty.bootstrap, "client.id": client_id,
                             "retries": 0, "enable.idempotence": False})
        producer.produce(topic, client_id.encode(),
                         on_delivery=lambda err, msg, c=client_id: reports.setdefault(c, err))
        producer.flush(30)
    assert reports["unlucky"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert reports["lucky"] is None


def test_a_commit_whose_write_fails_as_on_a_full_disk_is_retried(faulty):
    """fail_appends on __consumer_offsets: the group runtime's own write fails, it puts the
    commit back and answers NOT_COORDINATOR, as Kafka's coordinator does on a failed append;
    kafka-python looks the coordinator up again and commits. (librdkafka's synchronous commit
    meets its own loop there: confluentinc/librdkafka#3645, docs/testing-faults.md.)"""
    from kafka import KafkaConsumer, TopicPartition
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = KafkaConsumer(topic, bootstrap_servers=faulty.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        records = wait_for(lambda: consumer.poll(500), what="records")
        rule = faulty.arm("fail_appends", count=1, topic="__consumer_offsets")
        consumer.commit()
        assert faulty.fired(rule["id"]) is None   # the write failed once, then the retry
        last = max(r.offset for batch in records.values() for r in batch)
        assert consumer.committed(TopicPartition(topic, 0)) == last + 1
    finally:
        consumer.close()


def test_force_rebalance_of_a_consumer_protocol_group_is_refused_with_why(faulty):
    from confluent_kafka import Consumer
    topic = topic_with(faulty)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": faulty.bootstrap, "group.id": group,
                         "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        wait_for(lambda: consumer.poll(0.5), what="record")
        for action, extra in (("force_rebalance", {}), ("fence_instance", {"instance_id": "i"})):
            status, answer = call(faulty.url, "POST", {"action": action, "group": group, **extra})
            assert status == 400
            assert f"group {group!r} is a consumer group" in answer["error"]
    finally:
        consumer.close()


def test_confluent_consumer_reconnects_after_its_fetch_connection_is_dropped(faulty):
    from confluent_kafka import Consumer, Producer
    topic = topic_with(faulty, records=2)
    consumer = Consumer({"bootstrap.servers": faulty.bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
                         "reconnect.backoff.ms": 50})
    try:
        consumer.subscribe([topic])
        values = [wait_for(lambda: consumer.poll(0.5), what="record").value()]

        def pump():   # poll, keeping what comes
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                values.append(message.value())
        rule = faulty.arm("drop_connection", api="Fetch", count=1)
        wait_for(lambda: pump() or faulty.fired(rule["id"]) is None, what="a fetch dropped")
        producer = Producer({"bootstrap.servers": faulty.bootstrap})
        for value in (b"after-1", b"after-2"):
            producer.produce(topic, value)
        assert producer.flush(30) == 0
        wait_for(lambda: pump() or len(values) >= 4, what="the records after the drop")
        assert values == [b"v0", b"v1", b"after-1", b"after-2"]
    finally:
        consumer.close()


def test_consumer_protocol_member_rides_out_a_coordinator_refusing(faulty):
    """KIP-848: ConsumerGroupHeartbeat answered NOT_COORDINATOR for a while; librdkafka looks
    the coordinator up again, keeps its partitions and goes on consuming."""
    from confluent_kafka import Consumer, Producer
    topic = topic_with(faulty, records=1)
    group = f"g-{uuid.uuid4().hex[:8]}"
    lost = []
    consumer = Consumer({"bootstrap.servers": faulty.bootstrap, "group.id": group,
                         "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic], on_lost=lambda c, ps: lost.append(ps))
        wait_for(lambda: consumer.poll(0.5), what="record")
        lookups = faulty.arm("delay", api="FindCoordinator", ms=0, count=None)
        # long enough for a heartbeat (the broker's interval is 5 s) to meet it
        rule = faulty.arm("refuse_coordinator", seconds=6, error="NOT_COORDINATOR",
                          group_id=group)
        fired = []
        wait_for(lambda: consumer.poll(0.1) is None
                 and fired.append(faulty.fired(rule["id"])) is None and fired[-1] is None,
                 what="the window to pass")
        assert max(f for f in fired if f is not None) >= 1, "no heartbeat was refused"
        assert faulty.fired(lookups["id"]), "no coordinator lookup"
        producer = Producer({"bootstrap.servers": faulty.bootstrap})
        producer.produce(topic, b"after")
        assert producer.flush(30) == 0
        message = wait_for(lambda: consumer.poll(0.2), what="the record after the window")
        assert message.value() == b"after" and lost == []
    finally:
        consumer.close()
