#!/usr/bin/env python3
"""roster against Apache Kafka 4.4 on the same machine, in one run, with ratios.

Brokers (each a fresh process per measurement unless said otherwise, pinned with
sched_setaffinity -- what taskset does -- to the same core; this load generator runs on the
other core):

  roster              `python -m roster serve`, settings as tests/support/kafka_peer's
                      PEER_SETTINGS (no initial rebalance delay, 5 offsets partitions, ...).
  kafka               Kafka 4.4 KRaft, one combined broker+controller node on loopback, from the
                      jars scripts/ensure-kafka.sh resolves, run as tests/support/kafka_peer runs
                      it: -Xmx1g -XX:+UseSerialGC, PEER_SETTINGS and SINGLE_NODE.
  kafka-default-heap  the same node with the JVM options kafka-server-start.sh and
                      kafka-run-class.sh give it by default: -Xmx1G -Xms1G -XX:+UseG1GC
                      -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
                      -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15.
  kafka-durable       `kafka` with log.flush.interval.messages=1 (section commits only): an
                      fsync per append, so that an answered commit is on disk as roster's is.

Both brokers get group.max.size=100000 (kafka_peer's 16 is a test setting). Rounds interleave
the brokers (roster, kafka, ...; the order reversed each round) and the tables give medians.

A classic group's coordinator writes the whole group (every member's metadata and assignment)
as one record into __consumer_offsets. Kafka bounds that batch by message.max.bytes (1048588 by
default; its __consumer_offsets has no max.message.bytes of its own), and answers the SyncGroup
whose write is over it with UNKNOWN_SERVER_ERROR, logging "Failed to write a batch of 1
record(s) to __consumer_offsets-N because it is larger than the maximum batch size of 1048588
bytes". The bench's group of 10,000 takes a 1,630,175-byte batch on both brokers. roster bounds
it the same way now (before, its __consumer_offsets allowed 64 MiB whatever
message.max.bytes was, and it wrote that record where Kafka refused it). A rebalance size whose
group record is over the default therefore runs both brokers with
message.max.bytes=67108864, and its rows say so.

Sections (--only, comma-separated; default all but spark):

  coordinator  classic Heartbeat/s and ConsumerGroupHeartbeat/s per broker CPU-second with
               --members members in one broker (bench/coordinator_consumer.py's phase, each
               blast warmed for --warmup s so Kafka's JIT is warm); classic eager group
               formation and rebalance (every member rejoins, what one join causes under the
               eager protocol; bench/coordinator.py's phase) for --sizes; a consumer-protocol
               member joining a settled group until every partition has one owner again
               (coordinator_consumer's join phase) for --sizes.
  commits      OffsetCommit/s and latency with 100 closed-loop committers (bench/offsets.py's
               load generator). roster answers a commit once its record is fsynced; a one-node
               Kafka by default answers once it is in the page cache, so kafka-durable is the
               like-for-like figure.
  memory       RSS 3 s after the broker is ready, CPU from spawn to then, and bytes per member
               with --memory-members idle static members (bench/coordinator.py's phase).
  start        spawn to the first answered Metadata, and to a formed group of 3 (FindCoordinator,
               JoinGroup, SyncGroup), on an empty data dir (Kafka: storage format included and
               also shown apart) and on one holding --loaded-commits offset commits and
               --loaded-bytes of log. Beside it, CPython's floor on this machine: `python -c
               pass`, `python -c 'import asyncio'`, and a bare asyncio socket server answering
               one request.
  datapath     produce (acks=1, acks=all) and fetch-from-0 MB/s and MB per broker CPU-second,
               1 KiB records in 64 KiB batches (bench/produce_fetch.py's pipelined producer and
               confluent-kafka fetch).
  ci           a developer's CI run: spawn a fresh broker, create 50 topics of 3 partitions, 20
               groups of 3 confluent-kafka consumers each read --ci-records records of their own
               topic with a synchronous commit after every batch, delete every topic and group,
               stop the broker: wall clock from spawn to exit.
  spark        see bench/versus_kafka_spark.py (run separately; needs Maven for Spark's source).

    .venv/bin/python bench/versus_kafka.py --quick                 # a small smoke run, ~3 min
    .venv/bin/python bench/versus_kafka.py --only start,memory --rounds 3
    .venv/bin/python bench/versus_kafka.py --only coordinator --brokers roster,kafka
    .venv/bin/python bench/versus_kafka.py --json /tmp/versus.json

The machine is shared: every row gives the 1-minute load average (/proc/loadavg) before and
after it, and where the phase measures it, the CPUs the rest of the machine used meanwhile.
Everything stays on 127.0.0.1; brokers die with this process. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import ctypes
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import coordinator as kit  # noqa: E402  (bench/coordinator.py: phases, Snapshot, wait_quiet)
import coordinator_consumer  # noqa: E402
import loadgen  # noqa: E402
import offsets as offsets_bench  # noqa: E402
import produce_fetch  # noqa: E402
from pipelined_producer import PipelinedProducer  # noqa: E402

from roster.admin.client import AdminClient, AdminError  # noqa: E402
from roster.admin.topics import create as create_topic  # noqa: E402
from roster.broker.groups.group_log import INTERNAL_MAX_BATCH  # noqa: E402
from roster.broker.partitions.internal_topic import records_batch  # noqa: E402
from roster.protocol.api_keys import ApiKey  # noqa: E402
from roster.protocol.build import element, make  # noqa: E402
from roster.protocol.codec import encode_request, request_schema  # noqa: E402
from roster.protocol.group_records import (  # noqa: E402
    GroupKey,
    GroupValue,
    MemberValue,
    Record,
)
from tests.support.kafka_peer import (  # noqa: E402
    JAVA,
    KAFKA_VERSION,
    PEER_SETTINGS,
    SINGLE_NODE,
    kafka_classpath,
)

PYTHON = sys.executable
TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
SECTIONS = ("coordinator", "commits", "memory", "start", "datapath", "ci")
COMMON = {**PEER_SETTINGS, "group.max.size": "100000"}
JVM = {
    "kafka": ("-Xmx1g", "-XX:+UseSerialGC"),
    "kafka-default-heap": ("-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC",
                           "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
                           "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15"),
    "kafka-durable": ("-Xmx1g", "-XX:+UseSerialGC"),
}
DURABLE = {"log.flush.interval.messages": "1"}
KAFKA_MESSAGE_MAX_BYTES = 1048588   # Kafka's default message.max.bytes: its group record limit
BROKER_CPUS: set[int] | None = None
CLIENT_CPUS: set[int] | None = None


def progress(message: str) -> None:
    print(f"[versus {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


# -- brokers ------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _child_setup() -> None:
    """In the child before exec: die with this process (PR_SET_PDEATHSIG), the raised file
    limit, and the broker core, which every thread it starts inherits (taskset's effect)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if BROKER_CPUS:
        os.sched_setaffinity(0, BROKER_CPUS)


def _cluster_id() -> str:
    while True:   # Kafka's Uuid text form; one starting with "-" would read as an option
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def metadata_answered(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """One Metadata v1 request (no topics) on a new connection; True once it is answered."""
    client = b"versus-probe"
    body = struct.pack(">hhih", 3, 1, 1, len(client)) + client + struct.pack(">i", 0)
    try:
        with socket.create_connection((host, port), timeout_s) as sock:
            sock.sendall(struct.pack(">i", len(body)) + body)
            head = sock.recv(4, socket.MSG_WAITALL)
            if len(head) < 4:
                return False
            (size,) = struct.unpack(">i", head)
            return len(sock.recv(size, socket.MSG_WAITALL)) == size
    except OSError:
        return False


class Broker:
    """One broker process of a kind; `start()` times it. Answers what bench/coordinator.py's
    phases ask of a service (host, port, pid, cpu_s, rss, check, stop) and what
    produce_fetch's steps ask (address, proc)."""

    def __init__(self, kind: str, work_dir: Path, settings: dict[str, str] | None = None) -> None:
        self.kind = kind
        self.name = kind
        self.work_dir = work_dir
        self.settings = {**COMMON, **(settings or {})}
        if kind == "kafka-durable":
            self.settings.update(DURABLE)
        self.host = "127.0.0.1"
        self.port = _free_port()
        self.controller_port = _free_port()
        self.proc: subprocess.Popen | None = None
        self.log_path = work_dir / "broker.log"
        self.timings: dict[str, float] = {}

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    bootstrap = address

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _kafka_config(self) -> Path:
        props = {
            "process.roles": "broker,controller", "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
                         f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.work_dir / "data"),
            **SINGLE_NODE, **self.settings,
        }
        config = self.work_dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return config

    def argv(self) -> list[str]:
        if self.kind == "roster":
            argv = [PYTHON, "-m", "roster", "serve", "--host", self.host, "--port",
                    str(self.port), "--data-dir", str(self.work_dir / "data")]
            for key, value in self.settings.items():
                argv += ["--set", f"{key}={value}"]
            return argv
        return [JAVA, *JVM[self.kind], "-Djava.awt.headless=true",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dorg.slf4j.simpleLogger.logFile=System.out",
                "-cp", kafka_classpath(), "kafka.Kafka", str(self._kafka_config())]

    def start(self, timeout_s: float = 180.0, coordinator: bool = True) -> Broker:
        """Spawn, then wait for the first answered Metadata and (coordinator=True) for the
        group coordinator to answer FindCoordinator. timings: format_s (Kafka, an empty dir),
        metadata_s and coordinator_s from spawn."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.timings = {}
        if self.kind != "roster" and not (self.work_dir / "data" / "meta.properties").exists():
            config = self._kafka_config()
            t0 = time.perf_counter()
            # the tool with the full JIT, as the broker runs (kafka_peer's java_command runs
            # test tools C1-only, which starts quicker than Kafka's own scripts do)
            done = subprocess.run([JAVA, "-Xmx256m", "-XX:+UseSerialGC",
                                   "-Djava.awt.headless=true", "-cp", kafka_classpath(),
                                   "kafka.tools.StorageTool", "format", "-t", _cluster_id(),
                                   "-c", str(config), "--ignore-formatted"],
                                  capture_output=True, text=True, timeout=180,
                                  preexec_fn=_child_setup)
            if done.returncode:
                raise RuntimeError(f"Kafka's storage tool failed:\n{done.stdout}{done.stderr}")
            self.timings["format_s"] = time.perf_counter() - t0
        # a fresh client port each start: a port left unbound between a stop and the next
        # start may have been taken by another process, whose answers would be timed instead
        self.port = _free_port()
        argv = self.argv()
        log = open(self.log_path, "a")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=REPO,
                                     preexec_fn=_child_setup, start_new_session=True)
        log.close()
        self.spawned_at = t0
        deadline = t0 + timeout_s
        while not metadata_answered(self.host, self.port, 1.0):
            self.check()
            if time.perf_counter() > deadline:
                self.stop()
                raise RuntimeError(f"{self.kind} answered no Metadata in {timeout_s} s")
            time.sleep(0.01)
        self.timings["metadata_s"] = time.perf_counter() - t0
        self._check_listener()
        if coordinator:
            self.wait_coordinator(deadline)
            self.timings["coordinator_s"] = time.perf_counter() - t0
        return self

    def _check_listener(self) -> None:
        """The answer came from this process: it is alive and holds a socket on the port."""
        self.check()
        inodes = set()
        for fd in Path(f"/proc/{self.pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == self.port \
                        and fields[9] in inodes:
                    return
        raise RuntimeError(f"{self.kind}: something else answered on port {self.port}")

    def wait_coordinator(self, deadline: float, group: str = "versus-probe") -> None:
        last = "no answer"
        while time.perf_counter() < deadline:
            self.check()
            try:
                with AdminClient(self.address, timeout_s=5.0) as admin:
                    answer = admin.call(ApiKey.FIND_COORDINATOR, key=group, key_type=0,
                                        coordinator_keys=(group,))
                    errors = [int(c.error_code) for c in getattr(answer, "coordinators", ())] \
                        or [int(answer.error_code)]
                    if not any(errors):
                        return
                    last = f"errors {errors}"
            except (AdminError, OSError) as exc:
                last = str(exc)
            time.sleep(0.02)
        raise RuntimeError(f"{self.kind}: no group coordinator ({last})")

    def cpu_s(self) -> float:
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def rss(self) -> int:
        with open(f"/proc/{self.pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE

    def check(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.kind} exited with code {self.proc.returncode}:\n{tail}")

    def read_log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                progress(f"{self.kind} ignored SIGTERM for {timeout_s:.0f} s; killing it")
                self.proc.kill()
                self.proc.wait()


class Brokers:
    """bench/coordinator.py's Targets, for these brokers: its phases call start(target, label,
    settings) with roster's `key=value` settings and stop(service, label)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.count = 0
        self.live: list[Broker] = []
        self.logs: dict = {}    # a stopped broker's directory name -> its ERROR lines
        self.extra: dict[str, str] = {}   # settings every broker started meanwhile gets

    def new(self, kind: str, label: str, settings: dict[str, str] | None = None) -> Broker:
        self.count += 1
        broker = Broker(kind, self.workdir / f"{self.count:03d}-{kind}-{label}", settings)
        self.live.append(broker)
        return broker

    def start(self, target: str, label: str, settings: tuple[str, ...] = ()) -> Broker:
        extra = {**self.extra, **dict(s.split("=", 1) for s in settings)}
        broker = self.new(target, label, extra)
        progress(f"starting {target} for {label}")
        return broker.start()

    def stop(self, service: Broker, label: str = "") -> None:
        service.stop()
        if service in self.live:
            self.live.remove(service)
        errors = [line for line in service.read_log().splitlines()
                  if " ERROR " in line][:10]
        if errors:   # the report keeps them: the directory goes (its logs with it)
            self.logs[service.work_dir.name] = errors
            for line in errors:
                progress(f"{service.kind} logged: {line[:500]}")
        shutil.rmtree(service.work_dir, ignore_errors=True)

    def stop_all(self) -> None:
        for broker in list(self.live):
            broker.stop()
        self.live.clear()


