#!/usr/bin/env python3
"""Produce and fetch throughput of roster, next to the disk's raw bandwidth and librdkafka's mock.

Each round measures, in this order:

  1. roster (a subprocess): produce with acks=1 and with acks=all, each with both load generators
     (below); read the whole partition back from offset 0, then re-read its last 4000 records 50
     times ("tail fetch");
  2. raw disk: sequential 64 KiB writes of as many bytes as the acks=1 run produced, to a file in
     the same data directory, one fsync at the end; and variants that fsync every N KiB;
  3. rdmock (librdkafka's mock broker, C, in memory): the same produce runs and the tail fetch.
     It keeps only the last 5 MiB of a partition, so it has no read-from-offset-0 row.

and prints roster's throughput as a ratio of the raw disk bandwidth and of the mock's. Records are
1 KiB values in one partition, in ~64 KiB batches, from two load generators:

  * "pipelined": bench/pipelined_producer.py, one connection re-sending one pre-encoded Produce
    request (a valid batch of 63 records) with --pipeline-depth requests in flight. It costs the
    client almost nothing per request, so it measures the broker; --pipelined-records records.
  * "confluent-kafka": a real client (librdkafka, C) producing --records records one by one, with
    batch.size=64 KiB. It saturates its own core below this disk's bandwidth, so these rows
    measure client and broker together.

MB means 10^6 bytes of record values (on disk each record costs ~1% more).

    .venv/bin/python bench/produce_fetch.py                 # one round, Markdown table on stdout
    .venv/bin/python bench/produce_fetch.py --repeat 5      # median of 5 rounds
    .venv/bin/python bench/produce_fetch.py --json          # machine-readable results on stdout
    .venv/bin/python bench/produce_fetch.py --targets roster --seconds 10 --profile /tmp/p.svg

Everything stays on 127.0.0.1; subprocesses and temporary directories are removed even when a step
fails, and every step gives up after --timeout seconds. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from pipelined_producer import PipelinedProducer

REPO = Path(__file__).resolve().parent.parent
RDMOCK = Path(__file__).resolve().parent / "mock_cluster.py"  # librdkafka's, from confluent-kafka
TOPIC = "bench"
PRODUCE_CHUNK = 1000  # records per produce_batch() call
KiB = 1024
MiB = 1024 * KiB


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


@dataclass
class Result:
    target: str          # roster | rdmock | raw disk
    operation: str       # produce acks=1 | produce acks=all | fetch | write+fsync ...
    records: int
    bytes: int
    seconds: float
    errors: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def mb_per_s(self) -> float:
        return self.bytes / self.seconds / 1e6

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds


# -- subprocesses ------------------------------------------------------------------------------

class Service:
    """A subprocess whose first stdout line says it is ready (its address). Later stdout is drained
    by a thread so the process can never block on a full pipe; stderr goes to a log file."""

    def __init__(self, name: str, argv: list[str], log_path: Path, ready: re.Pattern,
                 cpus: set[int] | None, timeout: float) -> None:
        self.name = name
        self.log_path = log_path
        self._log_file = open(log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._log_file,
                                     stdin=subprocess.DEVNULL, text=True, cwd=REPO)
        if cpus:
            pin(self.proc.pid, cpus)  # before it starts worker threads, which inherit the mask
        line = self._first_line(timeout)
        match = ready.search(line)
        if not match:
            self.stop()
            raise RuntimeError(f"{name} did not start: first line {line!r}; see {self.read_log()!r}")
        self.address = match.group(1)
        threading.Thread(target=self._drain, daemon=True).start()

    def _first_line(self, timeout: float) -> str:
        # select() bounds the wait: a broker that dies or hangs before printing must not hang us.
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.stop()
            raise RuntimeError(f"{self.name} printed nothing within {timeout:.0f} s")
        return self.proc.stdout.readline().strip()

    def _drain(self) -> None:
        for _ in self.proc.stdout:
            pass

    def check(self) -> None:
        """Raise at once if the process has exited, rather than letting a client wait it out."""
        if self.proc.poll() is not None:
            tail = "\n".join(self.read_log().splitlines()[-15:])
            raise RuntimeError(f"{self.name} exited with code {self.proc.returncode} during the "
                               f"run; the end of its log:\n{tail}")

    def read_log(self) -> str:
        if not self._log_file.closed:
            self._log_file.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # roster shuts down cleanly on SIGTERM
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                progress(f"{self.name} ignored SIGTERM for 15 s; killing it")
                self.proc.kill()
                self.proc.wait()
        self._log_file.close()
        return self.proc.returncode


def pin(pid: int, cpus: set[int]) -> None:
    """Pin every thread of a process that exists now; threads created later inherit the mask."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(tid), cpus)


