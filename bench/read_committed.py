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

With --kafka the Apache Kafka 4.4 peer (tests/support/kafka_peer) runs beside roster with the
same data, and each pass reads from both in turn (the order alternating), so load on the shared
machine falls on both alike; the wire reads are also given per broker CPU-second. Every read is
checked, on each broker: the wire reads' record count and aborted transactions, and each value
confluent-kafka returns, in order (every record at read_uncommitted, only the committed
transactions' at read_committed); a wrong read stops the run.

Prints a Markdown table; progress on stderr. Results and the command: docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import contextlib
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


def record_value(t: int, i: int, size: int) -> bytes:
    """Record i of transaction t, padded to `size`: what a read returns is checked by content."""
    return f"{t:06d}:{i:06d}:".encode().ljust(size, b"v")


def expected_values(args) -> dict[str, list[bytes]]:
    """What a read of the whole partition returns at each level, in order."""
    every, committed = [], []
    for t in range(args.transactions):
        values = [record_value(t, i, args.value_bytes) for i in range(args.records_per_txn)]
        every += values
        if not aborted(t, args):
            committed += values
    return {"read_uncommitted": every, "read_committed": committed}


def aborted(t: int, args) -> bool:
    return t % args.abort_every == args.abort_every - 1


def fill(bootstrap: str, args) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "bench-rc",
                         "linger.ms": 5, "batch.size": 65536})
    producer.init_transactions(30)
    for t in range(args.transactions):
        producer.begin_transaction()
        for i in range(args.records_per_txn):
            producer.produce(TOPIC, value=record_value(t, i, args.value_bytes))
            producer.poll(0)
        producer.flush(60)
        if aborted(t, args):
            producer.abort_transaction(60)
        else:
            producer.commit_transaction(60)


def wire_read(wire: Wire, isolation: int) -> dict:
    """One read of the whole partition: fetch requests, record bytes, records in data batches,
    and the distinct aborted transactions the answers name."""
    offset, requests, total, records_read, named = 0, 0, 0, 0, set()
    while True:
        answer = wire.call(ApiKey.FETCH, 12, max_wait=datetime.timedelta(0), min_bytes=0,
                           forgotten_topics_data=(), isolation_level=isolation,
                           max_bytes=1 << 20, topics=(part(
                               ApiKey.FETCH, 12, "topics", topic=TOPIC, partitions=(part(
                                   ApiKey.FETCH, 12, "topics", "partitions", partition=0,
                                   fetch_offset=offset, partition_max_bytes=1 << 20),)),))
        [data] = [p for r in answer.responses for p in r.partitions]
        requests += 1
        named |= {(int(a.producer_id), a.first_offset) for a in data.aborted_transactions or ()}
        records = data.records or b""
        if not records:
            return {"requests": requests, "bytes": total, "records": records_read,
                    "aborted": len(named)}
        total += len(records)
        offset, count = _scan(records)
        records_read += count


def _scan(records: bytes) -> tuple[int, int]:
    """(the offset after the last batch, records in its data batches)."""
    from roster.log.batch import iter_batches
    last, count = None, 0
    for _, header in iter_batches(records):
        last = header
        if not header.is_control:
            count += header.records_count
    return last.next_offset, count


def consumer_read(bootstrap: str, isolation: str, end: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-rc",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    values = []
    try:
        while consumer.position([TopicPartition(TOPIC, 0)])[0].offset < end:
            values += [m.value() for m in consumer.consume(10_000, 0.2) if m.error() is None]
    finally:
        consumer.close()
    return values


class WrongRead(AssertionError):
    pass


def check_wire(name: str, level: str, got: dict, args) -> None:
    want = {"records": args.transactions * args.records_per_txn,
            "aborted": len([t for t in range(args.transactions) if aborted(t, args)])
            if level == "read_committed" else 0}
    seen = {key: got[key] for key in want}
    if seen != want:
        raise WrongRead(f"{name}, wire {level}: read {seen}, expected {want}")


def check_consumer(name: str, level: str, values: list[bytes], want: list[bytes]) -> None:
    if values != want:
        wrong = next((i for i, (a, b) in enumerate(zip(values, want)) if a != b),
                     min(len(values), len(want)))
        raise WrongRead(f"{name}, confluent-kafka {level}: read {len(values):,} records, "
                        f"expected {len(want):,}; first difference at record {wrong:,}: "
                        f"{values[wrong] if wrong < len(values) else None!r} against "
                        f"{want[wrong] if wrong < len(want) else None!r}")


class Broker:
    """One broker under test: its name, bootstrap, pid and what was measured on it."""

    def __init__(self, name: str, bootstrap: str, pid: int) -> None:
        self.name, self.bootstrap, self.pid = name, bootstrap, pid
        self.times: dict[tuple[str, str], list[float]] = {}
        self.cpu: dict[str, list[float]] = {level: [] for level in LEVELS}
        self.bytes: dict[str, int] = {}
        self.end = 0


def prepare(broker: Broker, args) -> Wire:
    """Fill a fresh topic on the broker; a warmed-up wire connection to read it with."""
    create_topics(broker.bootstrap, TOPIC)
    progress(f"{broker.name}: producing {args.transactions} transactions of "
             f"{args.records_per_txn}")
    fill(broker.bootstrap, args)
    probe = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bench-rc"})
    broker.end = probe.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)[1]
    probe.close()
    wire = Wire(broker.bootstrap, timeout_s=60)
    wire_read(wire, 0)  # warm-up: page cache and connection
    return wire


