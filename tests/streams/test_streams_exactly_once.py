"""Kafka Streams with `processing.guarantee=exactly_once_v2` against roster, and the same against
Apache Kafka 4.4: the word-count application of test_streams_counts (tests/java CountsApp: a
repartition topic, a persistent RocksDB store with a compacted changelog) as three static
instances, killed with kill -9 and restarted at seeded random points while input flows.

Streams EOS writes each task's output, changelog and repartition records and its consumed
offsets in one transaction (TV2 with the 4.4 client), fences the killed instance's producer
when it comes back (InitProducerId) and restores its store from the changelog read_committed.
So a read_committed reader of the output must see, for every word, the counts 1, 2, ..., N in
order: no count twice (a double-counted record) and none skipped (a lost one), N being the
number of times the word was produced. (The same run with processing.guarantee=at_least_once
fails: every word is counted 15-30 times too often, the work processed but not committed at each
kill being done twice.)"""
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
# A commit interval of a second (EOS's default is 100 ms) leaves each kill -9 some processed
# but uncommitted input, the window that at-least-once counts twice; a short transaction
# timeout so a transaction the killed instance left open cannot hold the LSO long.
EOS = ("processing.guarantee=exactly_once_v2", "commit.interval.ms=1000",
       "producer.transaction.timeout.ms=5000")


@pytest.fixture
def eos_app(app: App) -> App:
    app.settings = EOS
    return app


def wait_processed(app: App) -> None:
    """Until the application has committed all its input and all it wrote to its repartition
    topic (whose last offset may be a commit marker its consumer has not moved past)."""
    repartition = f"{app.name}-by-word-repartition"
    consumer = Consumer({"bootstrap.servers": app.target.bootstrap, "group.id": app.name,
                         "enable.auto.commit": False})
    try:
        def done():
            for topic, slack in ((app.input, 0), (repartition, 1)):
                wanted = [TopicPartition(topic, p) for p in range(PARTITIONS)]
                for c in consumer.committed(wanted, timeout=10):
                    if c.offset < consumer.get_watermark_offsets(c, timeout=10)[1] - slack:
                        return False
            return True
        app.instances[0].wait_for(done, "the application to commit everything", timeout_s=60)
    finally:
        consumer.close()


def read_committed_counts(bootstrap: str, topic: str) -> dict[str, list[int]]:
    """Every count a read_committed reader sees, per word in order, up to the output's end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("reader"),
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    seen: dict[str, list[int]] = {}
    try:
        partitions = [TopicPartition(topic, p, 0) for p in range(PARTITIONS)]
        ends = [consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions]
        consumer.assign(partitions)
        deadline = time.monotonic() + 30
        while any(tp.offset < end for tp, end in
                  zip(consumer.position(partitions), ends)):  # markers move positions too
            assert time.monotonic() < deadline, f"{topic} not read to {ends}"
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
    counts_exactly_through_kills(eos_app)


def counts_exactly_through_kills(app: App) -> None:
    """The three instances counting while input flows, each of KILLS kills -9 followed by a
    restart some records later; then every word's counts as a read_committed reader sees
    them must be 1..N. (Also run in the streams group protocol, test_streams_group_protocol.)"""
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

    wait_processed(app)
    seen = read_committed_counts(app.target.bootstrap, app.output)
    wrong = {w: counts for w, counts in {**{w: [] for w in expected}, **seen}.items()
             if counts != list(range(1, expected[w] + 1))}
    assert not wrong, ("a read_committed reader saw counts other than 1..N per word "
                       f"(expected N: {dict(expected)}): " +
                       "; ".join(f"{w}: {len(c)} counts, last {c[-3:]}, "
                                 f"repeated {sorted(k for k, v in Counter(c).items() if v > 1)[:5]}"
                                 for w, c in wrong.items()))
