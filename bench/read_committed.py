#!/usr/bin/env python3
"""read_committed fetch throughput as a ratio of read_uncommitted, in the same run.

A roster broker (subprocess) gets --transactions transactions of --records-per-txn records
(--value-bytes each) from confluent-kafka's transactional producer; every --abort-every-th one
is aborted, so the aborted-transaction index has entries all along the log. Then, alternating
the two isolation levels --passes times each:

  * "wire": the whole partition read from offset 0 with raw Fetch v12 requests (1 MiB per
    partition per request) on one connection: mostly the broker's cost. The broker's CPU
    seconds (from /proc) are reported per level too.
  * "confluent-kafka": a real consumer (librdkafka) reading the partition to its end with
    isolation.level set, which also drops the aborted batches itself.

    .venv/bin/python bench/read_committed.py
    .venv/bin/python bench/read_committed.py --transactions 400 --passes 5
    .venv/bin/python bench/read_committed.py --kafka   # Apache Kafka 4.4 too, same data

With --kafka the same run is repeated on the Apache Kafka 4.4 peer (tests/support/kafka_peer),
and the wire reads are also given per broker CPU-second (the machine is shared).

Prints a Markdown table; progress on stderr. Results and the command: docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from roster.protocol.api_keys import ApiKey  # noqa: E402
from tests.support.process import BrokerProcess  # noqa: E402
from tests.support.transactions import create_topics, part  # noqa: E402
from tests.support.wire import Wire  # noqa: E402

TOPIC = "bench-read-committed"
LEVELS = {"read_uncommitted": 0, "read_committed": 1}


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fill(bootstrap: str, args) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "bench-rc",
                         "linger.ms": 5, "batch.size": 65536})
    producer.init_transactions(30)
    value = b"v" * args.value_bytes
    for t in range(args.transactions):
        producer.begin_transaction()
        for _ in range(args.records_per_txn):
            producer.produce(TOPIC, value=value)
            producer.poll(0)
        producer.flush(60)
        if t % args.abort_every == args.abort_every - 1:
            producer.abort_transaction(60)
        else:
            producer.commit_transaction(60)


def wire_read(wire: Wire, isolation: int) -> tuple[int, int]:
    """(fetch requests, record bytes) of one read of the whole partition."""
    offset, requests, total = 0, 0, 0
    while True:
        answer = wire.call(ApiKey.FETCH, 12, max_wait=datetime.timedelta(0), min_bytes=0,
                           forgotten_topics_data=(), isolation_level=isolation,
                           max_bytes=1 << 20, topics=(part(
                               ApiKey.FETCH, 12, "topics", topic=TOPIC, partitions=(part(
                                   ApiKey.FETCH, 12, "topics", "partitions", partition=0,
                                   fetch_offset=offset, partition_max_bytes=1 << 20),)),))
        [data] = [p for r in answer.responses for p in r.partitions]
        requests += 1
        records = data.records or b""
        if not records:
            return requests, total
        total += len(records)
        offset = _next_offset(records)


def _next_offset(records: bytes) -> int:
    from roster.log.batch import iter_batches
    last = None
    for _, header in iter_batches(records):
        last = header
    return last.next_offset


def consumer_read(bootstrap: str, isolation: str, end: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-rc",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    received = 0
    try:
        while consumer.position([TopicPartition(TOPIC, 0)])[0].offset < end:
            received += len([m for m in consumer.consume(10_000, 0.2) if m.error() is None])
    finally:
        consumer.close()
    return received


def measure(name: str, bootstrap: str, pid: int, args) -> dict:
    """Fill a fresh topic on one broker and time both isolation levels on it."""
    create_topics(bootstrap, TOPIC)
    progress(f"{name}: producing {args.transactions} transactions of {args.records_per_txn}")
    fill(bootstrap, args)
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-rc"})
    end = probe.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)[1]
    probe.close()
    times: dict[tuple[str, str], list[float]] = {}
    cpu: dict[str, list[float]] = {level: [] for level in LEVELS}
    read: dict[str, int] = {}
    with Wire(bootstrap, timeout_s=60) as wire:
        wire_read(wire, 0)  # warm-up: page cache and connection
        for _ in range(args.passes):
            for level, code in LEVELS.items():
                before, started = cpu_seconds(pid), time.perf_counter()
                requests, read[level] = wire_read(wire, code)
                times.setdefault(("wire", level), []).append(time.perf_counter() - started)
                cpu[level].append(cpu_seconds(pid) - before)
    for _ in range(args.passes):
        for level in LEVELS:
            started = time.perf_counter()
            consumer_read(bootstrap, level, end)
            times.setdefault(("confluent-kafka", level), []).append(
                time.perf_counter() - started)
    return {"end": end, "times": times, "cpu": cpu, "bytes": read}


def table(name: str, result: dict, passes: int) -> None:
    times, cpu = result["times"], result["cpu"]
    print(f"\n{name}:\n")
    print("| reader | read_uncommitted s | read_committed s | committed / uncommitted "
          "throughput |")
    print("|---|---|---|---|")
    for reader in ("wire", "confluent-kafka"):
        u = statistics.median(times[(reader, "read_uncommitted")])
        c = statistics.median(times[(reader, "read_committed")])
        print(f"| {reader} | {u:.3f} | {c:.3f} | {u / c:.2f} |")
    # CPU is counted in clock ticks (10 ms), so the sum over all passes is the useful figure
    u, c = sum(cpu["read_uncommitted"]), sum(cpu["read_committed"])
    mb = {level: result["bytes"][level] * passes / 1e6 for level in LEVELS}
    print(f"| broker CPU s, all {passes} wire passes | {u:.2f} | {c:.2f} | "
          f"{u / c if c else float('nan'):.2f} |")
    print(f"| MB per broker CPU-second (wire) | {mb['read_uncommitted'] / u if u else 0:.0f} | "
          f"{mb['read_committed'] / c if c else 0:.0f} | |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--transactions", type=int, default=200)
    parser.add_argument("--records-per-txn", type=int, default=1000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--abort-every", type=int, default=10)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--kafka", action="store_true",
                        help="the same on the Apache Kafka 4.4 peer, in the same run")
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-rc-") as workdir:
        broker = BrokerProcess(Path(workdir) / "data").start()
        try:
            results["roster"] = measure("roster", broker.bootstrap, broker.proc.pid, args)
        finally:
            broker.stop()
        if args.kafka:
            from tests.support.kafka_peer import KafkaPeer
            peer = KafkaPeer(Path(workdir) / "kafka").start()
            try:
                results["Apache Kafka 4.4"] = measure("kafka", peer.bootstrap, peer.proc.pid,
                                                      args)
            finally:
                peer.stop()
    first = next(iter(results.values()))
    print(f"{first['end']} offsets, {args.transactions} transactions of "
          f"{args.records_per_txn} x {args.value_bytes} B, 1 in {args.abort_every} aborted; "
          f"median of {args.passes}")
    for name, result in results.items():
        table(name, result, args.passes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
