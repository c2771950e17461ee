#!/usr/bin/env python3
"""What Fetch v0-3 cost: fetch throughput at v3 (magic-1 message sets, down-converted from the
stored batches on every fetch) against v12 (the stored batches as they are), on the same data,
in the same run.

A roster broker (a subprocess, pinned to CPU 0; this client on CPU 1) gets one topic per codec
(none, gzip, snappy, lz4), each one partition of --records records (--value-bytes values, 16-byte
keys) produced by confluent-kafka in ~64 KiB batches. Then each round reads every partition from
offset 0 to its end with raw-socket Fetch requests at v3 and at v12 (the order alternates between
rounds; PartitionMaxBytes 1 MiB), and reports for each (codec, version) the median over rounds of

  * MB/s of record values read and records/s (wall clock, client included: the client only walks
    message or batch headers to find the next offset, and decodes answers with roster's codecs);
  * the broker's CPU time per record, which is what the conversion costs the broker;
  * bytes on the wire per record (magic-1 messages are larger than v2 records; compressed
    wrappers are compressed again).

    .venv/bin/python bench/down_conversion.py                  # 3 rounds, Markdown on stdout
    .venv/bin/python bench/down_conversion.py --records 50000 --repeat 5 --json

Progress goes to stderr. The broker and its data directory are removed at the end.
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import re
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from produce_fetch import CpuMeter, Service, background_load, pin, progress

from roster.protocol import classic
from roster.protocol.build import element, make
from roster.protocol.codec import decode_response, encode_request, request_schema

REPO = Path(__file__).resolve().parent.parent
CODECS = ["none", "gzip", "snappy", "lz4"]
FETCH = 1
PARTITION_MAX = 1 << 20
_BATCH_HEAD = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")


class Wire:
    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.ids = itertools.count(1)

    def roundtrip(self, frame: bytes) -> bytes:
        self.sock.sendall(frame)
        size = struct.unpack(">i", self._read(4))[0]
        return self._read(size)

    def _read(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(min(size - len(data), 1 << 20))
            if not chunk:
                raise ConnectionError("closed by the broker")
            data += chunk
        return bytes(data)


def next_offset_v2(records: bytes) -> tuple[int, int]:
    """(offset after the last whole batch, records in them) of a v4+ answer's records."""
    position, after, count = 0, None, 0
    while position + 61 <= len(records):
        base, length = _BATCH_HEAD.unpack_from(records, position)
        if position + 12 + length > len(records):
            break
        (delta,) = _LAST_DELTA.unpack_from(records, position + 23)
        (in_batch,) = _LAST_DELTA.unpack_from(records, position + 57)
        after, count = base + delta + 1, count + in_batch
        position += 12 + length
    return after, count


def next_offset_v1(records: bytes, counted_from: int) -> tuple[int, int]:
    """(offset after the last whole message, messages at or after `counted_from`) of a message
    set; a compressed wrapper carries its last offset and counts as what it holds from there."""
    position, after, count = 0, None, 0
    while position + 12 <= len(records):
        offset, size = _BATCH_HEAD.unpack_from(records, position)
        if position + 12 + size > len(records):
            break
        first = counted_from if after is None else after
        count += offset - max(first, 0) + 1 if records[position + 17] & 7 else 1
        after = offset + 1
        position += 12 + size
    return after, count


def fetch_all(wire: Wire, version: int, topic: str, end: int) -> tuple[int, int]:
    """Read `topic`-0 from 0 to `end`: (records, bytes of records on the wire)."""
    offset, records, wire_bytes = 0, 0, 0
    if version >= 4:
        schema = request_schema(FETCH, version)
        topic_entry = element(schema, "topics")
        partition_entry = element(topic_entry, "partitions")
    while offset < end:
        correlation_id = next(wire.ids)
        if version < 4:
            frame = classic.encode_request(FETCH, version, correlation_id, "bench", {
                "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 50 << 20,
                "topics": [{"topic": topic, "partitions": [{
                    "partition": 0, "fetch_offset": offset,
                    "partition_max_bytes": PARTITION_MAX}]}]})
            _, answer = classic.decode_response(FETCH, version, wire.roundtrip(frame))
            data = answer.responses[0].partitions[0].records
            after, count = next_offset_v1(data, offset)
        else:
            body = make(schema, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0,
                        max_bytes=50 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                        topics=(make(topic_entry, topic=topic, partitions=(make(
                            partition_entry, partition=0, fetch_offset=offset,
                            partition_max_bytes=PARTITION_MAX, current_leader_epoch=-1,
                            last_fetched_epoch=-1, log_start_offset=-1),)),),
                        forgotten_topics_data=(), rack_id="")
            frame = encode_request(FETCH, version, correlation_id, "bench", body)
            _, answer = decode_response(FETCH, version, wire.roundtrip(frame))
            part = answer.responses[0].partitions[0]
            assert part.error_code == 0, part.error_code
            data = part.records or b""
            after, count = next_offset_v2(data)
        if after is None:
            raise RuntimeError(f"no progress at offset {offset} (v{version})")
        records += count
        wire_bytes += len(data)
        offset = after
    return records, wire_bytes