class CpuMeter:
    """CPU used during a step by the broker, by this process (the client) and by everything else.

    The machine may be shared (other sessions' test suites, brokers, writeback), so "other" says
    how much a result may have been disturbed. Units: CPUs busy on average over the step."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid
        self.usage: dict = {}

    @staticmethod
    def _machine_busy() -> int:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        return sum(fields) - fields[3] - fields[4]  # all time but idle and iowait

    @staticmethod
    def _process(pid: int | None) -> tuple[int, int]:
        """(user, system) CPU ticks of a process, all threads."""
        if pid is None:
            return 0, 0
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except FileNotFoundError:
            return 0, 0
        return int(fields[11]), int(fields[12])

    def _sample(self) -> tuple:
        return (time.perf_counter(), self._machine_busy(), *self._process(self.broker_pid),
                *self._process(os.getpid()))

    def __enter__(self) -> CpuMeter:
        self._start = self._sample()
        return self

    def __exit__(self, *_) -> None:
        wall, machine, b_user, b_sys, c_user, c_sys = (
            b - a for a, b in zip(self._start, self._sample()))
        per_second = 1 / (os.sysconf("SC_CLK_TCK") * max(wall, 1e-9))
        broker, client = b_user + b_sys, c_user + c_sys
        self.usage = {"broker": round(broker * per_second, 2),
                      "broker_sys": round(b_sys * per_second, 2),  # kernel share: syscalls, page cache
                      "client": round(client * per_second, 2),
                      "other": round(max(machine - broker - client, 0) * per_second, 2)}


def background_load(seconds: float = 1.0) -> float:
    """CPUs kept busy by other processes while this benchmark is idle (nothing of ours runs)."""
    with CpuMeter(None) as meter:
        time.sleep(seconds)
    return meter.usage["other"]


def wait_for_quiet(threshold: float, max_wait: float) -> float:
    """Sample the machine's background load each second until it is below `threshold` CPUs or
    `max_wait` seconds have passed; return the last sample. On a shared machine a round started
    during someone else's test suite measures their load, not ours."""
    started = time.monotonic()
    while True:
        load = background_load()
        waited = time.monotonic() - started
        if load < threshold or waited >= max_wait:
            return load
        if int(waited) % 30 == 0:
            progress(f"background load {load:.2f} CPUs; waiting for it to drop below {threshold}")


# -- load generator ----------------------------------------------------------------------------

def flush(producer: Producer, broker: Service, give_up: float) -> None:
    """flush() in one-second slices, so a dead broker or a stall ends the run promptly."""
    while producer.flush(1) > 0:
        broker.check()
        if time.perf_counter() > give_up:
            raise RuntimeError(f"{len(producer)} records still undelivered after the timeout")


def produce(broker: Service, acks: str, args, value: bytes) -> Result:
    """Produce --records values (or for --seconds) and time it up to the end of flush()."""
    errors = []

    def on_error(err, _msg):  # with delivery.report.only.error, called for failures only
        if err is not None:
            errors.append(str(err))

    producer = Producer({
        "bootstrap.servers": broker.address,
        "acks": acks,
        "compression.type": "none",
        "enable.idempotence": False,
        # batch.size (bytes, framing included) closes batches at ~64 KiB; the message-count limit
        # is set out of the way, and linger.ms only matters for the tail of the run.
        "batch.size": args.batch_bytes,
        "batch.num.messages": 1_000_000,
        "linger.ms": args.linger_ms,
        # A bounded client queue: the producer cannot run ahead of the broker by more than this.
        "queue.buffering.max.kbytes": 64 * 1024,
        "queue.buffering.max.messages": 1_000_000,
        "delivery.report.only.error": True,
        "on_delivery": on_error,
    })
    try:
        # Warm-up: connection, metadata and the topic exist before the clock starts.
        producer.produce(TOPIC, value, partition=0)
        flush(producer, broker, time.perf_counter() + args.timeout)
        sent = 0
        limit = args.records if args.seconds is None else 1 << 62
        start = time.perf_counter()
        stop_at = start + args.seconds if args.seconds is not None else None
        give_up = start + args.timeout
        pending: list[dict] = []
        while sent < limit:
            # produce_batch hands librdkafka a thousand records per call: a Python loop around
            # produce() costs a fifth to a third of the client's throughput, and the client is
            # the bottleneck against the C mock. Values are identical, so retrying refused
            # records out of order changes nothing.
            if not pending:
                pending = [{"value": value} for _ in range(min(PRODUCE_CHUNK, limit - sent))]
            queued = producer.produce_batch(TOPIC, pending, partition=0)
            sent += queued
            if queued < len(pending):  # the client queue is full: let librdkafka drain it
                pending = [{"value": value} for m in pending if "_error" in m]
                producer.poll(0.001)
                broker.check()
                if time.perf_counter() > give_up:
                    raise RuntimeError(f"produce stalled after {sent} records")
            else:
                pending = []
            if stop_at is not None and time.perf_counter() >= stop_at:
                break
        flush(producer, broker, give_up)
        elapsed = time.perf_counter() - start
    finally:
        producer.flush(0)
    if errors:
        progress(f"  {len(errors)} delivery errors, first: {errors[0]}")
    return Result("", f"produce acks={acks}, {CONFLUENT}", sent, sent * len(value), elapsed,
                  len(errors), {"first_error": errors[0]} if errors else {})