class Only:
    """coordinator_consumer's phases start "roster": this starts `kind` in its place."""

    def __init__(self, brokers: Brokers, kind: str) -> None:
        self.brokers, self.kind = brokers, kind

    def start(self, _target: str, label: str, settings: tuple[str, ...] = ()) -> Broker:
        return self.brokers.start(self.kind, label, settings)

    def stop(self, service: Broker, label: str = "") -> None:
        self.brokers.stop(service, label)


def make_topics(broker: Broker, topics: dict[str, int], timeout_s: float = 60.0) -> None:
    """Create topics and wait until Metadata names a leader for every partition (Kafka answers
    CreateTopics before its own metadata cache has them)."""
    from confluent_kafka.admin import AdminClient as KafkaAdmin
    with AdminClient(broker.address) as admin:
        for name, partitions in topics.items():
            create_topic(admin, name, partitions, {})
    admin = KafkaAdmin({"bootstrap.servers": broker.address})
    deadline = time.perf_counter() + timeout_s
    for name, partitions in topics.items():
        while True:
            topic = admin.list_topics(topic=name, timeout=10).topics.get(name)
            if topic is not None and topic.error is None and len(topic.partitions) == \
                    partitions and all(p.leader >= 0 for p in topic.partitions.values()):
                break
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{broker.kind}: topic {name} has no leaders after "
                                   f"{timeout_s:.0f} s")
            time.sleep(0.05)


