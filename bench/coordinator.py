#!/usr/bin/env python3
"""Coordinator benchmark: roster next to librdkafka's mock cluster (C) and a bare Python echo
peer, in one run, with ratios.

  heartbeat  10,000 static members (100 groups x 100) are formed, then their Heartbeat v3 frames
             are sent pipelined over 16 connections (128 in flight on each, members spread
             round-robin) for --hb-seconds after a 1 s warm-up: answers/s, and answers per
             broker-CPU-second (utime+stime of the broker process from /proc).
  rebalance  a group of N members (one connection each: a JoinGroup is a long poll and occupies
             its connection) is formed, then every member sends JoinGroup again with new
             metadata, back to back; time from the last JoinGroup written to the moment every
             member holds its SyncGroup answer in the new generation. N = 100, 1,000, 10,000.
  memory     100,000 idle static members in 10,000 groups of 10 (session timeout 120 s, no
             heartbeats): growth of the broker's RSS divided by the number of members. The
             baseline is taken after the connection pool is open and 200 warm-up groups formed.
             The mock finds a group by a linear scan, so forming 10,000 groups takes it ~6 min:
             it is measured with 20,000 members in 2,000 groups of 10 unless told otherwise.
  breakdown  roster's GroupRuntime driven in this process under tracemalloc (no sockets, no
             log): which lines of roster hold a member's bytes.
  consumer   KIP-848 next to the classic protocol (roster only; bench/coordinator_consumer.py):
             ConsumerGroupHeartbeat/s with 10,000 members against Heartbeat/s in one broker,
             in interleaved rounds (medians); a member joining a 1,000-member consumer group
             until every partition has its new owner; the server-side assignors on 1,000
             members x 10,000 partitions.

Peers:
  rdmock     librdkafka's mock cluster (C, from the confluent-kafka wheel: bench/mock_cluster.py,
             `test.mock.num.brokers`), pinned like roster. It holds every rebalance of a
             non-empty group for session.timeout.ms - 1 s, so its rebalance time measures that
             timer, not its speed; the rebalance is compared with the floor. Its first-join
             timer (group.initial.rebalance.delay.ms, 3 s, not configurable through librdkafka's
             properties) lets each group form in one generation; the timed rebalances never
             use that timer.
  echo       `bench/loadgen.py echo`: a uvloop Protocol server answering every frame at once
             with a canned answer of the same size (the leader's JoinGroup answer lists all N
             members). It is the Python networking floor for the same frames and client.

Every phase runs against a fresh broker process (pinned to CPU 0; this process to CPU 1) so no
phase inherits another's groups or garbage. roster runs with
--set group.initial.rebalance.delay.ms=0; its SyncGroup answers wait for the group record's
fsync in __consumer_offsets (group-committed).

    .venv/bin/python bench/coordinator.py                       # everything, ~6 min
    .venv/bin/python bench/coordinator.py --sizes 100,1000      # without the 10,000 group
    .venv/bin/python bench/coordinator.py --only roster --phases heartbeat,rebalance \
        --sizes 1000 --profile /tmp/prof --profile-phases heartbeat,rebalance
    .venv/bin/python bench/coordinator.py --json results.json --markdown report.md
    .venv/bin/python bench/coordinator.py --only roster --phases consumer   # KIP-848, ~2 min

The machine is shared: before each measurement the run waits (briefly) for other processes to
go quiet, and every table shows how many CPUs the rest of the machine used meanwhile. Rates per
broker-CPU-second are the figures to compare when that column is not ~0.

Everything stays on 127.0.0.1. Subprocesses and temporary directories are removed even when a
step fails; a watchdog ends the run after --max-seconds. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import platform
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loadgen  # noqa: E402
from loadgen import (  # noqa: E402
    BenchError,
    Blaster,
    GroupDriver,
    GroupSpec,
    close_all,
    form_groups,
    leader_client_id,
    open_conns,
)

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
RDMOCK = Path(__file__).resolve().parent / "mock_cluster.py"
TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
KiB = 1024

TARGET_HEARTBEATS = 30_000
TARGET_REBALANCE_1000_S = 1.0
TARGET_BYTES_PER_MEMBER = 4 * KiB


def progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- processes ----------------------------------------------------------------------------------

BROKER_CPUS: set[int] | None = None
CLIENT_CPUS: set[int] | None = None


def _child_setup() -> None:
    import ctypes
    import resource
    # die with this process, however it ends (even SIGKILL): no broker is ever left behind
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if BROKER_CPUS:
        os.sched_setaffinity(0, BROKER_CPUS)  # threads started later inherit it


class Service:
    """A pinned subprocess whose first stdout line gives its address."""

    def __init__(self, name: str, argv: list[str], ready: str, log_path: Path,
                 timeout_s: float = 30.0) -> None:
        self.name = name
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._log,
                                     stdin=subprocess.DEVNULL, text=True, cwd=REPO,
                                     preexec_fn=_child_setup,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        readable, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        line = self.proc.stdout.readline().strip() if readable else ""
        match = re.search(ready, line)
        if not match:
            self.stop()
            raise RuntimeError(f"{name} did not start (first line {line!r}); log: "
                               f"{self.read_log()[-2000:]}")
        host, _, port = match.group(1).rpartition(":")
        self.host, self.port = host, int(port)
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited with code {self.proc.returncode}; end of "
                               f"its log:\n{self.read_log()[-3000:]}")

    def cpu_s(self) -> float:
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (all threads)

    def rss(self) -> int:
        with open(f"/proc/{self.pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE

    def read_log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                progress(f"{self.name} ignored SIGTERM for 20 s; killing it")
                self.proc.kill()
                self.proc.wait()
        if not self._log.closed:
            self._log.close()


class Targets:
    """Starts fresh brokers of each kind and keeps what their logs said."""

    def __init__(self, workdir: Path, args) -> None:
        self.workdir = workdir
        self.args = args
        self.count = 0
        self.live: list[Service] = []
        self.logs: dict[str, list[str]] = collections.defaultdict(list)

    def start(self, target: str, label: str, settings: tuple[str, ...] = ()) -> Service:
        """A fresh broker; `settings`: roster --set key=value for this phase only."""
        self.count += 1
        log_path = self.workdir / f"{self.count:02d}-{target}-{label}.log"
        if target == "roster":
            data = self.workdir / f"data-{self.count:02d}"
            gc_setup = {"off": "gc.disable()",
                        "tuned": "import roster.cli, roster.broker.network.server; gc.freeze(); "
                                 "gc.set_threshold(50_000, 50, 100)"}
            launcher = ["-m", "roster"] if self.args.roster_gc == "default" else [
                "-c", f"import gc, runpy, sys; {gc_setup[self.args.roster_gc]}; "
                      "sys.argv[0] = 'roster'; "
                      "runpy.run_module('roster', run_name='__main__', alter_sys=True)"]
            # the group of 10,000's record (1.6 MB) is over the default message.max.bytes,
            # which __consumer_offsets follows as on Kafka: its SyncGroup would fail
            argv = [PYTHON, *launcher, "serve", "--host", "127.0.0.1", "--port", "0",
                    "--data-dir", str(data), "--set", "group.initial.rebalance.delay.ms=0",
                    "--set", "message.max.bytes=67108864"]
            for setting in (*settings, *self.args.set):
                argv += ["--set", setting]
            service = Service("roster", argv, r"roster listening on (\S+)", log_path)
        elif target == "rdmock":
            argv = [PYTHON, str(RDMOCK), "--topics", "t"]
            service = Service("rdmock", argv, r"^(\S+:\d+)", log_path)
        elif target == "echo":
            sizes = ",".join(str(s) for s in self.args.sizes)
            argv = [PYTHON, str(Path(__file__).parent / "loadgen.py"), "echo", "--sizes", sizes]
            service = Service("echo", argv, r"echo listening on (\S+)", log_path)
        else:
            raise ValueError(target)
        self.live.append(service)
        return service

    def stop(self, service: Service, label: str) -> None:
        service.stop()
        self.live.remove(service)
        if service.name == "roster":
            self.logs[label] = notable(service.read_log())

    def stop_all(self) -> None:
        for service in list(self.live):
            service.stop()
        self.live.clear()


def notable(log_text: str) -> list[str]:
    """A summary of a roster log: line counts per level, and every WARNING/ERROR line kind."""
    levels = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    examples: dict[str, str] = {}
    for line in log_text.splitlines():
        match = re.match(r"\S+ \S+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) (\S+): (.*)", line)
        if not match:
            if line.strip() and not line.startswith((" ", "\t")) and "Traceback" not in line:
                levels["other"] += 1
            elif "Traceback" in line:
                levels["traceback"] += 1
            continue
        level, logger, message = match.groups()
        levels[level] += 1
        if level in ("WARNING", "ERROR", "CRITICAL"):
            kind = f"{level} {logger}: " + re.sub(r"0x[0-9a-f]+|[0-9a-f-]{36}|\d+", "#",
                                                  message)[:120]
            kinds[kind] += 1
            examples.setdefault(kind, line[:300])
    summary = [f"log lines per level: {dict(levels)}"]
    summary += [f"{count} x {examples[kind]}" for kind, count in kinds.most_common(15)]
    return summary


# -- measurement helpers ------------------------------------------------------------------------

def machine_busy_s() -> float:
    """CPU-seconds every CPU of the machine has been busy (everything but idle and iowait)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / TICKS


