"""Testing a confluent-kafka consumer against roster: copy this file next to your code.

`OrderCounter` stands for your application: it reads a topic in a consumer group, counts what
it read, commits after every batch (synchronously), retries a commit the coordinator refused,
and drops what it had not committed when its partitions are lost. The tests check that code
where it usually goes wrong, in seconds:

- a commit refused by the coordinator (an injected fault: the group's next OffsetCommit is
  answered REBALANCE_IN_PROGRESS, which librdkafka hands to the caller) is retried, and the
  offsets end up committed;
- the member's session expires (a clock jump of 46 s, where waiting would take 45 s): the
  rebalance callback hears the partitions lost, the consumer joins again, nothing is skipped.

Needs `pip install roster confluent-kafka`; the fixtures come from roster's pytest plugin
(docs/testing.md). Run: pytest examples/testing/test_confluent_kafka_consumer.py
"""
from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

SESSION_TIMEOUT_MS = 45_000    # the client's default, written out: the jump below passes it


class OrderCounter:
    """The application under test."""

    def __init__(self, config: dict, topic: str) -> None:
        self.consumer = Consumer({**config, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest",
                                  "session.timeout.ms": SESSION_TIMEOUT_MS,
                                  "heartbeat.interval.ms": 500})
        self.seen: list[bytes] = []
        self.events: list[str] = []          # what the rebalance callbacks heard
        self.commit_retries = 0
        self.consumer.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked,
                                on_lost=self._lost)

    def _assigned(self, consumer, partitions) -> None:
        self.events.append("assigned")

    def _revoked(self, consumer, partitions) -> None:
        self.events.append("revoked")
        self.commit()                        # still ours: commit what we processed

    def _lost(self, consumer, partitions) -> None:
        self.events.append("lost")           # not ours any more: no commit; they come again

    def step(self, timeout_s: float = 0.2) -> None:
        batch = [m for m in self.consumer.consume(100, timeout_s) if m.error() is None]
        if batch:
            self.seen += [m.value() for m in batch]
            self.commit()

    def commit(self) -> None:
        for attempt in range(5):
            try:
                self.consumer.commit(asynchronous=False)
                return
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() == KafkaError._NO_OFFSET:
                    return                   # nothing consumed since the last commit
                if not error.retriable() and error.code() not in (
                        KafkaError.REBALANCE_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
                        KafkaError.NOT_COORDINATOR):
                    raise
                self.commit_retries += 1
                time.sleep(0.1 * (attempt + 1))
        raise RuntimeError("commit kept failing")

    def close(self) -> None:
        self.consumer.close()


def produce(bootstrap, topic: str, values: list[bytes]) -> None:
    producer = Producer(bootstrap.confluent)
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def run_until(app: OrderCounter, done, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"gave up; events {app.events}, seen {app.seen}"
        app.step()


def committed(bootstrap, group_id: str, topic: str) -> int:
    probe = Consumer({**bootstrap.confluent, "group.id": group_id})
    try:
        return probe.committed([TopicPartition(topic, 0)], 30)[0].offset
    finally:
        probe.close()


def test_a_refused_commit_is_retried(roster_broker, roster_bootstrap, roster_topic,
                                     roster_group_id):
    produce(roster_bootstrap, roster_topic, [b"order-%d" % i for i in range(10)])
    roster_broker.faults.fail_next_commit(roster_group_id, error="REBALANCE_IN_PROGRESS")
    app = OrderCounter({**roster_bootstrap.confluent, "group.id": roster_group_id},
                       roster_topic)
    try:
        run_until(app, lambda: len(app.seen) == 10)
    finally:
        app.close()
    assert app.commit_retries >= 1           # the fault was met, and the app retried
    assert committed(roster_bootstrap, roster_group_id, roster_topic) == 10


def test_the_session_expires_and_nothing_is_skipped(roster_broker, roster_bootstrap,
                                                    roster_topic, roster_group_id):
    produce(roster_bootstrap, roster_topic, [b"before-%d" % i for i in range(5)])
    app = OrderCounter({**roster_bootstrap.confluent, "group.id": roster_group_id},
                       roster_topic)
    try:
        run_until(app, lambda: len(app.seen) == 5)
        roster_broker.clock.advance(SESSION_TIMEOUT_MS / 1000 + 1)   # no heartbeat counts now
        run_until(app, lambda: "lost" in app.events and app.events[-1] == "assigned")
        produce(roster_bootstrap, roster_topic, [b"after-%d" % i for i in range(5)])
        run_until(app, lambda: len(set(app.seen)) == 10)
    finally:
        app.close()
    assert app.events[0] == "assigned" and "lost" in app.events
    assert committed(roster_bootstrap, roster_group_id, roster_topic) == 10
