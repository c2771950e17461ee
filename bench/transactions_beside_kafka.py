#!/usr/bin/env python3
"""Transactional produce beside idempotent produce, on roster and on Apache Kafka 4.4, in one run.

bench/transactions.py's measurement (its producer loop) on both brokers at once: roster as a
subprocess, Kafka as tests/support/kafka_peer's KRaft node from the resolved 4.4.0 jars.
confluent-kafka (librdkafka) sends --records records of --value-bytes to a fresh one-partition
topic, in --passes rounds that alternate broker and kind:

  * idempotent: enable.idempotence, acks=all;
  * transactional: the same in transactions of --records-per-txn records (begin, produce,
    commit: AddPartitionsToTxn, EndTxn and a marker per transaction).

For each broker: records/s by wall clock, and records per broker CPU-second (the broker
process's utime+stime from /proc/PID/stat, before and after each pass: the machine is shared,
so CPU is the fairer measure), and the ratio transactional / idempotent of both. Issue 26's
goal: a ratio >= 0.8 with transactions of 1,000 records. roster fsyncs every produce before
acks=all is answered; Kafka does not (it relies on replication), which the per-CPU figures
show rather than hide.

    .venv/bin/python bench/transactions_beside_kafka.py
    .venv/bin/python bench/transactions_beside_kafka.py --records 200000 --passes 5

Prints a Markdown table; progress on stderr. Results and the command: docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from transactions import cpu_seconds, progress  # noqa: E402  (bench/transactions.py)
from transactions import run as produce  # noqa: E402

from tests.support.kafka_peer import PEER_SETTINGS, KafkaPeer  # noqa: E402
from tests.support.process import BrokerProcess  # noqa: E402
from tests.support.transactions import create_topics  # noqa: E402

KINDS = ("idempotent", "transactional")
TXN_STATE = {"transaction.state.log.num.partitions": "3"}


def measure(name: str, broker, pid: int, args, n: int) -> dict[str, tuple[float, float]]:
    """{kind: (records/s, broker CPU seconds)} of one pass of each kind on one broker, with
    bench/transactions.py's producer loop."""
    results = {}
    for kind in KINDS:
        topic = f"bench-{kind}-{n}"
        create_topics(broker.bootstrap, topic)
        cpu = cpu_seconds(pid)
        rate = produce(broker.bootstrap, topic, args, kind == "transactional", n)
        results[kind] = (rate, cpu_seconds(pid) - cpu)
        progress(f"{name} pass {n + 1} {kind}: {rate:,.0f} records/s, broker CPU "
                 f"{results[kind][1]:.2f} s")
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--records-per-txn", type=int, default=1000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args(argv)
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-txn-") as workdir:
        roster = BrokerProcess(Path(workdir) / "roster", {**PEER_SETTINGS, **TXN_STATE}).start()
        kafka = KafkaPeer(Path(workdir) / "kafka", TXN_STATE, heap="1g")
        try:
            kafka.start()
            brokers = (("roster", roster, roster.proc.pid), ("kafka", kafka, kafka.proc.pid))
            for n, (name, broker, pid) in itertools.product(range(args.passes), brokers):
                for kind, result in measure(name, broker, pid, args, n).items():
                    runs.setdefault((name, kind), []).append(result)
        finally:
            kafka.stop()
            roster.stop()
    print(f"{args.records:,} records of {args.value_bytes} B per pass, transactions of "
          f"{args.records_per_txn:,}, confluent-kafka, acks=all; median of {args.passes} "
          "passes\n")
    print("| broker | kind | records/s | records per broker CPU-s | txn / idempotent "
          "(records/s) | txn / idempotent (per CPU-s) |")
    print("|---|---|---:|---:|---:|---:|")
    for name in ("roster", "kafka"):
        rate, per_cpu = {}, {}
        for kind in KINDS:
            rate[kind] = statistics.median(r for r, _ in runs[(name, kind)])
            cpu = statistics.median(c for _, c in runs[(name, kind)])
            per_cpu[kind] = args.records / max(cpu, 0.01)
        for kind in KINDS:
            ratios = (f"**{rate['transactional'] / rate['idempotent']:.2f}** | "
                      f"**{per_cpu['transactional'] / per_cpu['idempotent']:.2f}**"
                      if kind == "transactional" else " | ")
            print(f"| {name} | {kind} | {rate[kind]:,.0f} | {per_cpu[kind]:,.0f} | {ratios} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
