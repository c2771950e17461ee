#!/usr/bin/env python3
"""Share groups (KIP-932): how fast a share group drains one partition, beside one consumer-group
member on the same partition in the same run, on roster and on Apache Kafka 4.4, with ratios.
The brokers are bench/versus_kafka.py's (`roster`, and `kafka`: KRaft, one node, -Xmx1g
-XX:+UseSerialGC, tests/support/kafka_peer's settings), each pinned to one core, this load
generator on the other; rounds interleave the brokers (the order reversed each round) and the
table gives medians.

Per broker and round, on a fresh broker with a topic of one partition:
  share     --consumers confluent-kafka ShareConsumers (implicit acknowledgement: a poll
            accepts what the previous one returned) in one share group, each on its own thread;
  consumer  one confluent-kafka Consumer (KIP-848, group.protocol=consumer) in a fresh group.
Each first takes warm-up records (one every 50 ms) until every consumer delivered one: they
joined, were assigned the partition and are fetching (a share group assigns on its 5 s
heartbeat, which is not counted). Then --records records of --size bytes are produced and
timed from the first produced to the last delivered: records/s, and records per broker
CPU-second over the same window (producing them is in both, the same for both). A share group
acquires, acknowledges and persists the state of every record, which a consumer group's fetch
does not; the "share / consumer" rows say what that costs on each broker.

    .venv/bin/python bench/share_groups.py
    .venv/bin/python bench/share_groups.py --records 100000 --rounds 3

Prints a Markdown table; progress on stderr.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import coordinator as kit  # noqa: E402  (Snapshot, cpu_between, progress)
import versus_kafka  # noqa: E402  (the brokers)
from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition  # noqa: E402

from tests.support.share_judges import set_group_configs  # noqa: E402

TOPIC = "share-bench"


def produce(broker, records: int, size: int, tag: str) -> None:
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 5,
                         "batch.size": 1 << 20, "compression.type": "none", "log_level": 3})
    value = tag.encode().ljust(size, b"x")
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, value=value, key=str(i).encode(), partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0


def end_offset(broker) -> int:
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "share-bench-probe",
                         "log_level": 3})
    try:
        return consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)[1]
    finally:
        consumer.close()


class Window:
    """The measured records (offsets from `start` on), from the moment they are produced until
    the last is delivered: the wall clock and the broker's CPU; who delivered what before."""

    def __init__(self, broker, wanted: int) -> None:
        self.broker, self.wanted = broker, wanted
        self.lock = threading.Lock()
        self.start: int | None = None      # set when the measured records are produced
        self.seen: set[int] = set()
        self.deliveries = 0
        self.warm: set[str] = set()        # the consumers that delivered a warm-up record
        self.first: kit.Snapshot | None = None
        self.last: kit.Snapshot | None = None
        self.done = threading.Event()

    def begin(self, start: int) -> None:
        with self.lock:
            self.first = kit.Snapshot.take(self.broker)
            self.start = start

    def delivered(self, who: str, offsets: list[int]) -> None:
        with self.lock:
            if self.done.is_set() or not offsets:
                return
            if self.start is None:
                self.warm.add(who)
                return
            measured = [o for o in offsets if o >= self.start]
            self.deliveries += len(measured)
            self.seen.update(measured)
            if len(self.seen) >= self.wanted:
                self.last = kit.Snapshot.take(self.broker)
                self.done.set()

    def result(self) -> dict:
        usage = kit.cpu_between(self.first, self.last)
        return {"per_s": self.wanted / usage["wall_s"],
                "per_broker_cpu_s": self.wanted / usage["broker_cpu_s"]
                if usage["broker_cpu_s"] else None,
                "wall_s": usage["wall_s"], "redelivered": self.deliveries - self.wanted,
                "other_cpus": usage.get("other_cpus")}


def measure(broker, args, window: Window, members: int, what: str) -> dict:
    """Warm-up records, one every 50 ms, until each of `members` consumers delivered one (they
    joined, were assigned the partition and opened their sessions); then the measured ones."""
    give_up = time.monotonic() + args.timeout
    while len(window.warm) < members:
        if time.monotonic() > give_up:
            raise RuntimeError(f"{broker.kind}: only {len(window.warm)} of {members} {what} "
                               f"took a record in {args.timeout} s")
        produce(broker, 1, args.size, "warm")
        time.sleep(0.05)   # paced warm-up; the measurement starts after it
    window.begin(end_offset(broker))
    produce(broker, args.records, args.size, "measured")
    if not window.done.wait(args.timeout):
        raise RuntimeError(f"{broker.kind}: {what} delivered {len(window.seen)} of "
                           f"{args.records} in {args.timeout} s")
    return window.result()