# -- results ------------------------------------------------------------------------------------

@dataclass
class Row:
    section: str
    measure: str
    unit: str
    higher_is_better: bool
    values: dict = field(default_factory=dict)    # broker -> [figure per round]
    load: dict = field(default_factory=dict)      # broker -> [(before, after, other CPUs)]
    note: str = ""


class Table:
    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], Row] = {}

    def add(self, section: str, measure: str, unit: str, higher: bool, broker: str,
            value: float | None, load_before: float, other_cpus: float | None = None,
            note: str = "") -> None:
        row = self.rows.setdefault((section, measure), Row(section, measure, unit, higher))
        if note:
            row.note = note
        if value is None:
            return
        row.values.setdefault(broker, []).append(value)
        row.load.setdefault(broker, []).append((load_before, loadavg(), other_cpus))
        progress(f"{section}: {measure} [{broker}] = {fmt(value, unit)} (load "
                 f"{load_before:.2f} -> {loadavg():.2f}"
                 + (f", rest of the machine {other_cpus:.2f} CPUs)" if other_cpus is not None
                    else ")"))


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "s":
        return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"
    if unit == "ms":
        return f"{value:,.1f} ms"
    if unit == "MiB":
        return f"{value:,.0f} MiB"
    if unit in ("B", "/s", "/CPU-s"):
        return f"{value:,.0f}{'' if unit == 'B' else ' ' + unit}".replace(" B", " B")
    return f"{value:,.1f} {unit}"


def render(table: Table, brokers: list[str], header: list[str]) -> str:
    kafkas = [b for b in brokers if b != "roster"] + (
        ["kafka-durable"] if any(r.values.get("kafka-durable") for r in table.rows.values())
        else [])
    out = header + [""]
    out.append("| section | measure | roster | " + " | ".join(kafkas) + " | roster ÷ "
               + " | roster ÷ ".join(kafkas) + " | load 1-min before→after (rest of machine) |")
    out.append("|---|---|---:|" + "---:|" * len(kafkas) * 2 + "---|")
    for row in table.rows.values():
        med = {b: statistics.median(v) for b, v in row.values.items() if v}
        cells = [fmt(med.get("roster"), row.unit)] + [fmt(med.get(k), row.unit) for k in kafkas]
        ratios = []
        for k in kafkas:
            if med.get("roster") is not None and med.get(k):
                ratios.append(f"**{med['roster'] / med[k]:.2f}×**")
            else:
                ratios.append("")
        loads = []
        for b in ["roster", *kafkas]:
            for before, after, other in row.load.get(b, [])[:1]:
                loads.append(f"{b[:1] if b == 'roster' else 'k' + b[5:6]}: {before:.1f}→"
                             f"{after:.1f}" + (f" ({other:.2f})" if other is not None else ""))
        rounds = max((len(v) for v in row.values.values()), default=0)
        measure = row.measure + (f" (median of {rounds})" if rounds > 1 else "") + (
            f"; {row.note}" if row.note else "")
        out.append(f"| {row.section} | {measure} | " + " | ".join(cells) + " | "
                   + " | ".join(ratios) + " | " + "; ".join(loads) + " |")
    out.append("")
    out.append("Ratios divide roster's figure by Kafka's: for times and memory lower is better, "
               "for rates higher. Load: r = roster, k = kafka, k- = kafka-default-heap, "
               "kd = kafka-durable (first round).")
    return "\n".join(out)


