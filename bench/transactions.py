#!/usr/bin/env python3
"""Transactional produce throughput as a ratio of idempotent produce, in the same run.

One roster broker (subprocess); confluent-kafka (librdkafka) produces --records records of
--value-bytes to a one-partition topic, alternating --passes times between:

  * idempotent: enable.idempotence, acks=all, no transactions;
  * transactional: the same, in transactions of --records-per-txn records (begin, produce,
    commit: InitProducerId once, then AddPartitionsToTxn, EndTxn and the markers per
    transaction).

Each pass reports records/s, the broker's CPU seconds (from /proc) and the producer's (this
process: the Python loop and librdkafka's threads); the ratio is transactional / idempotent.
Goal (issue 26): >= 0.8 with transactions of 1,000 records.

Beside the ratio it prints the two physical limits measured in the same run: the fsync a
transaction waits on in sequence, and the CPU a pass costs (producer + broker): on a machine
whose CPU is the bottleneck (this 2-core one while other work runs) the ratio tends to
idempotent CPU / transactional CPU, whatever the wall clock of a quiet moment says.

    .venv/bin/python bench/transactions.py
    .venv/bin/python bench/transactions.py --records 200000 --passes 3

Prints a Markdown table; progress on stderr. Results and the command: docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer  # noqa: E402

from tests.support.process import BrokerProcess  # noqa: E402
from tests.support.transactions import create_topics  # noqa: E402

COMMON = {"enable.idempotence": True, "acks": "all", "linger.ms": 5, "batch.size": 65536}
# fsyncs a transaction waits on in sequence besides its data's: AddPartitionsToTxn's Ongoing,
# EndTxn's PrepareCommit, the markers (docs/transactions.md, "What is durable when")
FSYNCS_PER_TXN = 3
# a record's bytes in a batch besides its value (librdkafka: 595 of 100 B in 64 KB)
RECORD_OVERHEAD = 10


def data_batches(args) -> int:
    """Produce requests per transaction, each waiting on its own fsync: librdkafka sends a
    partition's next one only once the previous is answered (docs/benchmarks.md)."""
    return -(-args.records_per_txn * (args.value_bytes + RECORD_OVERHEAD)
             // COMMON["batch.size"])


def fsync_seconds(directory: Path, rounds: int = 50) -> float:
    """The median time of one small append + fsync in `directory`: the physical limit a
    transaction's sequential durable writes run into, measured in the same run."""
    times = []
    with open(directory / "fsync-probe", "ab") as probe:
        for _ in range(rounds):
            started = time.perf_counter()
            probe.write(b"x" * 128)
            probe.flush()
            os.fsync(probe.fileno())
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class DeliveryFailed(RuntimeError):
    pass


def run(bootstrap: str, topic: str, args, transactional: bool, pass_no: int) -> float:
    """records/s of one pass (the producer is gone when it returns: its threads' CPU counted).
    Every record must be delivered: a delivery error, or a record still queued at the end,
    stops the benchmark (a rate over lost records means nothing)."""
    delivered, failed = 0, []

    def on_delivery(error, _message) -> None:
        nonlocal delivered
        if error is None:
            delivered += 1
        else:
            failed.append(error)

    conf = {"bootstrap.servers": bootstrap, **COMMON, "on_delivery": on_delivery}
    if transactional:
        conf["transactional.id"] = f"bench-tx-{pass_no}"
    producer = Producer(conf)
    if transactional:
        producer.init_transactions(30)
    value = b"v" * args.value_bytes
    started = time.perf_counter()
    sent = 0
    while sent < args.records:
        chunk = min(args.records_per_txn, args.records - sent)
        if transactional:
            producer.begin_transaction()
        for _ in range(chunk):
            while True:
                try:
                    producer.produce(topic, value)
                    break
                except BufferError:
                    producer.poll(0.01)
        if transactional:
            producer.commit_transaction(60)
        sent += chunk
    left = producer.flush(60)
    elapsed = time.perf_counter() - started
    kind = "transactional" if transactional else "idempotent"
    if failed or left or delivered != args.records:
        raise DeliveryFailed(f"{kind} pass {pass_no + 1}: {delivered:,} of {args.records:,} "
                             f"records delivered, {len(failed):,} delivery errors "
                             f"(first: {failed[0] if failed else None}), {left} still queued")
    return args.records / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--records-per-txn", type=int, default=1000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        broker = BrokerProcess(Path(data), {"transaction.state.log.num.partitions": "3"}).start()
        try:
            rows = {"idempotent": [], "transactional": []}
            cpu = {"idempotent": [], "transactional": []}
            client_cpu = {"idempotent": [], "transactional": []}
            load_before = os.getloadavg()[0]
            for n in range(args.passes):
                for kind in ("idempotent", "transactional"):
                    topic = f"bench-{kind}-{n}"
                    create_topics(broker.bootstrap, topic)
                    before, client_before = cpu_seconds(broker.proc.pid), time.process_time()
                    rate = run(broker.bootstrap, topic, args, kind == "transactional", n)
                    cpu[kind].append(cpu_seconds(broker.proc.pid) - before)
                    client_cpu[kind].append(time.process_time() - client_before)
                    rows[kind].append(rate)
                    progress(f"pass {n + 1}: {kind} {rate:,.0f} records/s")
        finally:
            broker.stop()
        load_after = os.getloadavg()[0]
        fsync_s = fsync_seconds(Path(data))
    idem, txn = statistics.median(rows["idempotent"]), statistics.median(rows["transactional"])
    print(f"| producer ({args.records:,} x {args.value_bytes} B, transactions of "
          f"{args.records_per_txn:,}) | records/s (median of {args.passes}) | broker CPU s "
          "per pass | producer CPU s per pass |")
    print("|---|---:|---:|---:|")
    used = {}
    for kind, rate in (("idempotent", idem), ("transactional", txn)):
        broker_s, client_s = statistics.median(cpu[kind]), statistics.median(client_cpu[kind])
        used[kind] = broker_s + client_s
        print(f"| {kind} | {rate:,.0f} | {broker_s:.2f} | {client_s:.2f} |")
    print(f"| **ratio** transactional / idempotent | **{txn / idem:.2f}** | | |")
    print(f"\nload average {load_before:.1f} before, {load_after:.1f} after "
          f"({os.cpu_count()} CPUs)")
    in_sequence = FSYNCS_PER_TXN + data_batches(args)
    ceiling = args.records_per_txn / (in_sequence * fsync_s)
    print(f"\nphysical limits, same run:\n- fsync: one in the data dir takes "
          f"{fsync_s * 1000:.2f} ms (median of 50); {in_sequence} in sequence per "
          f"transaction of {args.records_per_txn:,} records ({FSYNCS_PER_TXN} of the "
          f"coordinator, {data_batches(args)} Produce) cap transactional produce at "
          f"{ceiling:,.0f} records/s, a ratio of at most {min(ceiling / idem, 1):.2f} against "
          "this run's idempotent rate")
    print(f"- CPU: a pass costs {used['idempotent']:.2f} s idempotent and "
          f"{used['transactional']:.2f} s transactional (producer + broker); where the CPU is "
          "the bottleneck the ratio tends to "
          f"{used['idempotent'] / used['transactional']:.2f}")


if __name__ == "__main__":
    try:
        main()
    except DeliveryFailed as failure:
        sys.exit(f"bench/transactions.py: {failure}")