@dataclass
class Snapshot:
    wall: float
    broker_cpu: float
    client_cpu: float
    machine_cpu: float

    @classmethod
    def take(cls, service: Service) -> Snapshot:
        return cls(time.perf_counter(), service.cpu_s(), time.process_time(), machine_busy_s())


def cpu_between(a: Snapshot, b: Snapshot) -> dict:
    """CPU shares over a window; `other_cpus` is what the rest of the machine (other users'
    processes, py-spy, the kernel's softirq work not charged to us) used, in CPUs."""
    wall = b.wall - a.wall
    broker, client = b.broker_cpu - a.broker_cpu, b.client_cpu - a.client_cpu
    other = (b.machine_cpu - a.machine_cpu) - broker - client
    return {"wall_s": wall, "broker_cpu_s": broker,
            "broker_util": broker / wall if wall else 0.0,
            "client_util": client / wall if wall else 0.0,
            "other_cpus": max(other, 0.0) / wall if wall else 0.0}


@dataclass
class Results:
    machine: dict = field(default_factory=dict)
    command: str = ""
    heartbeat: dict = field(default_factory=dict)   # target -> result
    rebalance: dict = field(default_factory=dict)   # target -> size -> result
    memory: dict = field(default_factory=dict)      # target -> result
    consumer: dict = field(default_factory=dict)    # KIP-848 next to classic (coordinator_consumer)
    profile: dict = field(default_factory=dict)
    logs: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)


async def wait_quiet(args, own: list[Service], label: str) -> float:
    """Wait (at most --quiet-wait s) until the rest of the machine uses under --quiet-cpus
    CPUs over a 1 s window: other people's jobs on a 2-CPU machine take the broker's core.
    Returns the last measured foreign load."""
    give_up = time.perf_counter() + args.quiet_wait
    waited = False
    while True:
        busy0, mine0 = machine_busy_s(), own_cpu(own)
        await asyncio.sleep(1.0)
        other = (machine_busy_s() - busy0) - (own_cpu(own) - mine0)
        if other < args.quiet_cpus or time.perf_counter() > give_up:
            if waited or other >= args.quiet_cpus:
                progress(f"{label}: rest of the machine at {other:.2f} CPUs"
                         + (" (gave up waiting)" if other >= args.quiet_cpus else ""))
            return other
        if not waited:
            progress(f"{label}: waiting for the machine to quieten ({other:.2f} CPUs busy "
                     f"elsewhere)")
            waited = True