def order(brokers: list[str], round_no: int) -> list[str]:
    return brokers if round_no % 2 == 0 else list(reversed(brokers))


# -- coordinator --------------------------------------------------------------------------------

def classic_group_batch_bytes(size: int, round_no: int = 1) -> int:
    """The __consumer_offsets batch (one GroupMetadata record, v3, uncompressed) a formed group
    of bench/coordinator.py's rebalance phase takes: `size` static members whose ids are the
    instance id, "-" and a UUID (Kafka's and roster's form), client id bench-member, host
    /127.0.0.1, loadgen's subscription and assignment. Both brokers wrote 1,630,175 bytes for
    10,000 members, as this computes."""
    group = f"rb-{size}"
    members = tuple(
        MemberValue(f"{group}-i{i:05d}-{uuid.UUID(int=0)}", f"{group}-i{i:05d}",
                    "bench-member", "/127.0.0.1", 60_000, 45_000,
                    loadgen.subscription(round_no), loadgen.ASSIGNMENT)
        for i in range(size))
    value = GroupValue("consumer", 1, "range", members[0].member_id, 0, members)
    key, data = Record(GroupKey(group), value).encode()
    return len(records_batch([(key, data, 0)], 1 << 30))


def rebalance_settings(size: int) -> tuple[dict[str, str], str]:
    """Both brokers' extra settings for the rebalance of `size` members, and the rows' note:
    message.max.bytes raised to 64 MiB when the group's record is over the default, which
    would fail the group's SyncGroup on either broker (see the docstring)."""
    batch = classic_group_batch_bytes(size)
    if batch <= KAFKA_MESSAGE_MAX_BYTES:
        return {}, ""
    return {"message.max.bytes": str(INTERNAL_MAX_BATCH)}, (
        f"both brokers message.max.bytes={INTERNAL_MAX_BATCH} (the group's record, a "
        f"{batch:,}-byte batch, is over the default {KAFKA_MESSAGE_MAX_BYTES:,}, at which "
        f"both answer its SyncGroup UNKNOWN_SERVER_ERROR)")


