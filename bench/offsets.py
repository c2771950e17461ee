#!/usr/bin/env python3
"""Offset-commit benchmark: commit throughput against the disk's raw fsync rate, and restart
(replay) time of __consumer_offsets before and after compaction, in one run.

  fsync     the raw fsync rate of the data directory's file system: one thread appending 64 bytes
            to a file in that directory and fsyncing it, in a loop, for --fsync-seconds. Measured
            just before and just after each commit phase; the table uses their mean.
  commits   100 committers, each with its own connection, group and partition (OffsetCommit v8
            carrying one partition, as a standalone consumer: generation -1), each sending its next
            commit as soon as the previous one is answered (closed loop). roster answers a commit
            only once its record is fsynced in __consumer_offsets; commits that arrive together are
            group-committed (one write and one fsync per __consumer_offsets partition). Counted over
            --seconds after a 2 s warm-up: commits/s, latency p50/p99, broker CPU per commit, and
            commits/s divided by the raw fsync rate. Run once per --offsets-partitions value.
            The load generator is a uvloop Protocol with frames pre-encoded by roster's codec (only
            the correlation id and the offset are patched per request); answers are checked by
            comparing their bytes with the first answer of the connection, which is decoded.
  replay    --records offset-commit records (G groups x P partitions = K keys, committed
            round-robin, so every key has records/K commits) are written offline, straight into
            __consumer_offsets-0 (offsets.topic.num.partitions=1) with roster's own log and record
            codec (FileLog.append of batches built exactly as the coordinator builds them,
            --records-per-batch records each), after one start/stop of the broker has created the
            topic. The broker is then started with the cleaner off and timed from the moment the
            process is spawned to its `roster listening` line and to its `loaded N records` line.
  compacted the broker is started with the cleaner on, stopped once its `compacted` line is out,
            and the restart is timed again. Compaction never touches the active segment, so what
            is left to replay is one record per key plus the active segment.

    .venv/bin/python bench/offsets.py                        # everything, ~3 min, Markdown on stdout
    .venv/bin/python bench/offsets.py --only commits --seconds 20
    .venv/bin/python bench/offsets.py --only replay --records 1000000 --profile /tmp/replay-profile
    .venv/bin/python bench/offsets.py --json results.json

--dir chooses where data directories go (default: a temporary directory under /tmp); the fsync
rate is measured there too. Everything stays on 127.0.0.1; subprocesses and directories are
removed even when a step fails. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from roster.protocol.build import element, make  # noqa: E402
from roster.protocol.codec import decode_response, encode_request, request_schema  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
COMMIT_VERSION = 8
SENTINEL = 0x0123456789ABCDEF  # located in the pre-encoded frame, then patched per request
TARGET_REPLAY_S = 10.0


def progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- the broker process ------------------------------------------------------------------------

CPUS = sorted(os.sched_getaffinity(0))
BROKER_CPUS = {CPUS[0]} if len(CPUS) > 1 else None
CLIENT_CPUS = set(CPUS[1:]) if len(CPUS) > 1 else None


class Broker:
    """`python -m roster serve` on a free port, its output lines timestamped as they arrive."""

    def __init__(self, data_dir: Path, settings: dict[str, str], wrap: list[str] = ()) -> None:
        command = [*wrap, sys.executable, "-m", "roster", "--log-level", "INFO", "serve",
                   "--host", "127.0.0.1", "--port", "0", "--data-dir", str(data_dir)]
        for key, value in settings.items():
            command += ["--set", f"{key}={value}"]
        self.lines: list[tuple[float, str]] = []
        self.port: int | None = None
        self.wrapped = bool(wrap)
        self._eof = False
        self._cond = threading.Condition()
        self.spawned = time.monotonic()
        self.proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
            preexec_fn=self._pin, env={**os.environ, "PYTHONUNBUFFERED": "1",
                                        "PYTHONPATH": str(REPO / "src")})
        threading.Thread(target=self._pump, daemon=True).start()
        listening = self.wait_for(r"^roster listening on .*:(\d+)$", 120)
        self.port = int(re.search(r":(\d+)$", listening[1]).group(1))

    @staticmethod
    def _pin() -> None:
        if BROKER_CPUS:
            os.sched_setaffinity(0, BROKER_CPUS)  # threads started later inherit it

    def _pump(self) -> None:
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def wait_for(self, pattern: str, timeout_s: float, after: int = 0) -> tuple[float, str]:
        """(arrival time, line) of the first line from index `after` matching `pattern`."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                for stamp, line in self.lines[after:]:
                    if regex.search(line):
                        return stamp, line
                if self._eof:
                    raise RuntimeError(f"roster exited ({self.proc.returncode}):\n" +
                                       "\n".join(text for _, text in self.lines[-30:]))
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no line matching {pattern!r} in {timeout_s} s:\n" +
                                       "\n".join(text for _, text in self.lines[-30:]))
                self._cond.wait(min(remaining, 0.5))

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cpu_s(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def stop(self, timeout_s: float = 60) -> None:
        if self.proc.poll() is None:
            if self.wrapped:  # py-spy: stop roster, and py-spy writes its profile and exits
                for child in _children(self.proc.pid):
                    os.kill(child, signal.SIGTERM)
            else:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


# -- raw fsync rate ----------------------------------------------------------------------------

def fsync_rate(directory: Path, seconds: float) -> float:
    """fsyncs per second of 64-byte appends to a file in `directory`, one thread."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    try:
        data = b"x" * 64
        count, started = 0, time.monotonic()
        deadline = started + seconds
        while time.monotonic() < deadline:
            os.write(fd, data)
            os.fsync(fd)
            count += 1
        return count / (time.monotonic() - started)
    finally:
        os.close(fd)
        path.unlink()


# -- commit throughput ---------------------------------------------------------------------------

def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from tests.interop.test_bad_input import _create
    from tests.support.wire import Wire
    with Wire(bootstrap) as wire:
        result = _create(wire, name, partitions)
        assert result.error_code == 0, result


def commit_frame(group: str, topic: str, partition: int) -> tuple[bytearray, int]:
    """A pre-encoded OffsetCommit frame and the position of its offset field."""
    schema = request_schema(8, COMMIT_VERSION)
    topic_entry = element(schema, "topics")
    part = element(topic_entry, "partitions")
    body = make(schema, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                group_instance_id=None, topics=(make(topic_entry, name=topic, partitions=(make(
                    part, partition_index=partition, committed_offset=SENTINEL,
                    committed_leader_epoch=-1, committed_metadata=""),)),))
    frame = bytearray(encode_request(8, COMMIT_VERSION, 0, "bench", body))
    position = frame.find(struct.pack(">q", SENTINEL))
    assert position > 0 and frame.find(struct.pack(">q", SENTINEL), position + 1) < 0
    return frame, position


@dataclass
class Stats:
    done: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    counting: bool = False


class Committer(asyncio.Protocol):
    """One connection, one commit in flight; the next is sent as soon as the answer is in."""

    def __init__(self, frame: bytearray, offset_at: int, stats: Stats, stop: asyncio.Event) -> None:
        self.frame, self.offset_at, self.stats, self.stop = frame, offset_at, stats, stop
        self.buffer = bytearray()
        self.sent_at = 0.0
        self.correlation = 0
        self.expected: bytes | None = None  # the answer's bytes after the correlation id
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.send()

    def send(self) -> None:
        self.correlation += 1
        struct.pack_into(">i", self.frame, 8, self.correlation)
        struct.pack_into(">q", self.frame, self.offset_at, self.correlation)
        self.sent_at = time.perf_counter()
        self.transport.write(self.frame)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        while len(buffer) >= 4:
            (size,) = struct.unpack_from(">i", buffer, 0)
            if len(buffer) < 4 + size:
                return
            frame = bytes(buffer[4:4 + size])
            del buffer[:4 + size]
            self.answered(frame)

    def answered(self, frame: bytes) -> None:
        now = time.perf_counter()
        (correlation,) = struct.unpack_from(">i", frame, 0)
        assert correlation == self.correlation
        if self.expected is None:
            _, body = decode_response(8, COMMIT_VERSION, frame)
            ok = all(p.error_code.value == 0 for t in body.topics for p in t.partitions)
            if ok:
                self.expected = frame[4:]
        else:
            ok = frame[4:] == self.expected
        stats = self.stats
        if stats.counting:
            stats.done += 1
            stats.errors += not ok
            stats.latencies.append(now - self.sent_at)
        if not self.stop.is_set():
            self.send()


async def run_committers(bootstrap: str, topic: str, committers: int, warmup_s: float,
                         seconds: float, broker: Broker) -> dict:
    loop = asyncio.get_running_loop()
    host, port = bootstrap.rsplit(":", 1)
    stats, stop = Stats(), asyncio.Event()
    transports = []
    for i in range(committers):
        frame, at = commit_frame(f"bench-{i}", topic, i)
        transport, _ = await loop.create_connection(
            lambda frame=frame, at=at: Committer(frame, at, stats, stop), host, int(port))
        transports.append(transport)
    await asyncio.sleep(warmup_s)
    cpu_before, started = broker.cpu_s(), time.perf_counter()
    stats.counting = True
    await asyncio.sleep(seconds)
    stats.counting = False
    elapsed, cpu = time.perf_counter() - started, broker.cpu_s() - cpu_before
    stop.set()
    await asyncio.sleep(0.2)
    for transport in transports:
        transport.close()
    latencies = sorted(stats.latencies)
    return {
        "commits": stats.done, "errors": stats.errors, "seconds": elapsed,
        "commits_per_s": stats.done / elapsed,
        "p50_ms": 1000 * latencies[len(latencies) // 2] if latencies else None,
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)] if latencies else None,
        "broker_cpu_us_per_commit": 1e6 * cpu / stats.done if stats.done else None,
    }


def commit_phase(base: Path, offsets_partitions: int, committers: int, seconds: float,
                 fsync_seconds: float) -> dict:
    data_dir = base / f"commits-{offsets_partitions}"
    data_dir.mkdir()
    progress(f"raw fsync rate in {data_dir}")
    before = fsync_rate(data_dir, fsync_seconds)
    broker = Broker(data_dir, {"offsets.topic.num.partitions": str(offsets_partitions),
                               "group.initial.rebalance.delay.ms": "0"})
    try:
        create_topic(broker.bootstrap, "bench", committers)
        progress(f"{committers} committers, __consumer_offsets with {offsets_partitions} "
                 f"partition(s), {seconds} s")
        if CLIENT_CPUS:
            os.sched_setaffinity(0, CLIENT_CPUS)
        try:
            import uvloop
            result = uvloop.run(run_committers(broker.bootstrap, "bench", committers, 2.0,
                                               seconds, broker))
        except ImportError:
            result = asyncio.run(run_committers(broker.bootstrap, "bench", committers, 2.0,
                                                seconds, broker))
    finally:
        broker.stop()
    after = fsync_rate(data_dir, fsync_seconds)
    raw = (before + after) / 2
    result.update(offsets_partitions=offsets_partitions, committers=committers,
                  fsync_per_s_before=before, fsync_per_s_after=after, fsync_per_s=raw,
                  ratio=result["commits_per_s"] / raw)
    progress(f"{result['commits_per_s']:.0f} commits/s, raw fsync {raw:.0f}/s, "
             f"ratio {result['ratio']:.2f}")
    shutil.rmtree(data_dir, ignore_errors=True)
    return result


# -- replay time -----------------------------------------------------------------------------------

REPLAY_SETTINGS = {"offsets.topic.num.partitions": "1", "log.cleaner.enable": "false"}


def write_records(data_dir: Path, settings: dict[str, str], records: int, groups: int,
                  partitions: int, per_batch: int) -> dict:
    """Append `records` offset commits to __consumer_offsets-0 with roster's log API."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from roster.broker.groups.group_log import INTERNAL_MAX_BATCH, OFFSETS_TOPIC
    from roster.broker.partitions.topics import TopicManager
    from roster.config import BrokerConfig
    from roster.log.file import FileLog
    from roster.protocol.group_records import OffsetKey, OffsetValue, encode_key, encode_value

    config = BrokerConfig.from_overrides(settings)
    topics = TopicManager(data_dir, config, FileLog.open)
    topics.load()
    log = topics.partition(OFFSETS_TOPIC, 0)
    assert log is not None and log.log_end_offset == 0, "expected an empty __consumer_offsets-0"
    keys = [encode_key(OffsetKey(f"group-{g:05d}", f"topic-{p % 10}", p))
            for g in range(groups) for p in range(partitions)]
    now = int(time.time() * 1000)
    started = time.monotonic()
    written = 0
    while written < records:
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=0, is_transactional=False, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=INTERNAL_MAX_BATCH)
        for i in range(min(per_batch, records - written)):
            n = written + i
            value = encode_value(OffsetValue(n, -1, "", now))
            builder.append(i, timestamp=now, key=keys[n % len(keys)], value=value, headers=[])
        written += min(per_batch, records - written)
        log.append(bytes(builder.build()))
    size = log.size_bytes
    topics.close()
    return {"records": records, "keys": len(keys), "records_per_batch": per_batch,
            "bytes": size, "write_s": time.monotonic() - started}