def own_cpu(services: list[Service]) -> float:
    return time.process_time() + sum(s.cpu_s() for s in services if s.proc.poll() is None)


# -- phases -------------------------------------------------------------------------------------

async def phase_heartbeat(targets: Targets, target: str, args) -> dict:
    service = targets.start(target, "heartbeat")
    conns: list = []
    blasters: list = []
    try:
        groups, size = args.hb_groups, args.hb_members // args.hb_groups
        spec = GroupSpec(session_ms=30_000, rebalance_ms=60_000,
                         leader_syncs_last=target == "rdmock")
        formed: dict = {}
        if target == "echo":
            frames = [bytes(loadgen.heartbeat_frame(
                "bench-member", f"hb-{g:03d}", 1, f"hb-{g:03d}-i{i:05d}-{'0' * 36}",
                f"hb-{g:03d}-i{i:05d}")) for g in range(groups) for i in range(size)]
        else:
            # Wait for a quiet machine before forming: the members send no heartbeats between
            # the formation and the measurement, so that gap must stay well under their session.
            await wait_quiet(args, [service], f"{target} heartbeat")
            pool = min(args.pool, groups * size)
            conns = await open_conns(service.host, service.port, pool)
            progress(f"{target}: forming {groups} groups x {size} members over {pool} "
                     f"connections")
            started = time.perf_counter()
            drivers, formed = await form_groups(conns, [f"hb-{g:03d}" for g in range(groups)],
                                                size, spec, timeout_s=120)
            formed["seconds"] = time.perf_counter() - started
            progress(f"{target}: formed in {formed['seconds']:.1f} s ({formed})")
            close_all(conns)
            conns = []
            frames = [f for d in drivers for f in d.heartbeat_frames()]
        service.check()
        blasters = await open_conns(service.host, service.port, args.hb_connections,
                                    factory=Blaster)
        if target == "echo":
            await wait_quiet(args, [service], f"{target} heartbeat")
        for i, blaster in enumerate(blasters):
            blaster.start(frames[i::len(blasters)], args.hb_window)
        await asyncio.sleep(args.hb_warmup)
        before_count = sum(b.answered for b in blasters)
        before = Snapshot.take(service)
        profiler = Profiler(service, args, "heartbeat") \
            if target == "roster" and args.profile and "heartbeat" in args.profile_phases else None
        await asyncio.sleep(args.hb_seconds)
        after_count = sum(b.answered for b in blasters)
        after = Snapshot.take(service)
        profile = profiler.finish() if profiler is not None else None
        await asyncio.wait_for(asyncio.gather(*(b.stop() for b in blasters)), 30)
        service.check()
        errors = collections.Counter()
        for blaster in blasters:
            errors.update(blaster.errors)
        answered = after_count - before_count
        usage = cpu_between(before, after)
        failed = sum(errors.values())
        if failed > answered / 100:
            results_note = (f"INVALID: {failed:,} of {answered:,} answers carried an error "
                            f"({dict(errors)}); the numbers do not measure heartbeats")
            progress(f"{target}: {results_note}")
        result = {"members": groups * size, "groups": groups,
                  "invalid": failed > answered / 100,
                  "connections": len(blasters), "window": args.hb_window,
                  "answered": answered, "per_s": answered / usage["wall_s"],
                  "per_broker_cpu_s": answered / usage["broker_cpu_s"]
                  if usage["broker_cpu_s"] else None,
                  "errors": {str(k): v for k, v in errors.items()}, "formation": formed,
                  **usage}
        if profile is not None:
            result["profile"] = profile
        progress(f"{target}: {result['per_s']:,.0f} heartbeats/s "
                 f"({result['per_broker_cpu_s'] or 0:,.0f} per broker-CPU-s), broker CPU "
                 f"{usage['broker_util']:.0%}, client CPU {usage['client_util']:.0%}, "
                 f"rest of the machine {usage['other_cpus']:.2f} CPUs, "
                 f"errors {dict(errors) or 'none'}")
        return result
    finally:
        await settle_close(conns + blasters)
        targets.stop(service, f"{target} heartbeat")


async def phase_rebalance(targets: Targets, target: str, size: int, args) -> dict:
    service = targets.start(target, f"rebalance-{size}")
    conns: list = []
    try:
        spec = GroupSpec(session_ms=args.rb_session_ms, rebalance_ms=60_000,
                         leader_syncs_last=target == "rdmock", heartbeats=target != "echo")
        conns = await open_conns(service.host, service.port, size)
        driver = GroupDriver(f"rb-{size}", conns, spec,
                             leader_client_id(size) if target == "echo" else None)
        rounds = args.mock_rounds if target == "rdmock" else \
            args.rounds if size <= 1000 else args.rounds_large
        timeout = args.rb_timeout
        # Wait for a quiet machine before forming: members must not idle past their session
        # timeout between the formation and the timed rounds (they send no heartbeats then).
        await wait_quiet(args, [service], f"{target} rebalance {size}")
        formation_at = Snapshot.take(service)
        formation = await driver.run_round(0, timeout)
        formation_cpu = service.cpu_s() - formation_at.broker_cpu
        progress(f"{target}: group of {size} formed in {formation.total_s:.3f} s "
                 f"({formation.generations} generation(s), {formation.joins} JoinGroups)")
        runs = []
        profiler = None
        for round_no in range(1, rounds + 1):
            await asyncio.sleep(0.2)
            if target == "roster" and args.profile and "rebalance" in args.profile_phases \
                    and profiler is None:
                profiler = Profiler(service, args, f"rebalance-{size}")
            before = Snapshot.take(service)
            stats = await driver.run_round(round_no, timeout)
            after = Snapshot.take(service)
            service.check()
            runs.append({"rebalance_s": stats.rebalance_s, "total_s": stats.total_s,
                         "join_phase_s": stats.last_join_answer - stats.last_join_sent,
                         "send_s": stats.last_join_sent - stats.first_join_sent,
                         "generations": stats.generations, "joins": stats.joins,
                         "syncs": stats.syncs, "heartbeats": stats.heartbeats,
                         "errors": dict(stats.errors),
                         "broker_cpu_s": after.broker_cpu - before.broker_cpu,
                         "client_cpu_s": after.client_cpu - before.client_cpu,
                         "other_cpus": cpu_between(before, after)["other_cpus"]})
            generations = "" if target == "echo" else f"{stats.generations} generation(s), "
            progress(f"{target}: {size} members, round {round_no}: "
                     f"{stats.rebalance_s * 1000:.1f} ms after the last JoinGroup "
                     f"({generations}broker CPU {runs[-1]['broker_cpu_s']:.2f} s, rest of the "
                     f"machine {runs[-1]['other_cpus']:.2f} CPUs, "
                     f"errors {dict(stats.errors) or 'none'})")
        return {"profile": profiler.finish() if profiler else None,
                "members": size, "session_ms": args.rb_session_ms,
                "formation_s": formation.total_s, "formation_generations": formation.generations,
                "formation_errors": dict(formation.errors),
                "formation_broker_cpu_s": formation_cpu,
                "rounds": runs,
                "median_s": statistics.median(r["rebalance_s"] for r in runs) if runs else None}
    finally:
        await settle_close(conns)
        targets.stop(service, f"{target} rebalance {size}")


