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
     compacted topic's cleaner works meanwhile). Goal: compact >= 0.9 x delete.

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
from roster.log.batch_records import payload, records  # noqa: E402
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


def raw_read_write(directory: Path) -> tuple[float, int]:
    """Seconds to read every closed segment and write the same bytes to one new file, fsynced."""
    files = sorted(directory.glob("*.log"))[:-1]   # the active segment is not cleaned either
    out_path = directory / "raw-copy.tmp"
    total = 0
    start = time.perf_counter()
    with open(out_path, "wb", buffering=0) as out:
        for path in files:
            with open(path, "rb", buffering=0) as source:
                while chunk := source.read(1 << 20):
                    out.write(chunk)
                    total += len(chunk)
        os.fsync(out.fileno())
    elapsed = time.perf_counter() - start
    out_path.unlink()
    return elapsed, total


def decode_only(directory: Path) -> tuple[float, int]:
    """Seconds to decode every record of the closed segments (no map, no writing)."""
    files = sorted(directory.glob("*.log"))[:-1]
    total = 0
    start = time.perf_counter()
    for path in files:
        data = path.read_bytes()
        for position, header in iter_batches(data):
            batch = memoryview(data)[position:position + header.size]
            records(header, payload(header, batch))
            total += header.size
    return time.perf_counter() - start, total


def bench_cleaner(total_mb: int, value_bytes: int, keys: int) -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        directory = Path(tmp) / "compacted-0"
        log = build_log(directory, total_mb, value_bytes, keys)
        try:
            raw_s, raw_bytes = raw_read_write(directory)
            decode_s, decode_bytes = decode_only(directory)
            start = time.perf_counter()
            stats = clean_now(log, int(time.time() * 1000), CleanerSettings())
            clean_s = time.perf_counter() - start
        finally:
            log.close()
    raw_rate = raw_bytes / raw_s / MB
    clean_rate = stats.bytes_before / clean_s / MB
    print(f"cleaner, {total_mb} MiB of {value_bytes}-byte values, {keys} keys: "
          f"{stats.records_before} -> {stats.records_after} records, "
          f"{stats.bytes_before / MB:.0f} -> {stats.bytes_after / MB:.1f} MB")
    print(f"  raw read+write (limit): {raw_rate:8.1f} MB/s")
    print(f"  cleaner:                {clean_rate:8.1f} MB/s   = {clean_rate / raw_rate:.2f} x raw "
          f"(goal >= 0.30)")
    print(f"  decode every record only: {decode_bytes / decode_s / MB:6.1f} MB/s   "
          f"(the per-record floor in Python)")


def produce_rate(bootstrap: str, topic: str, value_bytes: int, requests: int) -> float:
    with PipelinedProducer(bootstrap, topic, 0, 1, os.urandom(value_bytes), 16 * 1024, 60,
                           keyed=True) as producer:
        producer.run(requests // 10, 16, 120)  # warm up
        stats = producer.run(requests, 16, 300)
    return stats.value_bytes / stats.seconds / MB


def bench_produce(value_bytes: int, requests: int, cleaner: bool) -> None:
    settings = {"log.cleaner.backoff.ms": "1000", "log.cleaner.enable": str(cleaner).lower()}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        broker = BrokerProcess(Path(tmp) / "data", settings).start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            for name, policy in (("compacted", "compact"), ("deleted", "delete")):
                admin.create_topics([NewTopic(name, 1, 1, config={
                    "cleanup.policy": policy, "segment.bytes": str(1 << 20)})])[name].result(30)
            del admin
            rates = {"delete": [], "compact": []}
            for _ in range(3):  # alternate, so both see the same machine
                rates["delete"].append(produce_rate(broker.bootstrap, "deleted", value_bytes,
                                                    requests))
                rates["compact"].append(produce_rate(broker.bootstrap, "compacted", value_bytes,
                                                     requests))
        finally:
            broker.stop()
    delete, compact = max(rates["delete"]), max(rates["compact"])
    print(f"produce, {value_bytes}-byte keyed records, 16 KiB batches, acks=1, 16 in flight, "
          f"cleaner {'on' if cleaner else 'off'} (best of 3):")
    print(f"  delete topic:  {delete:8.1f} MB/s of values")
    print(f"  compact topic: {compact:8.1f} MB/s of values   = {compact / delete:.2f} x delete "
          f"(goal >= 0.90)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--value", type=int, default=1024)
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=3000)
    arguments = parser.parse_args()
    bench_cleaner(arguments.mb, arguments.value, arguments.keys)
    bench_cleaner(max(arguments.mb // 4, 8), 100, arguments.keys)
    for cleaner in (True, False):
        bench_produce(arguments.value, arguments.requests, cleaner)
        bench_produce(100, arguments.requests, cleaner)


if __name__ == "__main__":
    main()