def phase_share(broker, args) -> dict:
    group = f"share-bench-{time.monotonic_ns()}"
    set_group_configs(broker.address, group, {"share.auto.offset.reset": "latest"})
    window = Window(broker, args.records)
    errors: list[str] = []
    stop = threading.Event()

    def member(name: str) -> None:
        consumer = ShareConsumer({"bootstrap.servers": broker.address, "group.id": group,
                                  "client.id": name, "log_level": 3})
        try:
            consumer.subscribe([TOPIC])
            while not stop.is_set():
                offsets = []
                for message in consumer.poll(0.1):
                    if message.error() is None:
                        offsets.append(message.offset())
                    else:
                        errors.append(str(message.error()))
                window.delivered(name, offsets)
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(f"share-{i}",), daemon=True)
               for i in range(args.consumers)]
    for t in threads:
        t.start()
    try:
        return measure(broker, args, window, args.consumers, "share consumers")
    finally:
        stop.set()
        for t in threads:
            t.join(60)
        if errors:
            kit.progress(f"{broker.kind}: share consumer errors {errors[:3]}")


def phase_consumer(broker, args) -> dict:
    window = Window(broker, args.records)
    stop = threading.Event()

    def member() -> None:
        consumer = Consumer({"bootstrap.servers": broker.address,
                             "group.id": f"consumer-bench-{time.monotonic_ns()}",
                             "group.protocol": "consumer", "auto.offset.reset": "latest",
                             "enable.auto.commit": True, "log_level": 3})
        try:
            consumer.subscribe([TOPIC])
            while not stop.is_set():
                window.delivered("consumer", [m.offset() for m in consumer.consume(1000, 0.1)
                                              if m.error() is None])
        finally:
            consumer.close()

    thread = threading.Thread(target=member, daemon=True)
    thread.start()
    try:
        return measure(broker, args, window, 1, "the consumer")
    finally:
        stop.set()
        thread.join(60)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", default="roster,kafka")
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--size", type=int, default=100, help="value bytes")
    p.add_argument("--consumers", type=int, default=4, help="share consumers")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--timeout", type=float, default=300.0)
    args = p.parse_args(argv)
    args.brokers = args.brokers.split(",")
    return args


def run(args) -> int:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        versus_kafka.BROKER_CPUS = {cpus[0]}
        os.sched_setaffinity(0, {cpus[1]})
    results: dict[str, dict[str, list[dict]]] = {
        k: {"share": [], "consumer": []} for k in args.brokers}
    loads = [versus_kafka.loadavg()]
    with tempfile.TemporaryDirectory(prefix="share-bench-") as work:
        brokers = versus_kafka.Brokers(Path(work))
        try:
            for n in range(args.rounds):
                for kind in versus_kafka.order(args.brokers, n):
                    broker = brokers.start(kind, "share-groups")
                    try:
                        versus_kafka.make_topics(broker, {TOPIC: 1})
                        for phase, run_phase in (("share", phase_share),
                                                 ("consumer", phase_consumer)):
                            got = run_phase(broker, args)
                            results[kind][phase].append(got)
                            kit.progress(
                                f"{kind} {phase}: {got['per_s']:,.0f} records/s, "
                                f"{got['per_broker_cpu_s'] or 0:,.0f} per broker CPU-s "
                                f"({got['wall_s']:.2f} s, {got['redelivered']} redelivered, "
                                f"rest of the machine {got['other_cpus'] or 0:.2f} CPUs)")
                    finally:
                        brokers.stop(broker)
        finally:
            brokers.stop_all()
    loads.append(versus_kafka.loadavg())

    def median(kind: str, phase: str, key: str) -> float | None:
        values = [r[key] for r in results[kind][phase] if r[key]]
        return statistics.median(values) if values else None

    print("| measure | " + " | ".join(args.brokers) + " | roster / kafka |")
    print("|---|" + "---:|" * (len(args.brokers) + 1))
    rows = []
    for key, unit in (("per_s", "records/s"), ("per_broker_cpu_s", "records per broker CPU-s")):
        rows.append((f"share group, {args.consumers} consumers, 1 partition: {unit}",
                     {k: median(k, "share", key) for k in args.brokers}, "{:,.0f}"))
        rows.append((f"one consumer-group member, same partition: {unit}",
                     {k: median(k, "consumer", key) for k in args.brokers}, "{:,.0f}"))
        rows.append((f"share / consumer ({unit})",
                     {k: (median(k, "share", key) or 0) / median(k, "consumer", key)
                      if median(k, "consumer", key) else None for k in args.brokers}, "{:.2f}"))
    for label, values, form in rows:
        cells = [form.format(values[k]) if values[k] is not None else "-" for k in args.brokers]
        ratio = ""
        if values.get("roster") and values.get("kafka"):
            ratio = f"**{values['roster'] / values['kafka']:.2f}**"
        print(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
    print(f"\n{args.records:,} records of {args.size} bytes; medians of {args.rounds} round(s); "
          f"load average {loads[0]:.1f} before, {loads[1]:.1f} after ({os.cpu_count()} CPUs); "
          f"broker CPU {sorted(versus_kafka.BROKER_CPUS or [])}, load generator on the other")
    return 0


def main(argv=None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