def segment_files(data_dir: Path) -> list[tuple[str, int]]:
    return sorted((p.name, p.stat().st_size)
                  for p in (data_dir / "__consumer_offsets-0").glob("*.log"))


def timed_start(data_dir: Path, settings: dict[str, str], expect_records: bool,
                wrap: list[str] = ()) -> dict:
    broker = Broker(data_dir, settings, wrap)
    try:
        listening_at = broker.wait_for(r"^roster listening", 5)[0]
        if expect_records:
            loaded_at, line = broker.wait_for(r"loaded \d+ records", 600)
            count = int(re.search(r"loaded (\d+) records", line).group(1))
            inside = float(re.search(r"in ([\d.]+) s", line).group(1))
        else:
            loaded_at, count, inside = listening_at, 0, 0.0
        return {"listening_s": listening_at - broker.spawned,
                "loaded_s": loaded_at - broker.spawned, "replayed_records": count,
                "replay_s_logged": inside}
    finally:
        broker.stop()


def profile_start(data_dir: Path, settings: dict[str, str], out: Path) -> Path:
    """The same restart under py-spy (raw collapsed stacks), for the hot-spot table."""
    out.mkdir(parents=True, exist_ok=True)
    raw = out / "replay.txt"
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    timed_start(data_dir, settings, True,
                wrap=[py_spy, "record", "--format", "raw", "--rate", "250", "--nonblocking",
                      "-o", str(raw), "--"])
    return raw