async def section_coordinator(brokers: Brokers, table: Table, args) -> None:
    cargs = kit.parse_args([])
    cargs.hb_members, cargs.hb_groups = args.members, max(1, args.members // 100)
    cargs.hb_warmup, cargs.cg_seconds, cargs.cg_rounds = args.warmup, args.seconds, 2
    cargs.cg_partitions = 100
    cargs.quiet_wait, cargs.rb_session_ms, cargs.rb_timeout = 5.0, 45_000, 300.0
    cargs.rounds, cargs.rounds_large = 3, 1
    cargs.cg_join_rounds = 3
    cargs.pool = min(cargs.pool, args.members)
    for n in range(args.rounds):
        for kind in order(args.brokers, n) if "heartbeats" in args.coordinator_parts else ():
            load = loadavg()
            result = await coordinator_consumer.phase_heartbeats(kit, Only(brokers, kind), cargs)
            other = result["other_cpus_max"]
            for proto, label in (("classic", "classic Heartbeat"),
                                 ("consumer", "ConsumerGroupHeartbeat")):
                table.add("coordinator", f"{label} per broker CPU-s, {result['members']:,} "
                          f"members", "/CPU-s", True, kind,
                          result[f"{proto}_per_broker_cpu_s"]["median"], load, other,
                          note=f"{args.warmup:.0f} s warm-up per blast")
                table.add("coordinator", f"{label}/s (wall), {result['members']:,} members",
                          "/s", True, kind, result[f"{proto}_per_s"]["median"], load, other)
            if result["errors"]:
                progress(f"{kind}: {result['errors']} heartbeat answers carried an error")
        if "heartbeats" in args.coordinator_parts and n == 0:
            load = loadavg()
            floor = await floor_blast(args.members, cargs, "echo")
            table.add("coordinator", f"floor: bare uvloop echo of {args.members:,} members' "
                      "classic Heartbeat frames per its CPU-s", "/CPU-s", True, "roster",
                      floor["per_broker_cpu_s"], load, floor["other_cpus"],
                      note="canned answers, no coordinator; no Kafka counterpart")
            load = loadavg()
            floor = await floor_blast(args.members, cargs, "heartbeat")
            table.add("coordinator", f"floor: a heartbeat's irreducible work in CPython, "
                      f"{args.members:,} members' classic Heartbeat frames per its CPU-s",
                      "/CPU-s", True, "roster", floor["per_broker_cpu_s"], load,
                      floor["other_cpus"],
                      note="bench/heartbeat_floor.py: frame, fields, two dict lookups, the "
                           "deadline, the answer; no Kafka counterpart")
        for size in args.sizes:
            settings, note = rebalance_settings(size) if "rebalance" in args.coordinator_parts \
                else ({}, "")
            for kind in order(args.brokers, n):
                if "rebalance" not in args.coordinator_parts:
                    break
                load = loadavg()
                if settings:
                    progress(f"{kind}: rebalance of {size:,} with {note}")
                brokers.extra = settings
                try:
                    result = await kit.phase_rebalance(brokers, kind, size, cargs)
                finally:
                    brokers.extra = {}
                rounds = result["rounds"]
                other = max((r["other_cpus"] for r in rounds), default=None)
                table.add("coordinator", f"classic group of {size:,} forms (first JoinGroup → "
                          "every SyncGroup answered)", "s", False, kind, result["formation_s"],
                          load, other, note=note)
                table.add("coordinator", f"classic eager rebalance, {size:,} members (last "
                          "JoinGroup → every SyncGroup answered)", "s", False, kind,
                          result["median_s"], load, other, note=note)
                table.add("coordinator", f"classic eager rebalance, {size:,} members: broker "
                          "CPU", "s", False, kind,
                          statistics.median(r["broker_cpu_s"] for r in rounds) if rounds
                          else None, load, other, note=note)
            for kind in order(args.brokers, n):
                if "join" not in args.coordinator_parts:
                    break
                # a partition per member and per joiner, so that every joiner gets one (more
                # took roster longer to create than an admin request's deadline on a loaded
                # machine)
                cargs.cg_join_members = size
                cargs.cg_join_partitions = size + cargs.cg_join_rounds
                load = loadavg()
                result = await coordinator_consumer.phase_join(kit, Only(brokers, kind), cargs)
                runs = result["runs"]
                table.add("coordinator", f"consumer protocol: {size:,} members settle "
                          "(joins, heartbeats back to back)", "s", False, kind,
                          result["formed_s"], load)
                table.add("coordinator", f"consumer protocol: one member joins {size:,} → "
                          "every partition owned again", "s", False, kind, result["median_s"],
                          load, max((r["other_cpus"] for r in runs), default=None))
                table.add("coordinator", f"consumer protocol: one join into {size:,}: broker "
                          "CPU", "s", False, kind,
                          statistics.median(r["broker_cpu_s"] for r in runs), load)


class FloorPeer:
    """A Python server standing in for the broker on its core, to measure a floor: by default
    bench/loadgen.py's echo peer (a uvloop Protocol answering each frame with a canned
    answer: what a Python server costs to read, frame and answer a heartbeat with no
    coordinator behind it), or the command given (bench/heartbeat_floor.py)."""

    def __init__(self, argv: list[str] | None = None) -> None:
        argv = argv or [str(REPO / "bench" / "loadgen.py"), "echo", "--sizes", ""]
        self.proc = subprocess.Popen([PYTHON, *argv], stdout=subprocess.PIPE, text=True,
                                     cwd=REPO, preexec_fn=_child_setup)
        line = self.proc.stdout.readline()
        self.host, port = line.rsplit(" ", 1)[1].strip().rsplit(":", 1)
        self.port = int(port)
        self.pid = self.proc.pid

    def cpu_s(self) -> float:
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"the floor peer exited with code {self.proc.returncode}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


async def floor_blast(members: int, cargs, which: str) -> dict:
    """The heartbeat blast of section coordinator (same connections, window, warm-up and
    window counted), with the frames of `members` static members (100 to a group), against a
    floor: "echo" (canned answers) or "heartbeat" (bench/heartbeat_floor.py: a heartbeat's
    irreducible work, these members known to it)."""
    table = [(f"hb-{i // 100:03d}", 1, f"m-{i:05d}-{uuid.uuid4()}") for i in range(members)]
    frames = [bytes(loadgen.heartbeat_frame(f"floor-{i}", group_id, generation, member_id,
                                            f"i-{i:05d}"))
              for i, (group_id, generation, member_id) in enumerate(table)]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(table, f)
    try:
        peer = FloorPeer() if which == "echo" else FloorPeer(
            [str(REPO / "bench" / "heartbeat_floor.py"), "--members", f.name])
        try:
            return await coordinator_consumer.blast(kit, peer, frames,
                                                     coordinator_consumer.CLASSIC_ERROR_AT,
                                                     cargs, which)
        finally:
            peer.stop()
    finally:
        os.unlink(f.name)


# -- commits ------------------------------------------------------------------------------------

async def section_commits(brokers: Brokers, table: Table, args) -> None:
    kinds = [*args.brokers, "kafka-durable"] if "kafka" in args.brokers else args.brokers
    for n in range(args.rounds):
        for kind in order(kinds, n):
            broker = brokers.new(kind, "commits")
            try:
                broker.start()
                make_topics(broker, {"commits": args.committers})
                load = loadavg()
                busy0 = kit.machine_busy_s()
                own0 = broker.cpu_s() + time.process_time()
                result = await offsets_bench.run_committers(broker.address, "commits",
                                                            args.committers, 2.0,
                                                            args.seconds, broker)
                wall = result["seconds"] + 2.2
                other = max(0.0, (kit.machine_busy_s() - busy0)
                            - (broker.cpu_s() + time.process_time() - own0)) / wall
                if result["errors"]:
                    progress(f"{kind}: {result['errors']} commit answers carried an error")
                table.add("commits", f"OffsetCommit/s, {args.committers} closed-loop "
                          "committers", "/s", True, kind, result["commits_per_s"], load, other,
                          note="kafka does not fsync by default; kafka-durable: "
                               "log.flush.interval.messages=1")
                table.add("commits", "commit latency p50", "ms", False, kind, result["p50_ms"],
                          load, other)
                table.add("commits", "commit latency p99", "ms", False, kind, result["p99_ms"],
                          load, other)
                table.add("commits", "broker CPU per commit", "µs", False, kind,
                          result["broker_cpu_us_per_commit"], load, other)
            finally:
                brokers.stop(broker)


# -- memory -------------------------------------------------------------------------------------

async def section_memory(brokers: Brokers, table: Table, args) -> None:
    cargs = kit.parse_args([])
    cargs.mem_members, cargs.mem_groups = args.memory_members, args.memory_members // 10
    cargs.mem_pool = min(2000, args.memory_members)
    cargs.mem_idle = 3.0
    for n in range(args.rounds):
        for kind in order(args.brokers, n):
            broker = brokers.new(kind, "idle")
            try:
                load = loadavg()
                broker.start()
                await asyncio.sleep(3.0)
                table.add("memory", "idle RSS 3 s after ready", "MiB", False, kind,
                          broker.rss() / 2**20, load)
                table.add("memory", "CPU from spawn to idle (3 s after ready)", "s", False, kind,
                          broker.cpu_s(), load)
            finally:
                brokers.stop(broker)
            load = loadavg()
            result = await kit.phase_memory(brokers, kind, cargs)
            table.add("memory", f"bytes per idle static member, {result['members']:,} members "
                      "in groups of 10", "B", False, kind, result["bytes_per_member"], load)
            table.add("memory", f"RSS holding {result['members']:,} members", "MiB", False,
                      kind, result["rss_after"] / 2**20, load)
    if "roster" in args.brokers:
        load = loadavg()
        for label, rss in memory_floor(max(3, args.rounds)).items():
            table.add("memory", f"idle RSS floor: {label}", "MiB", False, "roster",
                      rss / 2**20, load, note="no Kafka counterpart")


def memory_floor(rounds: int) -> dict:
    """The idle RSS below which roster cannot go in CPython here: a bare asyncio socket server,
    and a process that has imported the modules `roster serve` imports (the code a broker
    carries before it holds any state), each 3 s after it is up."""
    server = ("import asyncio, sys\n"
              "async def main():\n"
              "    s = await asyncio.start_server(lambda r, w: None, '127.0.0.1', 0)\n"
              "    print('up', flush=True)\n"
              "    await asyncio.sleep(3600)\n"
              "asyncio.run(main())\n")
    modules = ("import sys\n"
               "sys.modules.setdefault('hypothesis', None)\n"
               "import roster.cli, roster.broker.network.server\n" + server)
    out: dict[str, list[float]] = {"an asyncio socket server": [],
                                   "roster serve's imports and an asyncio socket server": []}
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    for _ in range(rounds):
        for label, code in zip(out, (server, modules)):
            proc = subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE, text=True,
                                    cwd=REPO, env=env, preexec_fn=_child_setup)
            try:
                proc.stdout.readline()
                time.sleep(3.0)
                with open(f"/proc/{proc.pid}/statm") as f:
                    out[label].append(int(f.read().split()[1]) * PAGE)
            finally:
                proc.kill()
                proc.wait()
    return {k: statistics.median(v) for k, v in out.items()}


