"""Exactly once through kill -9: a consume-transform-produce loop (confluent-kafka, a static
member, send_offsets_to_transaction; tests/support/eos_loop_worker.py) is SIGKILLed at random
points (seeded: after a chosen step of a chosen transaction) again and again, then run to the
end. The output holds every input record exactly once (read_committed), and the group's
committed offsets are the input's end.

ROSTER_KILLED_LOOP_KILLS sets the number of kills (20 in make test; more for a soak run)."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support.process import BrokerProcess
from tests.support.read_to_end import values_to_end
from tests.support.transactions import create_topics, fetch_offsets

pytestmark = pytest.mark.interop

KILLS = int(os.environ.get("ROSTER_KILLED_LOOP_KILLS", "20"))
RECORDS = max(300, 25 * KILLS)   # a kill comes within 3 transactions of 7: input to spare
PARTITIONS = 2
STEPS = ("ready", "begin", "produced", "offsets", "committed")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("killed-loops"), {
        "transaction.state.log.num.partitions": "3", "group.initial.rebalance.delay.ms": "0",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}).start()
    yield process
    process.stop()


def start_worker(bootstrap: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.eos_loop_worker", bootstrap, "loop-in",
         "loop-out", "loop", str(RECORDS)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
        start_new_session=True)


def kill_at(worker: subprocess.Popen, step: str, occurrence: int) -> str:
    """SIGKILL the worker once it has printed `step` `occurrence` times (or at 'done', which
    it may reach first). Returns the step it was killed after."""
    try:
        return _kill_at(worker, step, occurrence)
    finally:
        if worker.poll() is None:       # the test failed while it ran: leave nothing behind
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(30)


def _kill_at(worker: subprocess.Popen, step: str, occurrence: int) -> str:
    seen = 0
    for line in worker.stdout:
        line = line.strip()
        if line == "done":
            worker.wait(30)
            return "done"
        if line == step:
            seen += 1
            if seen == occurrence:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait(30)
                worker.stdout.close()
                return step
    raise AssertionError(f"the worker exited with {worker.wait(30)} before {step}")


def test_a_killed_consume_transform_produce_loop_outputs_every_record_exactly_once(broker):
    create_topics(broker.bootstrap, "loop-in", "loop-out", partitions=PARTITIONS)
    source = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(RECORDS):
        source.produce("loop-in", key=b"%d" % i, value=b"record-%d" % i)
    source.flush(30)
    chance = random.Random(26)
    kills = []
    deadline = time.monotonic() + 50 + 5 * KILLS
    while len([k for k in kills if k != "done"]) < KILLS:
        assert time.monotonic() < deadline, f"killed after {kills}"
        step = chance.choice(STEPS)
        occurrence = 1 if step == "ready" else chance.randint(1, 3)
        try:
            killed_after = kill_at(start_worker(broker.bootstrap), step, occurrence)
        except AssertionError:
            print("\n".join(broker.output[-80:]))
            raise
        kills.append(killed_after)
        assert killed_after != "done", \
            f"the input ran out after {len(kills) - 1} kills: give the loop more records"
    final = start_worker(broker.bootstrap)
    try:
        assert kill_at(final, "never", 1) == "done"      # runs to the end
    except AssertionError:
        print("\n".join(broker.output[-40:]))
        print("offsets, require_stable:", fetch_offsets(broker.bootstrap, "loop", "loop-in",
                                                        range(PARTITIONS), require_stable=True),
              "not:", fetch_offsets(broker.bootstrap, "loop", "loop-in", range(PARTITIONS)))
        raise

    output = values_to_end(broker.bootstrap, "loop-out", "read_committed", PARTITIONS)
    counts = Counter(output)
    assert [v for v, n in counts.items() if n > 1] == []
    assert set(counts) == {b"RECORD-%d" % i for i in range(RECORDS)}
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "loop"})
    try:
        committed = consumer.committed([TopicPartition("loop-in", p)
                                        for p in range(PARTITIONS)], 10)
        ends = [consumer.get_watermark_offsets(TopicPartition("loop-in", p), 10)[1]
                for p in range(PARTITIONS)]
    finally:
        consumer.close()
    assert [tp.offset for tp in committed] == ends
    assert sum(ends) == RECORDS
    if KILLS >= 10:
        assert len(set(kills)) > 3, f"kills landed after too few distinct steps: {kills}"