CONFLUENT = "confluent-kafka"
PIPELINED = "pipelined"


def produce_pipelined(broker: Service, acks: str, args, value: bytes) -> Result:
    """Produce --pipelined-records values (rounded up to whole batches) with the raw-socket load
    generator, --pipeline-depth requests in flight; timed from the first request sent to the last
    response read. A response that is not a success, or whose base offset does not follow the
    previous one by exactly one batch, ends the run with an error."""
    with PipelinedProducer(broker.address, TOPIC, 0, -1 if acks == "all" else int(acks), value,
                           args.batch_bytes, args.timeout) as producer:
        producer.run(2, 1, args.timeout)  # warm-up: connection, topic, first segment
        requests = -(-args.pipelined_records // producer.records_per_batch)
        stats = producer.run(requests, args.pipeline_depth, args.timeout)
    return Result("", f"produce acks={acks}, {PIPELINED}", stats.records, stats.value_bytes,
                  stats.seconds, extra={"produce_version": producer.version,
                                        "records_per_batch": producer.records_per_batch,
                                        "batch_bytes": len(producer.batch),
                                        "pipeline_depth": args.pipeline_depth})


def consumer_for(bootstrap: str, **extra) -> Consumer:
    return Consumer({
        "bootstrap.servers": bootstrap,
        # confluent-kafka insists on a group.id; with assign() and no commits no group is joined.
        "group.id": "roster-bench",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        **extra,
    })


def read_until(consumer: Consumer, broker: Service, last_offset: int, count: int,
               give_up: float) -> tuple[int, int, str | None]:
    """Consume until the record at last_offset arrives: (records, errors, first error).

    consume(n, timeout) returns early only once n messages are ready, so n is kept at most the
    number still expected (offsets are contiguous here); otherwise the last call of every read
    would sit out its whole timeout."""
    received = errors = 0
    first_error = None
    while True:
        broker.check()
        if time.perf_counter() > give_up:
            raise RuntimeError(f"fetch stalled after {received} records, short of offset {last_offset}")
        for message in consumer.consume(max(1, min(10_000, count - received)), 0.5):
            if message.error():
                errors += 1
                first_error = first_error or str(message.error())
                continue
            received += 1
            if message.offset() >= last_offset:
                return received, errors, first_error


def fetch_all(broker: Service, args, record_size: int) -> Result:
    """Catch-up read: the whole partition from offset 0 to its end, one consumer."""
    consumer = consumer_for(broker.address)
    try:
        # Warm-up, as for producing: connection and metadata are in place before the clock starts.
        _, end = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=args.timeout)
        start = time.perf_counter()
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        received, errors, first_error = read_until(consumer, broker, end - 1, end, start + args.timeout)
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    return Result("", "fetch all from offset 0", received, received * record_size, elapsed, errors,
                  {"first_error": first_error} if first_error else {})


def fetch_tail(broker: Service, args, record_size: int) -> Result:
    """Re-read the last --tail-records records --tail-passes times.

    librdkafka's mock keeps only the last 5 MiB of a partition (rdkafka_mock.c: max_size), so a
    read from offset 0 cannot be compared with it; this is the fetch workload both can serve. Each
    pass re-assigns the partition at the window's start. fetch.wait.max.ms is short because at the
    end of each pass the client's next fetch long-polls at the log end, and the re-assign waits
    for that fetch to come back; with the default 500 ms that wait would dominate."""
    consumer = consumer_for(broker.address, **{"fetch.wait.max.ms": 5})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=args.timeout)
        window = min(args.tail_records, high - low)
        received = errors = 0
        first_error = None
        start = time.perf_counter()
        for _ in range(args.tail_passes):
            consumer.assign([TopicPartition(TOPIC, 0, high - window)])
            got, bad, problem = read_until(consumer, broker, high - 1, window, start + args.timeout)
            received, errors = received + got, errors + bad
            first_error = first_error or problem
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    if received != window * args.tail_passes:
        progress(f"  tail fetch: {received} records, expected {window * args.tail_passes}")
    return Result("", f"fetch last {window} x{args.tail_passes}", received, received * record_size,
                  elapsed, errors, {"first_error": first_error} if first_error else {})


