"""Kafka Streams with `processing.guarantee=exactly_once_v2` against roster, and the same against
Apache Kafka 4.4: the word-count application of test_streams_counts (tests/java CountsApp: a
repartition topic, a persistent RocksDB store with a compacted changelog) as three static
instances, killed with kill -9 and restarted at seeded random points while input flows.

Streams EOS writes each task's output, changelog and repartition records and its consumed
offsets in one transaction (TV2 with the 4.4 client), fences the killed instance's producer
when it comes back (InitProducerId) and restores its store from the changelog read_committed.
So a read_committed reader of the output must see, for every word, the counts 1, 2, ..., N in
order: no count twice (a double-counted record) and none skipped (a lost one), N being the
number of times the word was produced."""
from __future__ import annotations

import random
import struct
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.streams.test_streams_counts import BOTH, INSTANCES, PARTITIONS, WORDS, App
from tests.streams.test_streams_counts import app  # noqa: F401 (fixture)
from tests.support.judges import roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name

SEED = 26
RECORDS = 900
BATCH = 30
KILLS = 3
# Streams' EOS defaults (commit.interval.ms 100, which CountsApp sets anyway); a short
# transaction timeout so a transaction the killed instance left open cannot hold the LSO long
EOS = ("processing.guarantee=exactly_once_v2", "producer.transaction.timeout.ms=5000")


@pytest.fixture
def eos_app(app: App) -> App:
    app.settings = EOS
    return app


def read_committed_counts(bootstrap: str, topic: str, expected: Counter,
                          timeout_s: float = 60.0) -> dict[str, list[int]]:
    """Every count a read_committed reader sees, per word in order, read until each word's last
    count is what was produced or the deadline passes (the caller's assertion then tells)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("reader"),
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    seen: dict[str, list[int]] = {word: [] for word in expected}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(seen[w][-1:] != [n]
                                                  for w, n in expected.items()):
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            seen.setdefault(message.key().decode(), []).append(
                struct.unpack(">q", message.value())[0])
        return seen
    finally:
        consumer.close()


@BOTH
def test_exactly_once_v2_counts_are_exact_after_kill9_restarts_while_input_flows(eos_app):
    app = eos_app
    rng = random.Random(SEED)
    # the kills: after which input record, which instance, and how many records later it returns
    kill_at = sorted(rng.sample(range(BATCH, RECORDS - 3 * BATCH, BATCH), KILLS))
    plan = {at: (rng.randrange(INSTANCES), rng.choice((1, 2, 3)) * BATCH) for at in kill_at}
    restart_at: dict[int, int] = {}

    for i in range(INSTANCES):
        app.start(i)
    app.wait_balanced()

    producer = Producer({"bootstrap.servers": app.target.bootstrap, "linger.ms": 5})
    expected: Counter = Counter()
    for n in range(RECORDS):
        if n in plan:
            victim, later = plan[n]
            while victim in restart_at.values():       # that one is down already: the next
                victim = (victim + 1) % INSTANCES
            app.instances[victim].kill9()
            app.finished.append(app.instances[victim])
            restart_at[n + later] = victim
        if n in restart_at:
            app.wait_running(app.start(restart_at.pop(n)))
        word = WORDS[(n * 5) % len(WORDS)]
        expected[word] += 1
        producer.produce(app.input, key=f"user-{n}".encode(), value=word.encode())
        if n % BATCH == BATCH - 1:
            assert producer.flush(30) == 0       # input flows batch by batch while they work
    assert producer.flush(30) == 0
    for victim in restart_at.values():
        app.wait_running(app.start(victim))

    seen = read_committed_counts(app.target.bootstrap, app.output, expected)
    wrong = {w: counts for w, counts in seen.items()
             if counts != list(range(1, expected[w] + 1))}
    assert not wrong, ("a read_committed reader saw counts other than 1..N per word "
                       f"(expected N: {dict(expected)}): " +
                       "; ".join(f"{w}: {len(c)} counts, last {c[-3:]}, "
                                 f"repeated {sorted(k for k, v in Counter(c).items() if v > 1)[:5]}"
                                 for w, c in wrong.items()))