async def settle_close(conns: list) -> None:
    """Close our connections and give the broker a moment to see them go, so that stopping it
    afterwards exercises a quiet shutdown (roster logs one traceback per connection that is
    still open when it stops; see the report)."""
    close_all(conns)
    if conns:
        await asyncio.sleep(0.5)


async def phase_memory(targets: Targets, target: str, args) -> dict:
    service = targets.start(target, "memory")
    conns: list = []
    members, groups = (args.mock_mem_members, args.mock_mem_groups) if target == "rdmock" \
        else (args.mem_members, args.mem_groups)
    try:
        size = members // groups
        spec = GroupSpec(session_ms=120_000, rebalance_ms=120_000,
                         leader_syncs_last=target == "rdmock")
        conns = await open_conns(service.host, service.port, args.mem_pool)
        warmup = args.mem_warmup if args.mem_warmup is not None else len(conns) // size
        progress(f"{target}: {len(conns)} connections open; forming {warmup} warm-up groups")
        await form_groups(conns, [f"warm-{g:05d}" for g in range(warmup)], size, spec,
                          timeout_s=120)
        await asyncio.sleep(1.0)
        rss_before = service.rss()
        before = Snapshot.take(service)
        progress(f"{target}: baseline RSS {rss_before / 2**20:.1f} MiB; forming "
                 f"{groups} groups x {size} members")
        _, formed = await form_groups(conns, [f"mem-{g:05d}" for g in range(groups)],
                                      size, spec, timeout_s=120, progress=progress)
        after = Snapshot.take(service)
        await asyncio.sleep(args.mem_idle)
        service.check()
        rss_after = service.rss()
        members = groups * size
        result = {"members": members, "groups": groups, "pool": len(conns), "warmup": warmup,
                  "rss_before": rss_before, "rss_after": rss_after,
                  "bytes_per_member": (rss_after - rss_before) / members,
                  "formation_s": after.wall - before.wall,
                  "formation_broker_cpu_s": after.broker_cpu - before.broker_cpu,
                  "formation": formed}
        progress(f"{target}: RSS {rss_before / 2**20:.1f} -> {rss_after / 2**20:.1f} MiB, "
                 f"{result['bytes_per_member']:,.0f} B per member; formed in "
                 f"{result['formation_s']:.1f} s ({formed})")
        return result
    finally:
        await settle_close(conns)
        targets.stop(service, f"{target} memory")


# -- profiling ----------------------------------------------------------------------------------

class Profiler:
    """py-spy record on the broker for one window (raw collapsed stacks), summarised."""

    def __init__(self, service: Service, args, label: str) -> None:
        pyspy = shutil.which("py-spy") or str(Path(PYTHON).parent / "py-spy")
        self.path = Path(f"{args.profile}-{label}.txt")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.native = args.profile_native
        argv = [pyspy, "record", "--pid", str(service.pid), "--rate", str(args.profile_rate),
                "--format", "raw", "--output", str(self.path)]
        argv += ["--native"] if self.native else ["--nonblocking"]
        progress("profiling: " + " ".join(argv))
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, preexec_fn=lambda: os.sched_setaffinity(
                                         0, CLIENT_CPUS) if CLIENT_CPUS else None)

    def finish(self) -> dict:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # py-spy writes what it has and exits
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return {"error": "py-spy did not finish"}
        if not self.path.exists():
            return {"error": f"py-spy wrote nothing: {err[-500:]}"}
        raw = self.path.read_text()
        if self.native:  # native mode samples idle threads too: keep the event loop's thread
            raw = "\n".join(line for line in raw.splitlines() if "_run_module_as_main" in line)
        summary = summarize_profile(raw)
        summary["file"] = str(self.path)
        return summary


FRAME = re.compile(r"^(.*) \((.*?):(\d+)\)$")


def summarize_profile(raw: str, top: int = 20) -> dict:
    """py-spy raw (collapsed) stacks -> self and inclusive shares per function."""
    self_time: collections.Counter = collections.Counter()
    self_lines: dict = collections.defaultdict(collections.Counter)
    inclusive: collections.Counter = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        seen = set()
        for frame_text in frames:
            match = FRAME.match(frame_text)
            key = (match.group(1), short(match.group(2))) if match else (frame_text, "")
            if key not in seen:
                inclusive[key] += n
                seen.add(key)
        match = FRAME.match(frames[-1])
        key = (match.group(1), short(match.group(2))) if match else (frames[-1], "")
        self_time[key] += n
        if match:
            self_lines[key][match.group(3)] += n

    def rows(counter, lines=None):
        out = []
        for (function, file), n in counter.most_common(top):
            line = lines[(function, file)].most_common(1)[0][0] if lines and lines[
                (function, file)] else ""
            out.append({"function": function, "where": f"{file}:{line}" if line else file,
                        "samples": n, "share": n / total if total else 0.0})
        return out

    return {"samples": total, "self": rows(self_time, self_lines), "inclusive": rows(inclusive)}