# -- start --------------------------------------------------------------------------------------

def form_one_group(broker: Broker, group: str, deadline: float) -> None:
    """FindCoordinator until the coordinator answers, then a group of 3 static members formed
    (JoinGroup, SyncGroup) by bench/loadgen.py's driver."""
    broker.wait_coordinator(deadline, group)

    async def form() -> None:
        conns = await loadgen.open_conns(broker.host, broker.port, 3)
        try:
            await loadgen.form_groups(conns, [group], 3, loadgen.GroupSpec(
                session_ms=30_000, rebalance_ms=30_000), timeout_s=deadline - time.perf_counter())
        finally:
            loadgen.close_all(conns)

    asyncio.run(form())


def timed_start(broker: Broker, group: str) -> dict:
    broker.start(coordinator=False)
    form_one_group(broker, group, broker.spawned_at + 600)
    timings = dict(broker.timings)
    timings["group_s"] = time.perf_counter() - broker.spawned_at
    timings["cpu_s"] = broker.cpu_s()
    return timings


def offset_commit_frame(group: str, topic: str, partitions: int, offset: int) -> bytes:
    schema = request_schema(8, 8)
    topic_entry = element(schema, "topics")
    part = element(topic_entry, "partitions")
    body = make(schema, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                group_instance_id=None, topics=(make(topic_entry, name=topic, partitions=tuple(
                    make(part, partition_index=p, committed_offset=offset,
                         committed_leader_epoch=-1, committed_metadata="")
                    for p in range(partitions))),))
    return bytes(encode_request(8, 8, offset, "versus-loader", body))