def hot_spots(raw: Path, top: int = 15) -> list[tuple[str, float, float]]:
    """(function, self %, inclusive %) from py-spy's raw output, largest self time first."""
    self_counts: collections.Counter = collections.Counter()
    total_counts: collections.Counter = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [re.sub(r" \((?:.*/)?([^/]+:\d+)\)$", r" (\1)", f) for f in stack.split(";")]
        frames = [re.sub(r":\d+\)$", ")", f) for f in frames]
        n = int(count)
        total += n
        self_counts[frames[-1]] += n
        for frame in set(frames):
            total_counts[frame] += n
    return [(name, 100 * n / total, 100 * total_counts[name] / total)
            for name, n in self_counts.most_common(top)]


def replay_phase(base: Path, records: int, groups: int, partitions: int, per_batch: int,
                 segment_bytes: int, profile: Path | None) -> dict:
    data_dir = base / "replay"
    settings = {**REPLAY_SETTINGS, "offsets.topic.segment.bytes": str(segment_bytes)}
    progress("creating __consumer_offsets (one start and stop)")
    Broker(data_dir, settings).stop()
    progress(f"writing {records:,} offset-commit records offline ({groups} groups x "
             f"{partitions} partitions, {per_batch} per batch)")
    written = write_records(data_dir, settings, records, groups, partitions, per_batch)
    written["segments"] = segment_files(data_dir)
    progress(f"wrote {written['bytes']:,} bytes in {written['write_s']:.1f} s; timing a restart")
    before = timed_start(data_dir, settings, True)
    progress(f"listening after {before['listening_s']:.2f} s, loaded after "
             f"{before['loaded_s']:.2f} s")
    spots = None
    if profile is not None:
        progress("profiling the same restart with py-spy")
        spots = hot_spots(profile_start(data_dir, settings, profile))
    progress("compacting (broker with the cleaner on)")
    cleaning = Broker(data_dir, {**settings, "log.cleaner.enable": "true",
                                 "log.cleaner.backoff.ms": "100"})
    try:
        stamp, line = cleaning.wait_for(r"compacted __consumer_offsets-0", 600)
        start_stamp = cleaning.wait_for(r"compacting __consumer_offsets-0", 1)[0]
    finally:
        cleaning.stop()
    compaction = {"line": line.split("roster.cleaner: ", 1)[-1],
                  "wall_s": stamp - start_stamp}
    progress(compaction["line"])
    compacted_segments = segment_files(data_dir)
    progress("timing a restart after compaction")
    after = timed_start(data_dir, settings, True)
    progress(f"listening after {after['listening_s']:.2f} s, loaded after "
             f"{after['loaded_s']:.2f} s")
    shutil.rmtree(data_dir, ignore_errors=True)
    return {"written": written, "before": before, "compaction": compaction,
            "compacted_segments": compacted_segments, "after": after, "hot_spots": spots,
            "segment_bytes": segment_bytes}


