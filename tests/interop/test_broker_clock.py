"""The broker clock with real clients: each consumer holds its partitions with a 45 s session
(the clients' default, heartbeats every 500 ms), `broker.clock.advance(46)` expires it on the
broker at once, and the client's own machinery notices on its next heartbeat: its rebalance
callback hears the partitions lost (or revoked), it joins again and is assigned again, all in
about a heartbeat instead of 45 s. So do a transaction's timeout and an empty group's
offsets' retention. The clock over HTTP (POST /clock/advance) and `roster clock advance`; and
the refusals: outside test mode, bad numbers of seconds.

One in-process test-mode broker for the module (roster.testing.RosterBroker: the pytest
plugin's broker)."""
from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
import uuid

import pytest

from roster.broker.clock import ClockRefused
from roster.testing import RosterBroker

pytestmark = pytest.mark.interop

SESSION_MS = 45_000
HEARTBEAT_MS = 500
WAIT_S = 40            # for what takes a heartbeat or a join: only a broken path takes this long
# a jump past the session, and well below it: what a test sees "quickly" without the clock
PAST_SESSION_S = SESSION_MS / 1000 + 1


@pytest.fixture(scope="module")
def test_broker(tmp_path_factory):
    with RosterBroker(tmp_path_factory.mktemp("clock") / "data", http=True) as broker:
        yield broker


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Story:
    """What a client's rebalance callbacks said, in order, with a way to wait for a line."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, tuple]] = []
        self._changed = threading.Condition()

    def tell(self, what: str, partitions) -> None:
        with self._changed:
            self.lines.append((what, tuple(sorted(partitions))))
            self._changed.notify_all()

    def kinds(self) -> list[str]:
        return [what for what, _ in self.lines]

    def count(self, what: str) -> int:
        return self.kinds().count(what)


def wait_for(predicate, pump=None, timeout_s: float = WAIT_S, what: str = "") -> float:
    """Poll `pump()` (a client's poll) until `predicate()`; the seconds it took."""
    began = time.monotonic()
    while not predicate():
        if time.monotonic() - began > timeout_s:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        if pump is not None:
            pump()
        else:
            time.sleep(0.02)
    return time.monotonic() - began


def assert_session_expired_on_advance(story: Story, broker: RosterBroker, pump) -> float:
    """Assigned once; advance past the session; the client hears it lost (or revoked) and is
    assigned again. Returns how long the client took to notice."""
    wait_for(lambda: story.count("assigned") >= 1 and story.lines[-1][1], pump,
             what="first assignment")
    first = story.lines[-1][1]
    assigned_before = story.count("assigned")
    broker.clock.advance(PAST_SESSION_S)
    took = wait_for(lambda: story.count("assigned") > assigned_before
                    and story.lines[-1][0] == "assigned" and story.lines[-1][1], pump,
                    what=f"lost and assigned again; heard {story.lines}")
    after = story.lines[story.kinds().index("assigned") + 1:]
    assert any(what in ("lost", "revoked") and partitions == first
               for what, partitions in after), story.lines
    assert story.lines[-1] == ("assigned", first)
    # a heartbeat and a join, not the session's 45 s (the clock's whole point)
    assert took < SESSION_MS / 1000 - 10, took
    return took


async def assert_session_expired_on_advance_async(story: Story, broker: RosterBroker, pump,
                                                  lost: str) -> None:
    """assert_session_expired_on_advance for an asyncio client (`pump` awaits one poll): the
    clock is advanced from another thread, so the client's loop keeps running; `lost` is what
    the client reports the expired assignment as."""
    async def pump_until(predicate, what):
        began = time.monotonic()
        while not predicate():
            assert time.monotonic() - began < WAIT_S, what
            await pump()
        return time.monotonic() - began
    await pump_until(lambda: story.count("assigned") >= 1 and story.lines[-1][1],
                     "first assignment")
    first = story.lines[-1][1]
    assigned = story.count("assigned")
    # advance() blocks until the broker's loop (another thread) has fired the timers
    await asyncio.to_thread(broker.clock.advance, PAST_SESSION_S)
    took = await pump_until(lambda: story.count("assigned") > assigned
                            and story.lines[-1] == ("assigned", first),
                            f"{lost} and assigned again: {story.lines}")
    assert (lost, first) in story.lines, story.lines
    assert took < SESSION_MS / 1000 - 10


def test_confluent_kafka_classic_member_expires_on_advance(test_broker):
    from confluent_kafka import Consumer
    topic = test_broker.create_topic(fresh("clock-ck"), partitions=2)
    story = Story()
    consumer = Consumer({**test_broker.bootstrap.confluent, "group.id": fresh("g"),
                         "session.timeout.ms": SESSION_MS,
                         "heartbeat.interval.ms": HEARTBEAT_MS})
    consumer.subscribe(
        [topic],
        on_assign=lambda c, ps: story.tell("assigned", [(p.topic, p.partition) for p in ps]),
        on_revoke=lambda c, ps: story.tell("revoked", [(p.topic, p.partition) for p in ps]),
        on_lost=lambda c, ps: story.tell("lost", [(p.topic, p.partition) for p in ps]))
    try:
        assert_session_expired_on_advance(story, test_broker, lambda: consumer.poll(0.1))
        assert "lost" in story.kinds()   # librdkafka tells a lost assignment apart
    finally:
        consumer.close()


def test_confluent_kafka_consumer_protocol_member_expires_on_advance(test_broker):
    """KIP-848: the member's session on the consumer group coordinator (45 s by default)."""
    from confluent_kafka import Consumer
    topic = test_broker.create_topic(fresh("clock-848"), partitions=2)
    story = Story()
    consumer = Consumer({**test_broker.bootstrap.confluent, "group.id": fresh("g"),
                         "group.protocol": "consumer"})
    consumer.subscribe(
        [topic],
        on_assign=lambda c, ps: story.tell("assigned", [(p.topic, p.partition) for p in ps]),
        on_revoke=lambda c, ps: story.tell("revoked", [(p.topic, p.partition) for p in ps]),
        on_lost=lambda c, ps: story.tell("lost", [(p.topic, p.partition) for p in ps]))
    try:
        wait_for(lambda: story.count("assigned") >= 1 and story.lines[-1][1],
                 lambda: consumer.poll(0.1), what="first assignment")
        first = story.lines[-1][1]
        before = len(story.lines)
        test_broker.clock.advance(PAST_SESSION_S)
        # the broker's heartbeat interval (5 s) paces the client's next heartbeat
        wait_for(lambda: story.lines[before:] and story.lines[-1] == ("assigned", first)
                 and "lost" in story.kinds()[before:], lambda: consumer.poll(0.1),
                 what=f"lost and assigned again; heard {story.lines}")
    finally:
        consumer.close()


def test_kafka_python_member_expires_on_advance(test_broker):
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    topic = test_broker.create_topic(fresh("clock-kp"), partitions=2)
    story = Story()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            story.tell("revoked", [(p.topic, p.partition) for p in revoked])

        def on_partitions_assigned(self, assigned):
            story.tell("assigned", [(p.topic, p.partition) for p in assigned])

        def on_partitions_lost(self, lost):
            story.tell("lost", [(p.topic, p.partition) for p in lost])

    consumer = KafkaConsumer(bootstrap_servers=test_broker.bootstrap.servers,
                             group_id=fresh("g"), session_timeout_ms=SESSION_MS,
                             heartbeat_interval_ms=HEARTBEAT_MS,
                             request_timeout_ms=SESSION_MS + 5000)
    consumer.subscribe([topic], listener=Listener())
    # metadata before the first join, or a loaded machine can leave kafka-python 3.0.12 with
    # a finished rejoin it never completes (see tests/support/groups.py, KafkaPythonMember)
    consumer.topics()
    try:
        assert_session_expired_on_advance(story, test_broker, lambda: consumer.poll(100))
    finally:
        consumer.close()


def test_aiokafka_member_expires_on_advance(test_broker):
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    topic = test_broker.create_topic(fresh("clock-aio"), partitions=2)
    story = Story()

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            story.tell("revoked", [(p.topic, p.partition) for p in revoked])

        async def on_partitions_assigned(self, assigned):
            story.tell("assigned", [(p.topic, p.partition) for p in assigned])

    async def scenario():
        consumer = AIOKafkaConsumer(bootstrap_servers=str(test_broker.bootstrap),
                                    group_id=fresh("g"), session_timeout_ms=SESSION_MS,
                                    heartbeat_interval_ms=HEARTBEAT_MS)
        consumer.subscribe([topic], listener=Listener())
        await consumer.start()
        try:
            # aiokafka reports a lost assignment as revoked
            await assert_session_expired_on_advance_async(
                story, test_broker, lambda: consumer.getmany(timeout_ms=100), "revoked")
        finally:
            await consumer.stop()
    asyncio.run(scenario())


def test_roster_client_member_expires_on_advance(test_broker):
    from roster.client.consumer import Consumer
    topic = test_broker.create_topic(fresh("clock-rc"), partitions=2)
    story = Story()

    async def scenario():
        consumer = Consumer(str(test_broker.bootstrap), fresh("g"),
                            session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                            on_assigned=lambda ps: story.tell("assigned", ps),
                            on_revoked=lambda ps: story.tell("revoked", ps),
                            on_lost=lambda ps: story.tell("lost", ps))
        await consumer.subscribe([topic])
        try:
            await assert_session_expired_on_advance_async(
                story, test_broker, lambda: consumer.poll(timeout_ms=100), "lost")
        finally:
            await consumer.close()
    asyncio.run(scenario())


def test_a_transaction_times_out_on_advance(test_broker):
    """confluent-kafka's transactional producer: its open transaction is aborted by the
    coordinator when the clock passes transaction.timeout.ms, so its commit fails, and a
    read_committed consumer never sees the records."""
    from confluent_kafka import Consumer, KafkaException, Producer
    topic = test_broker.create_topic(fresh("clock-txn"))
    producer = Producer({**test_broker.bootstrap.confluent, "transactional.id": fresh("tx"),
                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"never committed")
    producer.flush(30)
    test_broker.clock.advance(61)
    with pytest.raises(KafkaException) as failed:
        producer.commit_transaction(30)
    error = failed.value.args[0]
    assert error.txn_requires_abort() or error.fatal(), error   # fenced by the bump, or abort
    consumer = Consumer({**test_broker.bootstrap.confluent, "group.id": fresh("g"),
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "enable.partition.eof": True})
    consumer.subscribe([topic])
    try:
        while True:
            message = consumer.poll(1)
            if message is None:
                continue
            assert message.error() is not None, message.value()   # no record: only the EOF
            break
    finally:
        consumer.close()


def test_an_empty_groups_offsets_expire_on_advance(test_broker):
    """offsets.retention.minutes (7 days) after the group became empty, its committed offsets
    are gone: the expiry pass runs at once after the jump."""
    from confluent_kafka import Consumer, TopicPartition
    topic = test_broker.create_topic(fresh("clock-expiry"))
    group = fresh("g")
    config = {**test_broker.bootstrap.confluent, "group.id": group,
              "enable.auto.commit": False}
    committer = Consumer(config)
    committer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    committer.close()
    reader = Consumer(config)
    try:
        assert reader.committed([TopicPartition(topic, 0)], 30)[0].offset == 5
        test_broker.clock.advance(6 * 24 * 3600)        # a day short: kept
        assert reader.committed([TopicPartition(topic, 0)], 30)[0].offset == 5
        test_broker.clock.advance(24 * 3600 + 60)       # past 7 days: gone
        assert reader.committed([TopicPartition(topic, 0)], 30)[0].offset < 0
    finally:
        reader.close()


# -- the clock over HTTP and the command line ----------------------------------------------

def post(url: str, body: bytes, timeout_s: float = 30) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def test_advance_over_http_expires_a_session(test_broker):
    from confluent_kafka import Consumer
    topic = test_broker.create_topic(fresh("clock-http"))
    story = Story()
    consumer = Consumer({**test_broker.bootstrap.confluent, "group.id": fresh("g"),
                         "session.timeout.ms": SESSION_MS,
                         "heartbeat.interval.ms": HEARTBEAT_MS})
    consumer.subscribe(
        [topic],
        on_assign=lambda c, ps: story.tell("assigned", [(p.topic, p.partition) for p in ps]),
        on_lost=lambda c, ps: story.tell("lost", [(p.topic, p.partition) for p in ps]))
    try:
        wait_for(lambda: story.count("assigned") >= 1, lambda: consumer.poll(0.1))
        before = test_broker.clock.advanced
        status, answer = post(test_broker.http_url + "clock/advance",
                              json.dumps({"seconds": PAST_SESSION_S}).encode())
        assert status == 200, answer
        assert answer["advanced_s"] == PAST_SESSION_S
        assert answer["total_advanced_s"] == before + PAST_SESSION_S
        wait_for(lambda: "lost" in story.kinds() and story.lines[-1][0] == "assigned",
                 lambda: consumer.poll(0.1), what=f"lost, assigned again: {story.lines}")
    finally:
        consumer.close()


@pytest.mark.parametrize("body, query, why", [
    (b'{"seconds": -1}', "", "never goes back"),
    (b'{"seconds": "soon"}', "", "number of seconds"),
    (b"forty-five", "", "not JSON"),
    (b'{"minutes": 1}', "", '"seconds"'),
    (b"", "", "say how far"),
    (b"", "?seconds=x", "not a number"),
])
def test_advance_over_http_refuses_bad_arguments(test_broker, body, query, why):
    before = test_broker.clock.advanced
    status, answer = post(test_broker.http_url + "clock/advance" + query, body)
    assert status == 400 and why in answer["error"], answer
    assert test_broker.clock.advanced == before


def test_http_route_by_query_and_get(test_broker):
    before = test_broker.clock.advanced
    status, answer = post(test_broker.http_url + "clock/advance?seconds=1.5", b"")
    assert status == 200 and answer["total_advanced_s"] == before + 1.5
    with urllib.request.urlopen(test_broker.http_url + "clock", timeout=30) as reply:
        shown = json.loads(reply.read())
    assert shown["test_mode"] is True and shown["total_advanced_s"] == before + 1.5


def test_roster_clock_advance_command(test_broker, capsys):
    from roster.cli import main
    before = test_broker.clock.advanced
    assert main(["clock", "advance", "30", "--http", test_broker.http_url]) == 0
    assert "advanced 30 s" in capsys.readouterr().out
    assert test_broker.clock.advanced == before + 30
    assert main(["clock", "advance", "-5", "--http", test_broker.http_url]) == 1
    assert "never goes back" in capsys.readouterr().err
    assert main(["clock", "show", "--http", test_broker.http_url]) == 0
    assert f"advanced {before + 30:g} s in all" in capsys.readouterr().out


def test_outside_test_mode_the_clock_is_refused_everywhere(tmp_path, capsys):
    from roster.cli import main
    with RosterBroker(tmp_path / "data", {"roster.test.mode": "false"}, http=True) as plain:
        with pytest.raises(ClockRefused, match="only in test mode"):
            plain.clock   # noqa: B018
        status, answer = post(plain.http_url + "clock/advance", b'{"seconds": 60}')
        assert status == 403 and "only in test mode" in answer["error"]
        assert main(["clock", "advance", "60", "--http", plain.http_url]) == 1
        assert "only in test mode" in capsys.readouterr().err
        # and the wall clock it runs on did not move
        assert abs(plain.broker.now_ms() - time.time() * 1000) < 5_000


def test_the_command_says_when_nothing_listens(capsys):
    from roster.cli import main
    from tests.support.ports import free_port
    assert main(["clock", "advance", "1", "--http", f"http://127.0.0.1:{free_port()}"]) == 1
    assert "cannot reach" in capsys.readouterr().err


def test_share_records_are_redelivered_when_their_locks_expire_on_advance(test_broker):
    """A share consumer holds records under their acquisition locks (30 s by default) and
    never acknowledges them; advance(31) expires the locks on the broker (share state's
    timers follow the clock): another member of the share group gets them, delivery count 2."""
    from roster.client.producer import Producer
    from roster.client.share_consumer import ShareConsumer
    topic = test_broker.create_topic(fresh("clock-share"))
    group = fresh("share")

    async def scenario():
        holder = ShareConsumer(str(test_broker.bootstrap), group)
        await holder.subscribe([topic])
        await holder.member.wait_assigned(WAIT_S)
        producer = Producer(str(test_broker.bootstrap))
        for i in range(3):
            await producer.send(topic, b"job-%d" % i, partition=0)
        await producer.close()
        held = []
        began = time.monotonic()
        while len(held) < 3:
            assert time.monotonic() - began < WAIT_S, held
            held += await holder.poll(0.2)
        assert {r.delivery_count for r in held} == {1}
        other = ShareConsumer(str(test_broker.bootstrap), group)
        await other.subscribe([topic])
        await other.member.wait_assigned(WAIT_S)
        assert await other.poll(0.5) == []                  # all three are locked by holder
        await asyncio.to_thread(test_broker.clock.advance, 31)
        redelivered = []
        began = time.monotonic()
        while len(redelivered) < 3:
            assert time.monotonic() - began < 20, redelivered   # not another 30 s
            redelivered += await other.poll(0.2)
        assert sorted(r.offset for r in redelivered) == [0, 1, 2]
        assert {r.delivery_count for r in redelivered} == {2}
        await other.close()
        await holder.close()
    asyncio.run(scenario())


def test_the_clock_route_asks_for_credentials_when_a_listener_uses_sasl(tmp_path, capsys):
    """`roster serve` in test mode with SASL listeners (all on loopback): the clock's route is
    as authenticated as the console, HTTP Basic of a SCRAM user; roster clock takes --user."""
    import base64

    from roster.cli import main
    from tests.support.security import PASSWORDS, secure_broker_with_console
    broker, url = secure_broker_with_console(tmp_path, **{"roster.test.mode": "true"})
    try:
        def advance(user=None, password=None):
            request = urllib.request.Request(url + "clock/advance", method="POST",
                                             data=b'{"seconds": 5}')
            if user is not None:
                token = base64.b64encode(f"{user}:{password}".encode()).decode()
                request.add_header("Authorization", f"Basic {token}")
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    return answer.status, json.loads(answer.read())
            except urllib.error.HTTPError as refused:
                return refused.code, refused.read().decode()
        assert advance()[0] == 401
        assert advance("alice", "wrong")[0] == 401
        status, answer = advance("alice", PASSWORDS["alice"])
        assert status == 200 and answer["total_advanced_s"] == 5
        assert main(["clock", "advance", "5", "--http", url]) == 1
        assert "HTTP 401" in capsys.readouterr().err
        assert main(["clock", "advance", "5", "--http", url, "--user", "bob",
                     "--password-file", str(tmp_path / "bob.password")]) == 0
        assert "(10 s in all)" in capsys.readouterr().out
    finally:
        broker.stop()


def test_a_test_broker_on_a_non_loopback_listener_is_refused(tmp_path):
    """The in-process broker takes test mode's check as `roster serve` does: bound to every
    interface without authentication, it does not start (and touches no data)."""
    import logging

    from roster.config import ConfigError
    handlers = list(logging.getLogger("roster").handlers)
    with pytest.raises(ConfigError, match="roster.test.mode=true refused.*not a loopback"):
        RosterBroker(tmp_path / "data", host="0.0.0.0").start()
    assert not any((tmp_path / "data").glob("*/*.log"))
    assert logging.getLogger("roster").handlers == handlers   # its log handler went with it