def short(path: str) -> str:
    for marker in ("/site-packages/", "/src/", "/lib/python3.11/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


# -- where a member's bytes go (in-process, tracemalloc) ----------------------------------------

class _DiscardSink:
    """Writes nothing, keeps nothing: so the breakdown sees the coordinator's own memory."""
    partitions = 1

    def partition_for(self, group_id: str) -> int:
        return 0

    def write(self, records, done) -> None:
        done(None)

    async def load(self, partition, apply) -> int:
        return 0


async def memory_breakdown(args) -> dict:
    """Drive roster's GroupRuntime (coordinator + timers, no sockets, no log) in this process
    through the same joins and syncs, and attribute the allocations that stay with tracemalloc:
    which lines of roster hold a member's bytes."""
    import gc
    import tracemalloc

    from roster.broker.groups.runtime import GroupRuntime
    from roster.config import BrokerConfig
    from roster.coordinator.config import GroupConfig
    from roster.coordinator.messages import JoinRequest, SyncRequest

    config = GroupConfig.from_broker(BrokerConfig.load(
        None, ["group.initial.rebalance.delay.ms=0"], environ={}))
    runtime = GroupRuntime(config, _DiscardSink())
    coordinator = getattr(runtime, "coordinator", None) or runtime.shard.type_named("classic")
    members, groups = args.breakdown_members, args.breakdown_groups
    size = members // groups
    metadata = loadgen.subscription(1)

    import inspect
    if hasattr(runtime, "new_token"):  # join(request) / sync(request), the request's token
        def call(operation, build):
            return getattr(runtime, operation.__name__)(build(runtime.new_token()))
    elif "make_request" in inspect.signature(runtime.call).parameters:
        def call(operation, build):  # call(operation, make_request(token))
            return runtime.call(operation, build)
    else:
        def call(operation, build):  # older: call(operation, request) and the token replaced
            return runtime.call(operation, build(None))

    # A broker decodes every request into new objects: give each request its own copies, as
    # the wire would, so that what members keep (or share) is counted as in a real broker.
    def fresh(value):
        if isinstance(value, bytes):
            return bytes(bytearray(value))
        if isinstance(value, str):
            return value.encode().decode()
        return int(str(value))

    async def form(group_id: str) -> None:
        joins = [call(coordinator.join, lambda token, i=i: JoinRequest(
            group_id=group_id, member_id="", group_instance_id=f"{group_id}-i{i:05d}",
            protocol_type=fresh("consumer"), protocols=((fresh("range"), fresh(metadata)),),
            session_timeout_ms=fresh(120_000), rebalance_timeout_ms=fresh(120_000),
            client_id=fresh("bench-member"), client_host=fresh("/127.0.0.1"), api_version=5,
            token=token)) for i in range(size)]
        replies = await asyncio.gather(*joins)
        while True:
            generation = max(r.generation for r in replies)
            syncs = []
            for i, reply in enumerate(replies):
                assignments = tuple((m.member_id, fresh(loadgen.ASSIGNMENT))
                                    for m in reply.members) \
                    if reply.leader == reply.member_id else ()
                syncs.append(call(coordinator.sync, lambda token, i=i, reply=reply,
                                  assignments=assignments: SyncRequest(
                    group_id=group_id, generation=reply.generation, member_id=reply.member_id,
                    group_instance_id=f"{group_id}-i{i:05d}", assignments=assignments,
                    api_version=3, token=token)))
            answers = await asyncio.gather(*syncs)
            if all(int(a.error) == 0 for a in answers) and all(
                    r.generation == generation for r in replies):
                return
            raise BenchError(f"{group_id} did not form in one generation")

    await asyncio.gather(*(form(f"warm-{g:05d}") for g in range(50)))
    gc.collect()
    tracemalloc.start(1)
    before = tracemalloc.take_snapshot()
    start = tracemalloc.get_traced_memory()[0]
    for first in range(0, groups, 200):
        await asyncio.gather(*(form(f"mem-{g:05d}") for g in range(first,
                                                                  min(first + 200, groups))))
    gc.collect()
    after = tracemalloc.take_snapshot()
    grown = tracemalloc.get_traced_memory()[0] - start
    tracemalloc.stop()
    stats = after.compare_to(before, "lineno")
    rows = []
    for stat in stats[:15]:
        frame = stat.traceback[0]
        rows.append({"where": f"{short(frame.filename)}:{frame.lineno}",
                     "bytes_per_member": stat.size_diff / members,
                     "blocks_per_member": stat.count_diff / members,
                     "code": linecache_line(frame.filename, frame.lineno)})
    runtime.close()
    return {"members": members, "groups": groups, "traced_bytes_per_member": grown / members,
            "top": rows}


def linecache_line(filename: str, lineno: int) -> str:
    import linecache
    return linecache.getline(filename, lineno).strip()[:90]


# -- report -------------------------------------------------------------------------------------

def machine() -> dict:
    import uvloop
    mem_kib = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    model = re.search(r"model name\s*:\s*(.*)", Path("/proc/cpuinfo").read_text())
    import confluent_kafka
    def git(*argv: str) -> str:
        try:
            return subprocess.run(["git", *argv], cwd=REPO, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return "?"

    changed = len(git("status", "--porcelain", "src").splitlines())
    roster = git("rev-parse", "--short", "HEAD") + (
        f" + {changed} uncommitted file(s) in src/" if changed else "")
    return {"nproc": os.cpu_count(), "roster": roster,
            "cpu": model.group(1) if model else platform.processor(),
            "memory_gib": round(mem_kib / 2**20, 1), "python": platform.python_version(),
            "uvloop": uvloop.__version__, "librdkafka": confluent_kafka.libversion()[0],
            "kernel": platform.release(),
            "pinning": f"broker CPU {sorted(BROKER_CPUS) if BROKER_CPUS else 'any'}, "
                       f"load generator CPU {sorted(CLIENT_CPUS) if CLIENT_CPUS else 'any'}"}


def ratio(a, b) -> str:
    return f"{a / b:.2f}x" if a and b else "n/a"


def verdict(ok) -> str:
    return "n/a" if ok is None else ("met" if ok else "NOT met")


def render(results: Results, args) -> str:
    out = []
    m = results.machine
    out.append(f"machine: {m.get('nproc')} x {m.get('cpu')}, {m.get('memory_gib')} GiB, "
               f"Linux {m.get('kernel')}, Python {m.get('python')}, uvloop {m.get('uvloop')}, "
               f"librdkafka {m.get('librdkafka')}; {m.get('pinning')}; roster "
               f"{m.get('roster')}")
    out.append("")
    hb = results.heartbeat
    if hb:
        out.append(f"## Heartbeat throughput ({args.hb_members:,} members in {args.hb_groups} "
                   f"groups, Heartbeat v3, {args.hb_connections} connections x "
                   f"{args.hb_window} in flight, {args.hb_seconds:.0f} s)")
        out.append("")
        out.append("| target | heartbeats/s (wall) | per broker-CPU-s | broker CPU | "
                   "client CPU | rest of machine | errors |")
        out.append("|---|---:|---:|---:|---:|---:|---|")
        for target in ("roster", "rdmock", "echo"):
            r = hb.get(target)
            if r:
                per_cpu = f"{r['per_broker_cpu_s']:,.0f}" if r["per_broker_cpu_s"] else "n/a"
                out.append(f"| {target} | {r['per_s']:,.0f} | {per_cpu} | "
                           f"{r['broker_util']:.0%} | {r['client_util']:.0%} | "
                           f"{r['other_cpus']:.2f} CPUs | {r['errors'] or 'none'} |")
        out.append("")
    rb = results.rebalance
    if rb:
        out.append("## Rebalance completion (last JoinGroup sent -> every member has its "
                   "SyncGroup answer), median of rounds")
        out.append("")
        out.append("| members | roster | roster join phase | roster broker CPU | roster "
                   "formation | rdmock | echo floor | roster / floor | rdmock / roster | rest of "
                   "machine |")
        out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for size in args.sizes:
            ro = rb.get("roster", {}).get(size)
            mo = rb.get("rdmock", {}).get(size)
            ec = rb.get("echo", {}).get(size)

            def ms(r):
                return f"{r['median_s'] * 1000:,.1f} ms" if r and r.get("median_s") is not None \
                    else "n/a"

            join = f"{statistics.median(x['join_phase_s'] for x in ro['rounds']) * 1000:,.1f} ms" \
                if ro and ro["rounds"] else "n/a"
            cpu = f"{statistics.median(x['broker_cpu_s'] for x in ro['rounds']) * 1000:,.0f} ms" \
                if ro and ro["rounds"] else "n/a"
            formation = f"{ro['formation_s'] * 1000:,.0f} ms" if ro else "n/a"
            other = "n/a" if not (ro and ro["rounds"]) else \
                f"{max(x['other_cpus'] for x in ro['rounds']):.2f} CPUs"
            out.append(f"| {size:,} | {ms(ro)} | {join} | {cpu} | {formation} | {ms(mo)} | "
                       f"{ms(ec)} | {ratio(ro and ro['median_s'], ec and ec['median_s'])} | "
                       f"{ratio(mo and mo['median_s'], ro and ro['median_s'])} | {other} |")
        out.append("")
    mem = results.memory
    if mem:
        out.append("## Memory per idle member (static members, groups of "
                   f"{args.mem_members // args.mem_groups})")
        out.append("")
        out.append("| target | members / groups | RSS before | RSS after | bytes/member | "
                   "formation time | formation broker CPU |")
        out.append("|---|---:|---:|---:|---:|---:|---:|")
        for target in ("roster", "rdmock"):
            r = mem.get(target)
            if r and "rss_before" in r:
                out.append(f"| {target} | {r['members']:,} / {r['groups']:,} | "
                           f"{r['rss_before'] / 2**20:,.1f} MiB | "
                           f"{r['rss_after'] / 2**20:,.1f} MiB | {r['bytes_per_member']:,.0f} | "
                           f"{r['formation_s']:.1f} s | {r['formation_broker_cpu_s']:.1f} s |")
        out.append("")
    breakdown = results.memory.get("breakdown")
    if breakdown:
        out.append(f"## Where roster's bytes per member go (in-process GroupRuntime, no sockets "
                   f"or log; {breakdown['members']:,} members in {breakdown['groups']:,} "
                   f"groups; {breakdown['traced_bytes_per_member']:,.0f} B/member traced by "
                   f"tracemalloc)")
        out.append("")
        out.append("| B/member | blocks/member | where | code |")
        out.append("|---:|---:|---|---|")
        for row in breakdown["top"]:
            out.append(f"| {row['bytes_per_member']:,.0f} | {row['blocks_per_member']:.2f} | "
                       f"{row['where']} | `{row['code']}` |")
        out.append("")
    if results.consumer:
        import coordinator_consumer
        out += coordinator_consumer.render(results.consumer, args)
    out.append("## Targets and ratios (ratio > 1 means roster is ahead)")
    out.append("")
    out.append("| line | roster | target | verdict | vs rdmock |")
    out.append("|---|---:|---:|---|---:|")
    ro, mo = hb.get("roster"), hb.get("rdmock")
    if ro:
        hb_verdict = "INVALID (error answers)" if ro.get("invalid") else \
            verdict(ro["per_s"] >= TARGET_HEARTBEATS)
        out.append(f"| heartbeats/s, one broker core | {ro['per_s']:,.0f} | >= 30,000 | "
                   f"{hb_verdict} | "
                   f"{ratio(ro['per_s'], mo and mo['per_s'])} |")
        if ro["per_broker_cpu_s"]:
            out.append(f"| heartbeats per broker-CPU-second | {ro['per_broker_cpu_s']:,.0f} | "
                       f"| | {ratio(ro['per_broker_cpu_s'], mo and mo['per_broker_cpu_s'])} |")
    for size in args.sizes:
        r = rb.get("roster", {}).get(size)
        if not r or r.get("median_s") is None:
            continue
        mock = rb.get("rdmock", {}).get(size)
        target = "<= 1 s" if size == 1000 else ""
        ok = r["median_s"] <= TARGET_REBALANCE_1000_S if size == 1000 else None
        out.append(f"| rebalance, {size:,} members | {r['median_s'] * 1000:,.1f} ms | {target} | "
                   f"{verdict(ok) if size == 1000 else ''} | "
                   f"{ratio(mock and mock['median_s'], r['median_s'])} (mock timer-bound) |")
    if results.consumer:
        import coordinator_consumer
        out += coordinator_consumer.target_rows(results.consumer, args)
    r, mock = mem.get("roster"), mem.get("rdmock")
    if r:
        out.append(f"| memory per member | {r['bytes_per_member']:,.0f} B | <= 4,096 B | "
                   f"{verdict(r['bytes_per_member'] <= TARGET_BYTES_PER_MEMBER)} | "
                   f"{ratio(mock and mock['bytes_per_member'], r['bytes_per_member'])} |")
    out.append("")
    for label, p in results.profile.items():
        out.append(f"## py-spy profile of roster: {label} ({p.get('samples')} samples"
                   f"{', ' + p['error'] if 'error' in p else ''})")
        out.append("")
        out.append("| self % | function | where |")
        out.append("|---:|---|---|")
        for row in p.get("self", [])[:15]:
            out.append(f"| {row['share']:.1%} | {row['function']} | {row['where']} |")
        out.append("")
        out.append("| inclusive % | function | file |")
        out.append("|---:|---|---|")
        for row in p.get("inclusive", [])[:20]:
            out.append(f"| {row['share']:.1%} | {row['function']} | {row['where']} |")
        out.append("")
    if results.logs:
        out.append("## roster logs")
        out.append("")
        for label, lines in results.logs.items():
            out.append(f"- {label}: " + lines[0])
            out += [f"  - {line}" for line in lines[1:]]
        out.append("")
    if results.failures:
        out.append("## Failures")
        out.append("")
        out += [f"- {f}" for f in results.failures]
    return "\n".join(out)


# -- main ---------------------------------------------------------------------------------------

async def run(args, results: Results, targets: Targets) -> None:
    phases = args.phases
    for target in args.only:
        if STOPPING:
            break
        if "heartbeat" in phases:
            try:
                results.heartbeat[target] = await phase_heartbeat(targets, target, args)
                if "profile" in results.heartbeat[target]:
                    results.profile["heartbeat"] = results.heartbeat[target].pop("profile")
            except Exception as exc:  # keep going: the other targets still tell us something
                _failed(results, f"{target} heartbeat", exc)
        if "rebalance" in phases:
            for size in args.sizes:
                if target == "rdmock" and size > args.mock_max_size:
                    continue
                try:
                    result = await phase_rebalance(targets, target, size, args)
                    profile = result.pop("profile", None)
                    if profile:
                        results.profile[f"rebalance {size}"] = profile
                    results.rebalance.setdefault(target, {})[size] = result
                except Exception as exc:
                    _failed(results, f"{target} rebalance {size}", exc)
        if "memory" in phases and target != "echo":
            try:
                results.memory[target] = await phase_memory(targets, target, args)
            except Exception as exc:
                _failed(results, f"{target} memory", exc)
    if "consumer" in phases and "roster" in args.only and not STOPPING:
        import coordinator_consumer
        results.consumer = await coordinator_consumer.phase(sys.modules[__name__], targets, args,
                                                            results)
        for part in ("heartbeats", "join"):
            results.profile.update(results.consumer.get(part, {}).pop("profiles", {}))
    if "breakdown" in phases and "roster" in args.only:  # last: it leaves garbage in this process
        try:
            progress("breakdown: roster's GroupRuntime in-process under tracemalloc")
            results.memory["breakdown"] = await memory_breakdown(args)
        except Exception as exc:
            _failed(results, "memory breakdown", exc)


STOPPING = False


def _on_sigterm(*_) -> None:
    global STOPPING
    STOPPING = True
    raise KeyboardInterrupt


def _failed(results: Results, what: str, exc: BaseException) -> None:
    reason = "interrupted (SIGTERM)" if STOPPING else f"{type(exc).__name__}: {exc}"
    results.failures.append(f"{what}: {reason}")
    progress(f"FAILED {what}: {reason}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default="roster,rdmock,echo",
                   help="targets, comma-separated (roster, rdmock, echo)")
    p.add_argument("--phases", default="heartbeat,rebalance,memory,consumer,breakdown",
                   help="heartbeat, rebalance, memory (RSS of a broker process), consumer "
                        "(KIP-848 next to classic, roster only: bench/coordinator_consumer.py), "
                        "breakdown (tracemalloc of roster's coordinator in this process)")
    p.add_argument("--cg-seconds", type=float, default=4.0,
                   help="phase consumer: seconds each protocol is measured per round")
    p.add_argument("--cg-rounds", type=int, default=5,
                   help="phase consumer: interleaved rounds (classic, consumer; then reversed)")
    p.add_argument("--cg-partitions", type=int, default=100,
                   help="phase consumer: partitions of the consumer groups' topic")
    p.add_argument("--cg-join-members", type=int, default=1000)
    p.add_argument("--cg-join-partitions", type=int, default=2000)
    p.add_argument("--cg-join-rounds", type=int, default=3,
                   help="phase consumer: members joining one after the other")
    p.add_argument("--cg-assignor-members", type=int, default=1000)
    p.add_argument("--cg-assignor-partitions", type=int, default=10_000)
    p.add_argument("--hb-members", type=int, default=10_000)
    p.add_argument("--hb-groups", type=int, default=100)
    p.add_argument("--hb-connections", type=int, default=16)
    p.add_argument("--hb-window", type=int, default=128, help="requests in flight per connection")
    p.add_argument("--hb-seconds", type=float, default=10.0)
    p.add_argument("--hb-warmup", type=float, default=1.0)
    p.add_argument("--pool", type=int, default=2000,
                   help="connections used to form the heartbeat groups")
    p.add_argument("--sizes", default="100,1000,10000")
    p.add_argument("--rounds", type=int, default=3, help="timed rebalances per size (roster, echo)")
    p.add_argument("--rounds-large", type=int, default=1,
                   help="timed rebalances for sizes above 1,000 (roster, echo)")
    p.add_argument("--rb-timeout", type=float, default=150.0,
                   help="seconds a formation or a timed rebalance may take before it counts as "
                        "failed")
    p.add_argument("--mock-rounds", type=int, default=1,
                   help="timed rebalances per size for rdmock (each is held ~session timeout)")
    p.add_argument("--mock-max-size", type=int, default=10_000)
    p.add_argument("--rb-session-ms", type=int, default=6000,
                   help="session.timeout.ms of rebalance members (the mock holds a rebalance "
                        "for this minus 1 s)")
    p.add_argument("--mem-members", type=int, default=100_000)
    p.add_argument("--mem-groups", type=int, default=10_000)
    p.add_argument("--mock-mem-members", type=int, default=20_000,
                   help="the mock finds groups by a linear scan, so forming 10,000 groups takes "
                        "it ~6 min; by default it is measured with 20,000 members in 2,000 "
                        "groups of the same size (per-member cost; see the doc)")
    p.add_argument("--mock-mem-groups", type=int, default=2_000)
    p.add_argument("--mem-pool", type=int, default=5000)
    p.add_argument("--breakdown-members", type=int, default=20_000,
                   help="phase 'breakdown': members driven through roster's GroupRuntime "
                        "in-process under tracemalloc")
    p.add_argument("--breakdown-groups", type=int, default=2_000)
    p.add_argument("--mem-warmup", type=int, default=None,
                   help="groups formed before the baseline (default: as many as the pool forms "
                        "at once, so the baseline already holds the broker's peak of "
                        "in-flight joins and syncs, which is not a per-member cost)")
    p.add_argument("--mem-idle", type=float, default=2.0, help="idle seconds before measuring RSS")
    p.add_argument("--quiet-cpus", type=float, default=0.25,
                   help="before each measurement, wait until other processes use less than "
                        "this many CPUs ...")
    p.add_argument("--quiet-wait", type=float, default=5.0, help="... for at most this long")
    p.add_argument("--set", action="append", default=[], help="extra roster --set key=value")
    p.add_argument("--profile", help="py-spy raw output prefix (PREFIX-<phase>.txt); profiles "
                   "roster only")
    p.add_argument("--profile-phases", default="heartbeat",
                   help="phases to profile with --profile: heartbeat, rebalance, consumer")
    p.add_argument("--profile-rate", type=int, default=200, help="py-spy samples per second")
    p.add_argument("--profile-native", action="store_true",
                   help="py-spy --native: show C frames too (e.g. the cyclic GC)")
    p.add_argument("--roster-gc", choices=["default", "off", "tuned"], default="default",
                   help="experiments sizing the cyclic GC's share (not how roster ships): off = "
                        "gc.disable(); tuned = gc.freeze() after importing roster and "
                        "gc.set_threshold(50_000, 50, 100)")
    p.add_argument("--json", help="also write the results as JSON to this file")
    p.add_argument("--markdown", help="also write the report to this file")
    p.add_argument("--max-seconds", type=float, default=900, help="watchdog for the whole run")
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    args = p.parse_args(argv)
    args.only = [t for t in args.only.split(",") if t]
    args.phases = [t for t in args.phases.split(",") if t]
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    return args


def main(argv=None) -> int:
    global BROKER_CPUS, CLIENT_CPUS
    args = parse_args(argv)
    loadgen.raise_nofile_limit()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        BROKER_CPUS, CLIENT_CPUS = {cpus[0]}, {cpus[1]}
        os.sched_setaffinity(0, CLIENT_CPUS)
    results = Results(machine=machine(), command=" ".join([Path(PYTHON).name, *sys.argv]))
    workdir = Path(tempfile.mkdtemp(prefix="roster-coord-bench-"))
    targets = Targets(workdir, args)
    deadline = threading.Timer(args.max_seconds, lambda: (
        progress(f"watchdog: {args.max_seconds:.0f} s passed; stopping"),
        targets.stop_all(), os._exit(3)))
    deadline.daemon = True
    deadline.start()
    # SIGTERM (timeout, make) ends the run like Ctrl-C: brokers stopped, work directory removed
    signal.signal(signal.SIGTERM, _on_sigterm)
    started = time.perf_counter()
    try:
        import uvloop
        uvloop.run(run(args, results, targets))
    except KeyboardInterrupt:
        results.failures.append("interrupted" + (" (SIGTERM)" if STOPPING else "")
                                + "; the tables hold what finished before")
        progress("interrupted: stopping the brokers")
    finally:
        targets.stop_all()
        deadline.cancel()
        results.logs = dict(targets.logs)
        if args.keep:
            progress(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    progress(f"done in {time.perf_counter() - started:.0f} s")
    report = render(results, args)
    print(report)
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(results), indent=2, default=str))
    if args.markdown:
        Path(args.markdown).write_text(report + "\n")
    return 1 if results.failures else 0


if __name__ == "__main__":
    sys.exit(main())