def measure(brokers: list[Broker], args) -> None:
    """Every pass reads from each broker in turn (the order alternating between passes), both
    levels, both readers, so load on the shared machine falls on all of them alike; every read
    is checked: record count and aborted transactions on the wire, every value in order through
    confluent-kafka."""
    want = expected_values(args)
    wires = {broker.name: prepare(broker, args) for broker in brokers}
    try:
        for n in range(args.passes):
            for broker in brokers if n % 2 == 0 else brokers[::-1]:
                wire = wires[broker.name]
                for level, code in LEVELS.items():
                    before, started = cpu_seconds(broker.pid), time.perf_counter()
                    got = wire_read(wire, code)
                    broker.times.setdefault(("wire", level), []).append(
                        time.perf_counter() - started)
                    broker.cpu[level].append(cpu_seconds(broker.pid) - before)
                    broker.bytes[level] = got["bytes"]
                    check_wire(broker.name, level, got, args)
                for level in LEVELS:
                    started = time.perf_counter()
                    values = consumer_read(broker.bootstrap, level, broker.end)
                    broker.times.setdefault(("confluent-kafka", level), []).append(
                        time.perf_counter() - started)
                    check_consumer(broker.name, level, values, want[level])
                progress(f"pass {n + 1}: {broker.name} read and checked")
    finally:
        for wire in wires.values():
            wire.close()


def table(broker: Broker, passes: int) -> None:
    times, cpu = broker.times, broker.cpu
    print(f"\n{broker.name}:\n")
    print("| reader | read_uncommitted s | read_committed s | committed / uncommitted "
          "throughput |")
    print("|---|---|---|---|")
    for reader in ("wire", "confluent-kafka"):
        u = statistics.median(times[(reader, "read_uncommitted")])
        c = statistics.median(times[(reader, "read_committed")])
        print(f"| {reader} | {u:.3f} | {c:.3f} | {u / c:.2f} |")
    # CPU is counted in clock ticks (10 ms), so the sum over all passes is the useful figure
    u, c = sum(cpu["read_uncommitted"]), sum(cpu["read_committed"])
    mb = {level: broker.bytes[level] * passes / 1e6 for level in LEVELS}
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
    if args.value_bytes < 14:
        parser.error("--value-bytes must be at least 14 (a record names its transaction)")
    with tempfile.TemporaryDirectory(prefix="bench-rc-") as workdir, \
            contextlib.ExitStack() as running:
        roster = BrokerProcess(Path(workdir) / "data").start()
        running.callback(roster.stop)
        brokers = [Broker("roster", roster.bootstrap, roster.proc.pid)]
        if args.kafka:
            from tests.support.kafka_peer import KafkaPeer
            peer = KafkaPeer(Path(workdir) / "kafka").start()
            running.callback(peer.stop)
            brokers.append(Broker("Apache Kafka 4.4", peer.bootstrap, peer.proc.pid))
        try:
            measure(brokers, args)
        except WrongRead as wrong:
            print(f"bench/read_committed.py: {wrong}", file=sys.stderr)
            return 1
    print(f"{brokers[0].end} offsets, {args.transactions} transactions of "
          f"{args.records_per_txn} x {args.value_bytes} B, 1 in {args.abort_every} aborted; "
          f"median of {args.passes}, every read checked")
    for broker in brokers:
        table(broker, args.passes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
