"""Testing a kafka-python consumer against roster: copy this file next to your code.

`OrderCounter` stands for your application: it reads a topic in a consumer group, counts what
it read, commits after every batch, retries a commit the coordinator refused, and notes what
its rebalance listener hears. The tests:

- a commit refused by the coordinator (an injected fault: the group's next OffsetCommit is
  answered REBALANCE_IN_PROGRESS, which kafka-python raises as CommitFailedError) is retried
  and the offsets end up committed;
- the member's session expires (a clock jump of 46 s instead of a 45 s wait): the listener's
  on_partitions_lost runs, the consumer joins again, nothing is skipped.

Needs `pip install roster kafka-python`; fixtures from roster's pytest plugin (docs/testing.md).
"""
from __future__ import annotations

import time

from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import CommitFailedError

SESSION_TIMEOUT_MS = 45_000


class OrderCounter(ConsumerRebalanceListener):
    """The application under test (its own rebalance listener)."""

    def __init__(self, bootstrap, group_id: str, topic: str) -> None:
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap.servers, group_id=group_id,
                                      enable_auto_commit=False, auto_offset_reset="earliest",
                                      session_timeout_ms=SESSION_TIMEOUT_MS,
                                      heartbeat_interval_ms=500,
                                      request_timeout_ms=SESSION_TIMEOUT_MS + 5_000)
        self.seen: list[bytes] = []
        self.events: list[str] = []
        self.commit_retries = 0
        self.consumer.subscribe([topic], listener=self)

    def on_partitions_assigned(self, assigned) -> None:
        self.events.append("assigned")

    def on_partitions_revoked(self, revoked) -> None:
        # kafka-python 3 runs listeners on its IO thread: a blocking commit() here raises
        # ("Cannot block on net.run() from the IO thread"); this app commits after every
        # batch, so there is nothing left to commit when partitions go
        self.events.append("revoked")

    def on_partitions_lost(self, lost) -> None:
        self.events.append("lost")            # no commit: they are someone else's now

    def step(self) -> None:
        batches = self.consumer.poll(timeout_ms=200)
        records = [r for batch in batches.values() for r in batch]
        if records:
            self.seen += [r.value for r in records]
            self.commit()

    def commit(self) -> None:
        for attempt in range(5):
            try:
                self.consumer.commit()
                return
            except CommitFailedError:
                self.commit_retries += 1
                time.sleep(0.1 * (attempt + 1))
        raise RuntimeError("commit kept failing")

    def close(self) -> None:
        self.consumer.close()


def produce(bootstrap, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap.servers)
    for value in values:
        producer.send(topic, value)
    producer.flush(30)
    producer.close()


def run_until(app: OrderCounter, done, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"gave up; events {app.events}, seen {app.seen}"
        app.step()


def committed(bootstrap, group_id: str, topic: str) -> int | None:
    probe = KafkaConsumer(bootstrap_servers=bootstrap.servers, group_id=group_id)
    try:
        return probe.committed(TopicPartition(topic, 0))
    finally:
        probe.close()


def test_a_refused_commit_is_retried(roster_broker, roster_bootstrap, roster_topic,
                                     roster_group_id):
    produce(roster_bootstrap, roster_topic, [b"order-%d" % i for i in range(10)])
    roster_broker.faults.fail_next_commit(roster_group_id, error="REBALANCE_IN_PROGRESS")
    app = OrderCounter(roster_bootstrap, roster_group_id, roster_topic)
    try:
        run_until(app, lambda: len(app.seen) == 10)
    finally:
        app.close()
    assert app.commit_retries >= 1
    assert committed(roster_bootstrap, roster_group_id, roster_topic) == 10


def test_the_session_expires_and_nothing_is_skipped(roster_broker, roster_bootstrap,
                                                    roster_topic, roster_group_id):
    produce(roster_bootstrap, roster_topic, [b"before-%d" % i for i in range(5)])
    app = OrderCounter(roster_bootstrap, roster_group_id, roster_topic)
    try:
        run_until(app, lambda: len(app.seen) == 5)
        roster_broker.clock.advance(SESSION_TIMEOUT_MS / 1000 + 1)
        run_until(app, lambda: "lost" in app.events and app.events[-1] == "assigned")
        produce(roster_bootstrap, roster_topic, [b"after-%d" % i for i in range(5)])
        run_until(app, lambda: len(set(app.seen)) == 10)
    finally:
        app.close()
    assert "lost" in app.events
    assert committed(roster_bootstrap, roster_group_id, roster_topic) == 10