def produce(address: str, topic: str, codec: str, records: int, value_bytes: int) -> int:
    producer = Producer({"bootstrap.servers": address, "compression.type": codec,
                         "batch.size": 65536, "linger.ms": 20, "acks": 1,
                         "enable.idempotence": False, "queue.buffering.max.messages": 1_000_000})
    # values that compress about as well as JSON events do
    words = [b"click", b"page", b"user", b"session", b"2026-11-24", b"referrer", b"https://x/"]
    for i in range(records):
        value = b" ".join(words[(i * 7 + j) % len(words)] + str(i * j).encode()
                          for j in range(value_bytes // 8))[:value_bytes]
        while True:
            try:
                producer.produce(topic, key=f"key-{i:012d}".encode(), value=value, partition=0)
                break
            except BufferError:
                producer.poll(0.1)
    if producer.flush(120) != 0:
        raise RuntimeError("records left undelivered")
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--value-bytes", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    cpus = os.sched_getaffinity(0)
    broker_cpus = {min(cpus)} if len(cpus) > 1 else None
    if len(cpus) > 1:
        os.sched_setaffinity(0, cpus - {min(cpus)})
    with tempfile.TemporaryDirectory(prefix="roster-down-conversion-") as tmp:
        work = Path(tmp)
        argv = [sys.executable, "-m", "roster", "serve", "--host", "127.0.0.1", "--port", "0",
                "--data-dir", str(work / "data")]
        broker = Service("roster", argv, work / "roster.log",
                         re.compile(r"roster listening on (\S+:\d+)"), broker_cpus, 60)
        try:
            for codec in CODECS:
                subprocess.run([sys.executable, "-m", "roster", "topics", "--bootstrap-server",
                                broker.address, "create", f"dc-{codec}", "--partitions", "1"],
                               check=True, cwd=REPO, timeout=60, capture_output=True)
                progress(f"producing {args.records} records to dc-{codec}")
                produce(broker.address, f"dc-{codec}", codec, args.records, args.value_bytes)
            if broker_cpus:
                pin(broker.proc.pid, broker_cpus)
            results: dict[tuple[str, int], list[dict]] = {}
            wire = Wire(broker.address)
            for round_ in range(args.repeat):
                versions = (3, 12) if round_ % 2 == 0 else (12, 3)
                for codec in CODECS:
                    for version in versions:
                        with CpuMeter(broker.proc.pid) as meter:
                            started = time.perf_counter()
                            count, wire_bytes = fetch_all(wire, version, f"dc-{codec}",
                                                          args.records)
                            seconds = time.perf_counter() - started
                        broker.check()
                        assert count == args.records, (codec, version, count)
                        broker_cpu = meter.usage["broker"] * seconds
                        results.setdefault((codec, version), []).append({
                            "seconds": seconds, "records_per_s": count / seconds,
                            "mb_per_s": count * args.value_bytes / seconds / 1e6,
                            "broker_us_per_record": broker_cpu / count * 1e6,
                            "wire_bytes_per_record": wire_bytes / count,
                            "other_cpus": meter.usage["other"]})
                        progress(f"round {round_ + 1} {codec} v{version}: "
                                 f"{count / seconds:,.0f} records/s")
        finally:
            broker.stop()
    summary = {f"{codec} v{version}": {k: statistics.median(r[k] for r in runs)
                                       for k in runs[0]}
               for (codec, version), runs in results.items()}
    if args.json:
        print(json.dumps({"records": args.records, "value_bytes": args.value_bytes,
                          "repeat": args.repeat, "results": summary}, indent=2))
        return
    print(f"{args.records:,} records of {args.value_bytes} B values per codec, one partition; "
          f"median of {args.repeat} rounds; background load now {background_load(1):.2f} CPUs\n")
    print("| codec | version | records/s | MB/s | v3 ÷ v12 | broker µs/record | "
          "wire B/record |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for codec in CODECS:
        new = summary[f"{codec} v12"]
        for version in (12, 3):
            row = summary[f"{codec} v{version}"]
            ratio = row["records_per_s"] / new["records_per_s"]
            print(f"| {codec} | v{version} | {row['records_per_s']:,.0f} | {row['mb_per_s']:.1f} | "
                  f"{ratio:.2f} | {row['broker_us_per_record']:.2f} | "
                  f"{row['wire_bytes_per_record']:.0f} |")


if __name__ == "__main__":
    main()