def run_workload(target: str, broker: Service, args, value: bytes, full_fetch: bool) -> list[Result]:
    results = []

    def step(name, run, *step_args) -> None:
        profiler = start_profiler(args, broker.proc.pid, name) if target == "roster" else None
        try:
            with CpuMeter(broker.proc.pid) as meter:
                result = run(broker, *step_args)
        finally:
            stop_profiler(profiler)
        result.target = target
        result.extra["cpu"] = meter.usage
        progress(f"  {result.mb_per_s:.1f} MB/s, {result.records_per_s:,.0f} records/s, "
                 f"CPUs busy: {meter.usage}")
        results.append(result)

    generators = {PIPELINED: produce_pipelined, CONFLUENT: produce}
    for acks in ("1", "all"):
        for name in args.loadgen:
            progress(f"{target}: produce acks={acks}, {name}")
            step(f"produce-acks-{acks}-{name}", generators[name], acks, args, value)
    if full_fetch:
        progress(f"{target}: fetch every record from offset 0")
        step("fetch-all", fetch_all, args, len(value))
    progress(f"{target}: fetch the last {args.tail_records} records {args.tail_passes} times")
    step("fetch-tail", fetch_tail, args, len(value))
    return results


# -- roster and its data directory -------------------------------------------------------------

def run_roster(args, workdir: Path, value: bytes, cpus) -> tuple[list[Result], dict]:
    data_dir = workdir / "roster-data"
    argv = [sys.executable, "-m", "roster", "serve", "--host", "127.0.0.1", "--port", "0",
            "--data-dir", str(data_dir)]
    for assignment in args.set:
        argv += ["--set", assignment]
    roster = Service("roster", argv, workdir / "roster.log",
                     re.compile(r"roster listening on (\S+:\d+)"), cpus, args.timeout)
    try:
        subprocess.run([sys.executable, "-m", "roster", "topics", "--bootstrap-server",
                        roster.address, "create", TOPIC, "--partitions", "1"],
                       check=True, cwd=REPO, timeout=args.timeout, capture_output=True)
        results = run_workload("roster", roster, args, value, full_fetch=True)
        roster.check()
    finally:
        code = roster.stop()
        log_text = roster.read_log()
    if args.keep_log:
        shutil.copyfile(roster.log_path, args.keep_log)
    info = {"exit_code": code, "log_lines": len(log_text.splitlines()),
            "log_warnings_and_errors": notable_records(log_text),
            **segment_stats(data_dir / f"{TOPIC}-0")}
    return results, info


TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ ")  # how each roster log record starts


def notable_records(log_text: str) -> list[str]:
    """The WARNING/ERROR/CRITICAL records of a roster log, each with the traceback under it."""
    records, current = [], None
    for line in log_text.splitlines():
        if TIMESTAMP.match(line):
            current = None
            if re.search(r" (WARNING|ERROR|CRITICAL) ", line):
                current = [line]
                records.append(current)
        elif current is not None:
            current.append(line)
    return ["\n".join(record) for record in records]


def segment_stats(partition_dir: Path) -> dict:
    """Walk roster's segment files (batches back to back, Kafka's layout) to report how big the
    batches that reached the log really were — the benchmark asks for ~64 KiB."""
    sizes, counts = [], []
    on_disk = 0
    for path in sorted(partition_dir.glob("*.log")):
        on_disk += path.stat().st_size
        with open(path, "rb") as f:  # read only the 61-byte batch headers, not gigabytes of data
            while len(head := f.read(61)) == 61:
                (length,) = struct.unpack_from(">i", head, 8)       # batchLength
                (records,) = struct.unpack_from(">i", head, 57)     # recordCount
                sizes.append(12 + length)
                counts.append(records)
                f.seek(12 + length - 61, os.SEEK_CUR)
    if not sizes:
        return {}
    return {"log_bytes_on_disk": on_disk, "batches": len(sizes),
            "median_batch_bytes": int(statistics.median(sizes)),
            "median_records_per_batch": int(statistics.median(counts))}