# -- report -----------------------------------------------------------------------------------------

def markdown(results: dict) -> str:
    out = []
    env = results["environment"]
    out.append(f"Machine: {env['cpus']} CPU(s), {env['platform']}, Python {env['python']}; "
               f"data directory on {env['filesystem']}.\n")
    if results.get("commits"):
        out.append("| `__consumer_offsets` partitions | committers | commits/s | p50 ms | p99 ms "
                   "| broker CPU µs/commit | raw fsync/s (before, after) | commits/s ÷ fsync/s |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in results["commits"]:
            out.append(f"| {r['offsets_partitions']} | {r['committers']} | "
                       f"{r['commits_per_s']:,.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
                       f"{r['broker_cpu_us_per_commit']:.0f} | {r['fsync_per_s']:,.0f} "
                       f"({r['fsync_per_s_before']:,.0f}, {r['fsync_per_s_after']:,.0f}) | "
                       f"**{r['ratio']:.2f}** |")
            if r["errors"]:
                out.append(f"\n{r['errors']} commits were answered with an error.\n")
        out.append("")
    replay = results.get("replay")
    if replay:
        w = replay["written"]
        out.append(f"{w['records']:,} offset-commit records ({w['keys']:,} keys, "
                   f"{w['records_per_batch']} per batch, {w['bytes'] / 1e6:.1f} MB in "
                   f"{len(w['segments'])} segment(s) of at most {replay['segment_bytes']:,} bytes), "
                   f"written offline in {w['write_s']:.1f} s.\n")
        out.append("| restart | records replayed | process start → `roster listening` | "
                   "process start → `loaded` | replay itself (logged) | target ≤ 10 s |")
        out.append("|---|---|---|---|---|---|")
        for name, r in (("before compaction", replay["before"]),
                        ("after compaction", replay["after"])):
            ok = "met" if r["loaded_s"] <= TARGET_REPLAY_S else "**missed**"
            out.append(f"| {name} | {r['replayed_records']:,} | {r['listening_s']:.2f} s | "
                       f"{r['loaded_s']:.2f} s | {r['replay_s_logged']:.2f} s | {ok} |")
        out.append(f"\nCompaction pass: `{replay['compaction']['line']}`; segments after: "
                   + ", ".join(f"{n} ({s:,} B)" for n, s in replay["compacted_segments"]) + "\n")
        if replay.get("hot_spots"):
            out.append("py-spy, replay before compaction (self time, top functions):\n")
            out.append("| function | self % | inclusive % |")
            out.append("|---|---|---|")
            for name, own, inclusive in replay["hot_spots"]:
                out.append(f"| `{name}` | {own:.1f} | {inclusive:.1f} |")
            out.append("")
    return "\n".join(out)


def filesystem_of(path: Path) -> str:
    try:
        output = subprocess.run(["df", "-T", str(path)], capture_output=True, text=True).stdout
        fields = output.splitlines()[1].split()
        return f"{fields[1]} ({fields[0]})"
    except (OSError, IndexError):
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["commits", "replay"])
    parser.add_argument("--dir", type=Path, help="where data directories go")
    parser.add_argument("--committers", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--fsync-seconds", type=float, default=3.0)
    parser.add_argument("--offsets-partitions", default="50,1",
                        help="offsets.topic.num.partitions values for the commit phase")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=10, help="committed partitions per group")
    parser.add_argument("--records-per-batch", type=int, default=1)
    parser.add_argument("--segment-bytes", type=int, default=104857600,
                        help="offsets.topic.segment.bytes for the replay phase")
    parser.add_argument("--profile", type=Path, help="also profile a replay with py-spy here")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="roster-bench-offsets-", dir=args.dir))
    results: dict = {"environment": {
        "cpus": len(CPUS), "platform": platform.platform(), "python": platform.python_version(),
        "filesystem": filesystem_of(base), "argv": sys.argv[1:]}}
    try:
        if args.only in (None, "commits"):
            results["commits"] = [
                commit_phase(base, int(n), args.committers, args.seconds, args.fsync_seconds)
                for n in args.offsets_partitions.split(",")]
            if CLIENT_CPUS:
                os.sched_setaffinity(0, set(CPUS))
        if args.only in (None, "replay"):
            results["replay"] = replay_phase(base, args.records, args.groups, args.partitions,
                                             args.records_per_batch, args.segment_bytes,
                                             args.profile)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