async def load_commits(broker: Broker, commits: int, partitions: int = 100,
                       groups: int = 1000, depth: int = 64) -> None:
    """`commits` offset-commit records: OffsetCommit requests of `partitions` partitions each,
    round-robin over `groups` groups, `depth` requests in flight on each of 4 connections."""
    requests = max(1, commits // partitions)
    conns = await loadgen.open_conns(broker.host, broker.port, 4)
    try:
        sent = 0

        async def worker(conn) -> None:
            nonlocal sent
            pending = []
            while sent < requests:
                n = sent
                sent += 1
                pending.append(conn.request(bytearray(offset_commit_frame(
                    f"loaded-{n % groups:04d}", "loaded", partitions, n))))
                if len(pending) >= depth:
                    await pending.pop(0)
            for future in pending:
                await future

        await asyncio.gather(*(worker(c) for c in conns))
    finally:
        loadgen.close_all(conns)


def load_data_dir(broker: Broker, args) -> None:
    """Fill a started broker with --loaded-commits offset commits and --loaded-bytes of log."""
    make_topics(broker, {"loaded": 100, "bulk": 1})
    t0 = time.perf_counter()
    asyncio.run(load_commits(broker, args.loaded_commits))
    progress(f"{broker.kind}: {args.loaded_commits:,} commits written in "
             f"{time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    with PipelinedProducer(broker.address, "bulk", 0, 1, b"x" * 1024, 64 * 1024, 600) as producer:
        producer.run(-(-args.loaded_bytes // len(producer.batch)), 16, 600)
    progress(f"{broker.kind}: {args.loaded_bytes / 2**20:,.0f} MiB of log written in "
             f"{time.perf_counter() - t0:.1f} s")


def python_floor(rounds: int) -> dict:
    """What CPython itself costs to start on this machine, pinned like the broker."""
    server = ("import asyncio, socket\n"
              "async def main():\n"
              "    done = asyncio.Event()\n"
              "    async def serve(r, w):\n"
              "        await r.readexactly(4); w.write(b'\\0\\0\\0\\0'); await w.drain();"
              " w.close(); done.set()\n"
              "    s = await asyncio.start_server(serve, '127.0.0.1', 0)\n"
              "    print(s.sockets[0].getsockname()[1], flush=True)\n"
              "    await done.wait()\n"
              "asyncio.run(main())\n")
    out = {"python -c pass": [], "python -c 'import asyncio'": [],
           "asyncio socket server answering one request": []}
    for _ in range(rounds):
        for label, code in (("python -c pass", "pass"),
                            ("python -c 'import asyncio'", "import asyncio")):
            t0 = time.perf_counter()
            subprocess.run([PYTHON, "-c", code], check=True, preexec_fn=_child_setup)
            out[label].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        proc = subprocess.Popen([PYTHON, "-c", server], stdout=subprocess.PIPE, text=True,
                                preexec_fn=_child_setup)
        port = int(proc.stdout.readline())
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"ping")
            sock.recv(4, socket.MSG_WAITALL)
        out["asyncio socket server answering one request"].append(time.perf_counter() - t0)
        proc.wait(10)
    return {k: statistics.median(v) for k, v in out.items()}


async def section_start(brokers: Brokers, table: Table, args) -> None:
    # blocking work: it runs in a thread so that asyncio.run() inside it has no running loop
    await asyncio.to_thread(_section_start, brokers, table, args)


def _section_start(brokers: Brokers, table: Table, args) -> None:
    loaded: dict[str, Broker] = {}
    for kind in args.brokers:
        broker = brokers.new(kind, "loaded")
        progress(f"{kind}: filling a data dir ({args.loaded_commits:,} commits, "
                 f"{args.loaded_bytes / 2**20:,.0f} MiB)")
        broker.start()
        load_data_dir(broker, args)
        broker.stop()
        loaded[kind] = broker
    for n in range(args.rounds):
        for kind in order(args.brokers, n):
            broker = brokers.new(kind, "start")
            try:
                load = loadavg()
                t = timed_start(broker, f"start-{n}")
            finally:
                brokers.stop(broker)
            format_s = t.get("format_s", 0.0)
            note = "Kafka: storage format + broker" if kind != "roster" else ""
            table.add("start", "empty data dir: spawn → first answered Metadata", "s", False,
                      kind, format_s + t["metadata_s"], load, note=note)
            if kind != "roster":
                table.add("start", "empty data dir: of which Kafka's storage format", "s",
                          False, kind, format_s, load)
            table.add("start", "empty data dir: spawn → a formed group of 3", "s", False, kind,
                      format_s + t["group_s"], load)
            table.add("start", "empty data dir: broker CPU to a formed group", "s", False, kind,
                      t["cpu_s"], load)
            broker = loaded[kind]
            try:
                load = loadavg()
                t = timed_start(broker, f"loaded-start-{n}")
            finally:
                broker.stop()
            table.add("start", f"{args.loaded_commits:,} commits + "
                      f"{args.loaded_bytes / 2**20:,.0f} MiB of log: spawn → first answered "
                      "Metadata", "s", False, kind, t["metadata_s"], load)
            table.add("start", f"{args.loaded_commits:,} commits + "
                      f"{args.loaded_bytes / 2**20:,.0f} MiB of log: spawn → a formed group of 3",
                      "s", False, kind, t["group_s"], load)
    for kind in loaded:
        brokers.stop(loaded[kind])
    load = loadavg()
    for label, seconds in python_floor(max(3, args.rounds)).items():
        table.add("start", f"CPython floor: {label}", "s", False, "roster", seconds, load,
                  note="no Kafka counterpart")


# -- data path ----------------------------------------------------------------------------------

async def section_datapath(brokers: Brokers, table: Table, args) -> None:
    await asyncio.to_thread(_section_datapath, brokers, table, args)


def _section_datapath(brokers: Brokers, table: Table, args) -> None:
    pf = produce_fetch.parse_args(["--pipelined-records", str(args.datapath_records)])
    value = b"v" * pf.record_size
    for n in range(args.rounds):
        for kind in order(args.brokers, n):
            broker = brokers.new(kind, "datapath")
            try:
                broker.start()
                make_topics(broker, {produce_fetch.TOPIC: 1})
                steps = [(f"produce acks={acks}", produce_fetch.produce_pipelined, (acks, pf,
                                                                                     value))
                         for acks in ("1", "all")]
                steps.append(("fetch from offset 0", produce_fetch.fetch_all,
                              (pf, pf.record_size)))
                for label, step, step_args in steps:
                    load = loadavg()
                    with produce_fetch.CpuMeter(broker.pid) as meter:
                        result = step(broker, *step_args)
                    cpu = meter.usage["broker"]
                    table.add("datapath", f"{label}: MB/s", "MB/s", True, kind,
                              result.mb_per_s, load, meter.usage["other"])
                    table.add("datapath", f"{label}: MB per broker CPU-s", "MB/CPU-s", True,
                              kind, result.mb_per_s / cpu if cpu else None, load,
                              meter.usage["other"])
            finally:
                brokers.stop(broker)


# -- a developer's CI run -----------------------------------------------------------------------

def ci_run(broker: Broker, args) -> dict:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient as KafkaAdmin
    from confluent_kafka.admin import NewTopic

    t0 = time.perf_counter()
    broker.start(coordinator=False)
    started = time.perf_counter() - t0
    admin = KafkaAdmin({"bootstrap.servers": broker.address})
    topics = [f"ci-{i:02d}" for i in range(args.ci_topics)]
    for future in admin.create_topics([NewTopic(t, 3, 1) for t in topics],
                                      operation_timeout=30).values():
        future.result(timeout=120)
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 5})
    for topic in topics[:args.ci_groups]:
        for i in range(args.ci_records):
            while True:
                try:
                    producer.produce(topic, b"%d" % i, partition=i % 3)
                    break
                except BufferError:   # librdkafka's queue is full: wait for deliveries
                    producer.poll(0.05)
            if i % 1000 == 999:
                producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("CI run: produce did not finish")
    seen = {g: set() for g in range(args.ci_groups)}
    lock = threading.Lock()
    failures: list[str] = []
    give_up = time.perf_counter() + 600

    def member(g: int) -> None:
        consumer = Consumer({"bootstrap.servers": broker.address, "group.id": f"ci-group-{g}",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:
            consumer.subscribe([topics[g]])
            while time.perf_counter() < give_up:
                with lock:
                    if len(seen[g]) >= args.ci_records:
                        return
                batch = consumer.consume(500, 0.2)
                records = [m for m in batch if not m.error()]
                if records:
                    with lock:
                        seen[g].update((m.partition(), m.offset()) for m in records)
                    consumer.commit(asynchronous=False)
            failures.append(f"group {g} read {len(seen[g])} records")
        except Exception as exc:  # reported below: the run is then invalid
            failures.append(f"group {g}: {exc}")
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(g,)) for g in range(args.ci_groups)
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError("CI run: " + "; ".join(failures[:5]))
    for future in admin.delete_topics(topics, operation_timeout=30).values():
        future.result(timeout=120)
    groups = [f"ci-group-{g}" for g in range(args.ci_groups)]
    for future in admin.delete_consumer_groups(groups, request_timeout=30).values():
        future.result(timeout=120)
    broker.stop()
    return {"wall_s": time.perf_counter() - t0,   # t0 is before the storage format
            "start_s": started}


async def section_ci(brokers: Brokers, table: Table, args) -> None:
    await asyncio.to_thread(_section_ci, brokers, table, args)


def _section_ci(brokers: Brokers, table: Table, args) -> None:
    label = (f"{args.ci_topics} topics, {args.ci_groups} groups of 3 consumers, "
             f"{args.ci_records:,} records each (confluent-kafka)")
    for n in range(args.rounds):
        for kind in order(args.brokers, n):
            broker = brokers.new(kind, "ci")
            try:
                load = loadavg()
                result = ci_run(broker, args)
            finally:
                brokers.stop(broker)
            table.add("ci", f"a developer's CI run, wall clock: {label}", "s", False, kind,
                      result["wall_s"], load, note="Kafka: storage format included")
            table.add("ci", "of which the start (spawn → first answered Metadata)", "s", False,
                      kind, result["start_s"], load)
            table.add("ci", "the rest (work after start, and the stop)", "s", False, kind,
                      result["wall_s"] - result["start_s"], load)


# -- main ---------------------------------------------------------------------------------------

SECTION_RUNNERS = {"coordinator": section_coordinator, "commits": section_commits,
                   "memory": section_memory, "start": section_start,
                   "datapath": section_datapath, "ci": section_ci}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=",".join(SECTIONS), help="sections: " + ",".join(SECTIONS))
    p.add_argument("--brokers", default="roster,kafka,kafka-default-heap",
                   help="roster, kafka, kafka-default-heap (kafka-durable is added to "
                        "section commits when kafka is listed)")
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3, "
                   "quick 1)")
    p.add_argument("--members", type=int, default=10_000, help="coordinator: heartbeat members")
    p.add_argument("--sizes", default="1000,10000", help="coordinator: group sizes")
    p.add_argument("--warmup", type=float, default=15.0,
                   help="coordinator: seconds each heartbeat blast runs before it is counted "
                        "(Kafka's JIT)")
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per blast")
    p.add_argument("--coordinator-parts", default="heartbeats,rebalance,join",
                   help="coordinator: heartbeats, rebalance (classic eager), join (consumer "
                        "protocol)")
    p.add_argument("--committers", type=int, default=100)
    p.add_argument("--memory-members", type=int, default=10_000)
    p.add_argument("--loaded-commits", type=int, default=1_000_000)
    p.add_argument("--loaded-bytes", type=int, default=2**30)
    p.add_argument("--datapath-records", type=int, default=200_000)
    p.add_argument("--ci-topics", type=int, default=50)
    p.add_argument("--ci-groups", type=int, default=20)
    p.add_argument("--ci-records", type=int, default=10_000)
    p.add_argument("--json", help="also write the results as JSON here")
    p.add_argument("--markdown", help="also write the table here")
    p.add_argument("--keep", action="store_true", help="keep the work directory (broker logs)")
    args = p.parse_args(argv)
    args.only = [s for s in args.only.split(",") if s]
    unknown = set(args.only) - set(SECTIONS)
    if unknown:
        p.error(f"unknown sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    args.brokers = [b for b in args.brokers.split(",") if b]
    if set(args.brokers) - {"roster", "kafka", "kafka-default-heap"}:
        p.error("brokers: roster, kafka, kafka-default-heap")
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.quick:
        args.members, args.sizes, args.warmup, args.seconds = 1000, [100], 3.0, 2.0
        args.committers, args.memory_members = 20, 1000
        args.loaded_commits, args.loaded_bytes = 10_000, 16 * 2**20
        args.datapath_records, args.ci_topics, args.ci_groups, args.ci_records = \
            20_000, 5, 2, 1000
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    return args


def git_tree() -> str:
    """The commit measured (VERSUS_TREE names it for a run from an exported tree: `git archive`
    of a commit, so that engineers' uncommitted edits in a shared checkout are not measured)."""
    if os.environ.get("VERSUS_TREE"):
        return os.environ["VERSUS_TREE"]

    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=REPO, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    changed = len(git("status", "--porcelain", "src", "bench").splitlines())
    return git("rev-parse", "--short", "HEAD") + (
        f" + {changed} uncommitted file(s) in src/ or bench/" if changed else "")


def main(argv=None) -> int:
    global BROKER_CPUS, CLIENT_CPUS
    args = parse_args(argv)
    loadgen.raise_nofile_limit()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        BROKER_CPUS, CLIENT_CPUS = {cpus[0]}, {cpus[1]}
        os.sched_setaffinity(0, CLIENT_CPUS)
    kafka_classpath()   # fails at once, saying how to resolve the jars, when they are absent
    workdir = Path(tempfile.mkdtemp(prefix="versus-kafka-"))
    brokers = Brokers(workdir)
    table = Table()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    failures = []
    started = time.perf_counter()
    load_start = Path("/proc/loadavg").read_text().split()[:3]

    async def run() -> None:
        for section in args.only:
            try:
                await SECTION_RUNNERS[section](brokers, table, args)
            except Exception as exc:  # the other sections still tell us something
                failures.append(f"{section}: {type(exc).__name__}: {exc}"[:2000])
                progress(f"FAILED {section}: {type(exc).__name__}: {exc}"[:2000])
                brokers.stop_all()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        failures.append("interrupted; the table holds what finished before")
    finally:
        brokers.stop_all()
        if args.keep:
            progress(f"broker logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    load_end = Path("/proc/loadavg").read_text().split()[:3]
    header = [
        f"roster {git_tree()} against Apache Kafka {KAFKA_VERSION} ({JAVA}: "
        + subprocess.run([JAVA, "-version"], capture_output=True, text=True).stderr
        .splitlines()[0] + f"); {os.cpu_count()} CPUs, brokers pinned to CPU "
        f"{sorted(BROKER_CPUS) if BROKER_CPUS else 'any'}, load generator to CPU "
        f"{sorted(CLIENT_CPUS) if CLIENT_CPUS else 'any'}; Python {sys.version.split()[0]}",
        f"command: {' '.join([Path(PYTHON).name, *sys.argv])}; "
        f"{time.perf_counter() - started:.0f} s; load average (1, 5, 15 min) "
        f"{' '.join(load_start)} at the start, {' '.join(load_end)} at the end",
        "JVM: kafka = " + " ".join(JVM["kafka"]) + "; kafka-default-heap = "
        + " ".join(JVM["kafka-default-heap"]) + "; kafka-durable = kafka + "
        "log.flush.interval.messages=1",
    ]
    report = render(table, args.brokers, header)
    if failures:
        report += "\n\nFailures:\n" + "\n".join(f"- {f}" for f in failures)
    if brokers.logs:
        report += "\n\nBrokers' ERROR lines (first 10 of each):\n" + "\n".join(
            f"- {name}: {line[:500]}" for name, lines in brokers.logs.items() for line in lines)
    print(report)
    if args.markdown:
        Path(args.markdown).write_text(report + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"header": header, "failures": failures, "broker_errors": brokers.logs,
             "rows": [row.__dict__ for row in table.rows.values()]}, indent=2))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