def start_profiler(args, pid: int, step: str):
    """py-spy samples roster during one step into <--profile>-<step>.<ext>; the extension picks
    the format: .svg flame graph, .json speedscope, anything else py-spy's raw collapsed stacks."""
    if not args.profile:
        return None
    py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if not py_spy:
        raise RuntimeError("--profile needs py-spy: .venv/bin/pip install py-spy")
    base = Path(args.profile).resolve()
    out = base.with_name(f"{base.stem}-{step}{base.suffix or '.txt'}")
    out.parent.mkdir(parents=True, exist_ok=True)
    fmt = {".svg": "flamegraph", ".json": "speedscope"}.get(out.suffix, "raw")
    progress(f"py-spy samples roster (pid {pid}) into {out}")
    # --nonblocking: sample without stopping roster, so profiling barely slows the run down.
    profiler = subprocess.Popen([py_spy, "record", "--pid", str(pid), "--rate", "250",
                                 "--nonblocking", "--threads", "--format", fmt, "--output", str(out)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    profiler.started = time.perf_counter()
    return profiler


def stop_profiler(profiler) -> None:
    if profiler is not None and profiler.poll() is None:
        # py-spy's own CPU shows up as "other" load; say how much of it was py-spy.
        used = sum(CpuMeter._process(profiler.pid)) / os.sysconf("SC_CLK_TCK")
        progress(f"  py-spy itself used {used / (time.perf_counter() - profiler.started):.2f} CPUs")
        profiler.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        try:
            _, errors = profiler.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            profiler.kill()
            _, errors = profiler.communicate()
        if profiler.returncode:
            progress(f"py-spy failed: {errors.strip()[-500:]}")


# -- raw disk ----------------------------------------------------------------------------------

def raw_disk(directory: Path, total: int, fsync_every: int | None, max_seconds: float) -> Result:
    """Sequential 64 KiB writes to a new file in `directory`, fsync every `fsync_every` bytes (None:
    once, at the end), timed to the end of the last fsync. Stops early after max_seconds so a slow
    fsync-heavy variant cannot run for minutes; the rate is then over what was written."""
    chunk = os.urandom(64 * KiB)
    path = directory / "raw-disk-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    fsyncs = written = since_sync = 0
    try:
        start = time.perf_counter()
        while written < total:
            written += os.write(fd, chunk[:min(len(chunk), total - written)])
            since_sync += len(chunk)
            if fsync_every is not None and since_sync >= fsync_every:
                os.fsync(fd)
                fsyncs += 1
                since_sync = 0
                if time.perf_counter() - start > max_seconds:
                    break
        os.fsync(fd)
        fsyncs += 1
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink()
    label = "write+fsync at end" if fsync_every is None else f"write+fsync every {human(fsync_every)}"
    return Result("raw disk", label, -(-written // len(chunk)), written, elapsed,
                  extra={"fsyncs": fsyncs, "ms_per_fsync_upper_bound": 1000 * elapsed / fsyncs})


def human(size: int) -> str:
    return f"{size // MiB} MiB" if size % MiB == 0 else f"{size // KiB} KiB"


def run_raw_disk(args, workdir: Path, total: int) -> list[Result]:
    """Each variant --raw-repeats times; the median run is reported (this VM's disk is noisy)."""
    results = []
    for every in [None] + [kib * KiB for kib in args.fsync_every]:
        progress(f"raw disk: {total / 1e6:.0f} MB in 64 KiB writes, "
                 + ("one fsync" if every is None else f"fsync every {human(every)}"))
        runs = []
        for _ in range(args.raw_repeats):
            # Start from a quiet disk: dirty pages left by roster or by the previous run would
            # otherwise be written back during (and charged to) this one.
            os.sync()
            with CpuMeter(None) as meter:
                runs.append(raw_disk(workdir, total, every, args.raw_max_seconds))
            runs[-1].extra["cpu"] = meter.usage
        runs.sort(key=lambda r: r.mb_per_s)
        median = runs[len(runs) // 2]
        median.extra["runs_mb_per_s"] = [round(r.mb_per_s, 1) for r in runs]
        progress(f"  {median.mb_per_s:.1f} MB/s (runs: {median.extra['runs_mb_per_s']})")
        results.append(median)
    return results


# -- rdmock ------------------------------------------------------------------------------------

def run_rdmock(args, workdir: Path, value: bytes, cpus) -> list[Result]:
    mock = Service("rdmock", [sys.executable, str(RDMOCK), "--topics", TOPIC],
                   workdir / "rdmock.log", re.compile(r"^(\S+:\d+)$"), cpus, args.timeout)
    try:
        if not mock.address.startswith(("127.0.0.1:", "localhost:")):
            raise RuntimeError(f"rdmock is not on loopback: {mock.address}")
        # No read from offset 0: the mock has dropped all but the last 5 MiB by then.
        return run_workload("rdmock", mock, args, value, full_fetch=False)
    finally:
        mock.stop()


# -- report ------------------------------------------------------------------------------------

def medians(rounds: list[list[Result]], quiet_below: float) -> list[Result]:
    """Per (target, operation), the median round by MB/s among the rounds in which other processes
    used fewer than `quiet_below` CPUs during that step; among all rounds if none was that quiet.
    Every round's MB/s is kept beside it, so the spread stays visible."""
    groups: dict[tuple, list[Result]] = {}
    for run in rounds:
        for r in run:
            groups.setdefault((r.target, r.operation), []).append(r)
    out = []
    for group in groups.values():
        quiet = [r for r in group if r.extra.get("cpu", {}).get("other", 0) < quiet_below]
        pool = sorted(quiet or group, key=lambda r: r.mb_per_s)
        chosen = pool[(len(pool) - 1) // 2]  # of an even count, the lower middle
        chosen.extra["rounds_mb_per_s"] = [round(r.mb_per_s, 1) for r in group]
        chosen.extra["quiet_rounds"] = len(quiet)
        out.append(chosen)
    return out


def ratios(results: list[Result]) -> dict:
    by = {(r.target, r.operation): r for r in results}
    raw = by.get(("raw disk", "write+fsync at end"))
    out = {}
    for mine in (r for r in results if r.target == "roster"):
        mock = by.get(("rdmock", mine.operation))
        if mock:
            out[f"roster/rdmock {mine.operation}"] = mine.mb_per_s / mock.mb_per_s
        if raw and mine.operation.startswith("produce"):
            out[f"roster/raw disk {mine.operation}"] = mine.mb_per_s / raw.mb_per_s
    return out


def ratios_by_round(rounds: list[list[Result]]) -> dict:
    """Each ratio of ratios(), computed within every round: the medians of the rows come from
    different rounds, while a round's roster and raw-disk runs saw the same machine minutes
    apart, so these say how often the target was met."""
    out: dict[str, list[float]] = {}
    for run in rounds:
        for name, value in ratios(run).items():
            out.setdefault(name, []).append(round(value, 2))
    return out


def machine() -> dict:
    disk = subprocess.run(["df", "-hT", str(REPO)], capture_output=True, text=True).stdout
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {"nproc": os.cpu_count(), "memory_gib": round(mem_kib / MiB, 1),
            "python": platform.python_version(), "platform": platform.platform(),
            "df": disk.strip().splitlines()[-1] if disk else ""}


def print_table(results: list[Result], table_ratios: dict, roster_info: dict, meta: dict) -> None:
    """A Markdown table, so a run can be pasted into docs/benchmarks.md as it is."""
    raw = next((r for r in results if r.operation == "write+fsync at end"), None)
    mocks = {r.operation: r for r in results if r.target == "rdmock"}
    print(f"\n{meta['records_label']}, 1 partition, batch.size={meta['batch_bytes']}, "
          f"linger.ms={meta['linger_ms']}; {meta['pinning']}\n")
    several = any(len(r.extra.get("rounds_mb_per_s", ())) > 1 for r in results)
    if several:
        print(f"Each row is the median of the {meta['rounds']} rounds, counting only those in which "
              f"other processes used < {meta['quiet_below']} CPUs during that step (all rounds if "
              f"none did).\n")
    print("| target | operation | MB/s | records/s | roster ÷ raw disk | roster ÷ rdmock "
          "| CPUs busy: broker (sys) / client / other |" + (" MB/s of each round |" if several else ""))
    print("|---|---|--:|--:|--:|--:|--:|" + ("--:|" if several else ""))
    for r in results:
        vs_raw = f"{r.mb_per_s / raw.mb_per_s:.2f}" if raw and r.target == "roster" \
            and r.operation.startswith("produce") else ""
        vs_mock = f"{r.mb_per_s / mocks[r.operation].mb_per_s:.2f}" if r.target == "roster" \
            and r.operation in mocks else ""
        rate = f"{r.records_per_s:,.0f}" if r.target != "raw disk" else ""
        cpu = r.extra.get("cpu", {})
        cpu_text = ""
        if cpu:
            broker = "–" if r.target == "raw disk" else f"{cpu['broker']:.2f} ({cpu['broker_sys']:.2f})"
            cpu_text = f"{broker} / {cpu['client']:.2f} / {cpu['other']:.2f}"
        errors = f" ({r.errors} errors)" if r.errors else ""
        rounds = (" " + ", ".join(f"{x:.0f}" for x in r.extra["rounds_mb_per_s"])
                  + f" ({r.extra['quiet_rounds']} quiet) |") if several else ""
        print(f"| {r.target} | {r.operation}{errors} | {r.mb_per_s:.1f} | {rate} | {vs_raw} | "
              f"{vs_mock} | {cpu_text} |{rounds}")
    print()
    disturbed = [f"{r.target} {r.operation}" for r in results
                 if r.extra.get("cpu", {}).get("other", 0) >= meta["quiet_below"]]
    if disturbed:
        print(f"warning: other processes used >= {meta['quiet_below']} CPUs during: "
              f"{', '.join(disturbed)}; those rows are not representative (try --repeat 5 "
              f"--quiet-wait 900)\n")
    per_round = meta.get("ratios_by_round", {})
    for name, value in table_ratios.items():
        rounds = per_round.get(name, [])
        print(f"{name}: {value:.2f}" + (f" (each round: {', '.join(f'{x:.2f}' for x in rounds)}; "
                                         f"median {statistics.median(rounds):.2f})"
                                         if len(rounds) > 1 else ""))
    headline = f"roster/raw disk produce acks=1, {PIPELINED}"
    met = table_ratios.get(headline)
    if met is not None:
        rounds = per_round.get(headline, [])
        print(f"target (produce acks=1 >= 0.50 of raw disk, {PIPELINED} load generator): "
              f"{'met' if met >= 0.5 else 'NOT met'} by the medians"
              + (f"; met in {sum(x >= 0.5 for x in rounds)} of {len(rounds)} rounds"
                 if len(rounds) > 1 else ""))
    if roster_info.get("batches"):
        print(f"roster log: {roster_info['batches']} batches, median "
              f"{roster_info['median_batch_bytes']} bytes / {roster_info['median_records_per_batch']}"
              f" records per batch, {roster_info['log_bytes_on_disk'] / 1e6:.1f} MB on disk")
    for record in roster_info.get("log_warnings_and_errors", []):
        print("roster log: " + record.replace("\n", "\n    "))


# -- main --------------------------------------------------------------------------------------

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=300_000,
                    help="records per confluent-kafka produce run (default 300000, i.e. ~300 MB)")
    ap.add_argument("--pipelined-records", type=int, default=600_000,
                    help="records per pipelined produce run, rounded up to whole batches "
                         "(default 600000, i.e. ~600 MB)")
    ap.add_argument("--pipeline-depth", type=int, default=16,
                    help="Produce requests in flight on the pipelined connection (default 16)")
    ap.add_argument("--loadgen", type=lambda s: [x for x in s.split(",") if x],
                    default=[PIPELINED, CONFLUENT], metavar="NAME,...",
                    help=f"produce load generators to run, in order (default "
                         f"{PIPELINED},{CONFLUENT})")
    ap.add_argument("--seconds", type=float,
                    help="produce for this long per run instead of a fixed --records")
    ap.add_argument("--record-size", type=int, default=KiB, help="value bytes (default 1024)")
    ap.add_argument("--batch-bytes", type=int, default=64 * KiB,
                    help="producer batch.size (default 65536)")
    ap.add_argument("--linger-ms", type=int, default=5, help="producer linger.ms (default 5)")
    ap.add_argument("--tail-records", type=int, default=4000,
                    help="window re-read by the tail fetch; must fit the mock's 5 MiB (default 4000)")
    ap.add_argument("--tail-passes", type=int, default=50,
                    help="how many times the tail window is read (default 50)")
    ap.add_argument("--fsync-every", type=lambda s: [int(x) for x in s.split(",") if x],
                    default=[64, 8 * 1024], metavar="KIB,...",
                    help="raw-disk variants that fsync every N KiB (default 64,8192; '' for none)")
    ap.add_argument("--raw-repeats", type=int, default=3,
                    help="runs of each raw-disk variant; the median is reported (default 3)")
    ap.add_argument("--raw-max-seconds", type=float, default=5,
                    help="cut a fsync-heavy raw-disk run short after this long (default 5)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="passed to `roster serve --set` (repeatable)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of the whole sequence; each row reports the median round (default 1)")
    ap.add_argument("--quiet-below", type=float, default=0.4, metavar="CPUS",
                    help="a step is 'quiet' if other processes (kernel writeback included) used "
                         "fewer CPUs than this during it; rows report the median of the quiet "
                         "rounds when there are any. Also the --quiet-wait threshold. (default 0.4)")
    ap.add_argument("--quiet-wait", type=float, default=0, metavar="SECONDS",
                    help="before each round, wait up to this long for the background load to "
                         "drop below --quiet-below (default 0: don't wait)")
    ap.add_argument("--targets", default="roster,raw,rdmock",
                    help="comma list of roster, raw, rdmock (default all three)")
    ap.add_argument("--no-pin", action="store_true",
                    help="do not pin the broker and the client to different CPUs")
    ap.add_argument("--profile", metavar="FILE",
                    help="py-spy record roster, one file per step named FILE-<step> "
                         "(.svg flame graph, .json speedscope, else raw collapsed stacks)")
    ap.add_argument("--timeout", type=float, default=180,
                    help="give up on any single step after this many seconds (default 180)")
    ap.add_argument("--workdir", type=Path, default=REPO / ".bench-tmp",
                    help="parent of the temporary data directory; must be on the disk under test, "
                         "not a tmpfs (default: .bench-tmp in the repository)")
    ap.add_argument("--keep-log", metavar="FILE", help="copy roster's log here before cleaning up")
    ap.add_argument("--json", nargs="?", const="-", metavar="FILE",
                    help="results as JSON: on stdout instead of the table, or into FILE as well")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    targets = set(args.targets.split(","))
    # SIGTERM becomes SystemExit so the finally blocks below stop subprocesses and remove files.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    # Two CPUs: broker (roster or rdmock, with its fsync thread) on one, this process (the Python
    # produce loop and librdkafka's threads) on the other, so neither steals the other's core.
    available = sorted(os.sched_getaffinity(0))
    broker_cpus = client_cpus = None
    pinning = "no CPU pinning"
    if not args.no_pin and len(available) >= 2:
        broker_cpus, client_cpus = {available[0]}, {available[1]}
        os.sched_setaffinity(0, client_cpus)  # before librdkafka starts threads; they inherit it
        pinning = f"broker pinned to CPU {available[0]}, client to CPU {available[1]}"
    progress(pinning)

    value = os.urandom(args.record_size)  # incompressible, though compression is off anyway
    rounds: list[list[Result]] = []
    roster_info: dict = {}
    exit_codes = []
    log_records: list[str] = []
    created_parent = not args.workdir.exists()
    args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="produce-fetch-", dir=args.workdir))
    try:
        # Rounds interleave the targets (roster, raw, rdmock, roster, ...) so that a burst of
        # outside load on a shared machine spreads over all of them rather than hitting one.
        for number in range(1, args.repeat + 1):
            load = wait_for_quiet(args.quiet_below, args.quiet_wait)
            progress(f"round {number} of {args.repeat}; background load before it: {load:.2f} CPUs")
            round_dir = workdir / f"round-{number}"
            round_dir.mkdir()
            results: list[Result] = []
            if "roster" in targets:
                roster_results, roster_info = run_roster(args, round_dir, value, broker_cpus)
                exit_codes.append(roster_info["exit_code"])
                log_records += roster_info["log_warnings_and_errors"]
                results += roster_results
            if "raw" in targets:
                produced = [r.bytes for r in results if r.operation.startswith("produce acks=1,")]
                total = max(produced) if produced else (args.records * args.record_size)
                results += run_raw_disk(args, round_dir, total)
            if "rdmock" in targets:
                results += run_rdmock(args, round_dir, value, broker_cpus)
            rounds.append(results)
            shutil.rmtree(round_dir, ignore_errors=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if created_parent:
            with contextlib.suppress(OSError):
                args.workdir.rmdir()

    # Every round's warnings, each distinct one once, with how often it came (timestamps differ).
    counts: dict[str, int] = {}
    first: dict[str, str] = {}
    for record in log_records:
        key = re.sub(r" at 0x[0-9a-f]+", "", TIMESTAMP.sub("", record))
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, record)
    roster_info["log_warnings_and_errors"] = [
        f"[{counts[key]}x] {record}" if counts[key] > 1 else record for key, record in first.items()]
    results = medians(rounds, args.quiet_below)
    table_ratios = ratios(results)
    meta = {"records_label": (f"{args.seconds:g} s per {CONFLUENT} produce run" if args.seconds
                              else f"{args.records} records per {CONFLUENT} produce run")
            + f", {args.pipelined_records} per {PIPELINED} run (depth {args.pipeline_depth}),"
              f" values of {args.record_size} B",
            "batch_bytes": args.batch_bytes, "linger_ms": args.linger_ms, "pinning": pinning,
            "rounds": args.repeat, "quiet_below": args.quiet_below,
            "ratios_by_round": ratios_by_round(rounds)}
    if args.json:
        out = sys.stdout if args.json == "-" else open(args.json, "w")
        json.dump({"machine": machine(), "config": {**meta, "roster_set": args.set},
                   "results": [{**asdict(r), "mb_per_s": r.mb_per_s, "records_per_s": r.records_per_s}
                               for r in results],
                   "ratios": table_ratios, "roster": roster_info,
                   "rounds": [[{**asdict(r), "mb_per_s": r.mb_per_s} for r in run] for run in rounds]},
                  out, indent=2)
        print(file=out)
        if out is not sys.stdout:
            out.close()
    if args.json != "-":
        print_table(results, table_ratios, roster_info, meta)
    failed = any(r.errors for run in rounds for r in run) or any(exit_codes)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, KafkaException, subprocess.CalledProcessError) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        sys.exit(1)
