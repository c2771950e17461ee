"""Compaction benchmark (issue 23): the cleaner's throughput against the disk, and what a
compacted topic costs producers.

  1. cleaner: a FileLog of --mb MiB (keyed records of --value bytes, --keys distinct keys, 16 KiB
     batches, 16 MiB segments) is cleaned by one pass (roster.log.compaction.clean_now, the
     code the broker's cleaner thread runs, with the default 128 MiB offset map). Its rate, in
     MB of log cleaned per second, is set beside the raw limit measured in the same run on the
     same files: reading every segment and writing the same bytes to a new file, fsynced (what
     a pass must at least do). Goal: cleaner >= 0.3 x raw. Also printed: the rate of only
     decoding every record (the Python floor of any per-record work), which is the physical
     limit when the goal is missed.
  2. produce: a roster broker (subprocess); one raw-socket pipelined producer (bench/
     pipelined_producer.py, 16 requests in flight, acks=1, 16 KiB batches of keyed records)
     writes to a topic with cleanup.policy=compact and to one with delete (1 MiB segments, so the
     compacted topic's cleaner works meanwhile), with the cleaner on, off (what the produce
     path's key check alone costs), and throttled to 20 MB/s (log.cleaner.io.max.bytes.per.
     second). Goal: compact >= 0.9 x delete.

    .venv/bin/python bench/compaction.py [--mb 256] [--value 1024] [--keys 20000]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402
from pipelined_producer import PipelinedProducer  # noqa: E402

from roster.log.api import LogConfig  # noqa: E402
from roster.log.batch import iter_batches  # noqa: E402
from roster.log.batch_records import decoded  # noqa: E402
from roster.log.compaction import CleanerSettings, clean_now  # noqa: E402
from roster.log.file import FileLog  # noqa: E402
from tests.support.process import BrokerProcess  # noqa: E402

MB = 1e6
SEGMENT = 16 << 20


def build_log(directory: Path, total_mb: int, value_bytes: int, keys: int) -> FileLog:
    log = FileLog.open(directory, LogConfig(segment_bytes=SEGMENT, retention_ms=-1))
    value = os.urandom(value_bytes)
    written, key = 0, 0
    while written < total_mb << 20:
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                            producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                            batch_size=16 * 1024)
        count = 0
        while builder.append(count, timestamp=1_700_000_000_000, key=b"key-%08d" % key,
                             value=value, headers=[]) is not None:
            count += 1
            key = (key + 1) % keys
        batch = bytes(builder.build())
        log.append(batch)
        written += len(batch)
    job = log.prepare_flush()
    if job is not None:
        job.run()
        log.flushed(job)
    return log


def raw_read_write(directory: Path) -> tuple[float, int, float]:
    """(seconds, bytes, CPU seconds) to read every closed segment and write the same bytes to one
    new file, fsynced."""
    files = sorted(directory.glob("*.log"))[:-1]   # the active segment is not cleaned either
    out_path = directory / "raw-copy.tmp"
    total = 0
    start, cpu = time.perf_counter(), time.process_time()
    with open(out_path, "wb", buffering=0) as out:
        for path in files:
            with open(path, "rb", buffering=0) as source:
                while chunk := source.read(1 << 20):
                    out.write(chunk)
                    total += len(chunk)
        os.fsync(out.fileno())
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    out_path.unlink()
    return elapsed, total, cpu


def decode_only(directory: Path) -> tuple[float, int]:
    """Seconds to decode every record of the closed segments twice, with the compiled codec the
    cleaner uses (no map, no writing): the floor of the cleaner's per-record work, which reads
    every record once to map it and once to filter it."""
    files = sorted(directory.glob("*.log"))[:-1]
    total = 0
    start = time.perf_counter()
    for path in files:
        data = path.read_bytes()
        for _ in range(2):
            for position, header in iter_batches(data):
                decoded(memoryview(data)[position:position + header.size])
        total += len(data)
    return time.perf_counter() - start, total


def bench_cleaner(total_mb: int, value_bytes: int, keys: int) -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        directory = Path(tmp) / "compacted-0"
        log = build_log(directory, total_mb, value_bytes, keys)
        try:
            raw_s, raw_bytes, raw_cpu = min(raw_read_write(directory) for _ in range(3))
            decode_s, decode_bytes = min(decode_only(directory) for _ in range(2))
            start, cpu = time.perf_counter(), time.process_time()
            stats = clean_now(log, int(time.time() * 1000), CleanerSettings())
            clean_s, clean_cpu = time.perf_counter() - start, time.process_time() - cpu
        finally:
            log.close()
    raw_rate = raw_bytes / raw_s / MB
    clean_rate = stats.bytes_before / clean_s / MB
    print(f"cleaner, {total_mb} MiB of {value_bytes}-byte values, {keys} keys: "
          f"{stats.records_before} -> {stats.records_after} records, "
          f"{stats.bytes_before / MB:.0f} -> {stats.bytes_after / MB:.1f} MB")
    raw_per_cpu = raw_bytes / max(raw_cpu, 1e-3) / MB
    clean_per_cpu = stats.bytes_before / max(clean_cpu, 1e-3) / MB
    print(f"  raw read+write (limit): {raw_rate:8.1f} MB/s (best of 3), "
          f"{raw_per_cpu:.0f} MB per CPU second")
    print(f"  cleaner:                {clean_rate:8.1f} MB/s   = {clean_rate / raw_rate:.2f} x raw "
          f"(goal >= 0.30); {clean_per_cpu:.0f} MB per CPU second = "
          f"{clean_per_cpu / raw_per_cpu:.2f} x raw")
    print(f"  decoding every record twice, nothing else: {decode_bytes / decode_s / MB:6.1f} "
          f"MB/s   (the floor of the cleaner's per-record work)")


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process has used (Linux /proc): on a machine shared with other
    work, MB per CPU second is steadier than MB per wall second."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce_rate(broker: BrokerProcess, topic: str, value_bytes: int,
                 requests: int) -> tuple[float, float]:
    """(MB of values per wall second, per broker CPU second)."""
    with PipelinedProducer(broker.bootstrap, topic, 0, 1, os.urandom(value_bytes), 16 * 1024,
                           60, keyed=True) as producer:
        producer.run(requests // 10, 16, 120)  # warm up
        cpu = cpu_seconds(broker.proc.pid)
        stats = producer.run(requests, 16, 300)
        cpu = cpu_seconds(broker.proc.pid) - cpu
    return stats.value_bytes / stats.seconds / MB, stats.value_bytes / max(cpu, 1e-3) / MB


def bench_produce(value_bytes: int, requests: int, cleaner: str) -> None:
    """`cleaner`: "off", "on" or a log.cleaner.io.max.bytes.per.second value."""
    settings = {"log.cleaner.backoff.ms": "1000",
                "log.cleaner.enable": str(cleaner != "off").lower()}
    if cleaner not in ("on", "off"):
        settings["log.cleaner.io.max.bytes.per.second"] = cleaner
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        broker = BrokerProcess(Path(tmp) / "data", settings).start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            for name, policy in (("compacted", "compact"), ("deleted", "delete")):
                admin.create_topics([NewTopic(name, 1, 1, config={
                    "cleanup.policy": policy, "segment.bytes": str(1 << 20)})])[name].result(30)
            del admin
            runs: dict[str, list] = {"delete": [], "compact": []}
            for _ in range(3):  # alternate, so both see the same machine
                runs["delete"].append(produce_rate(broker, "deleted", value_bytes, requests))
                runs["compact"].append(produce_rate(broker, "compacted", value_bytes, requests))
        finally:
            broker.stop()
    label = cleaner if cleaner in ("on", "off") else f"at most {cleaner} B/s"
    print(f"produce, {value_bytes}-byte keyed records, 16 KiB batches, acks=1, 16 in flight, "
          f"cleaner {label} (best of 3):")
    wall = {policy: max(rate for rate, _ in results) for policy, results in runs.items()}
    cpu = {policy: max(rate for _, rate in results) for policy, results in runs.items()}
    for policy in ("delete", "compact"):
        print(f"  {policy:7} topic: {wall[policy]:7.1f} MB/s of values, "
              f"{cpu[policy]:7.1f} MB per broker CPU second")
    print(f"  compact / delete: {wall['compact'] / wall['delete']:.2f} by wall clock, "
          f"{cpu['compact'] / cpu['delete']:.2f} by broker CPU (goal >= 0.90)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--value", type=int, default=1024)
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=3000)
    arguments = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    bench_cleaner(arguments.mb, arguments.value, arguments.keys)
    bench_cleaner(max(arguments.mb // 4, 8), 100, arguments.keys)
    for cleaner in ("on", "off", "20000000"):
        bench_produce(arguments.value, arguments.requests, cleaner)
        bench_produce(100, arguments.requests, cleaner)


if __name__ == "__main__":
    main()
