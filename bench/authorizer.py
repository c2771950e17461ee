#!/usr/bin/env python3
"""What ACLs cost the hottest request: heartbeats/s with the StandardAuthorizer holding 10,000
bindings, as a ratio of the same broker without an authorizer, measured in the same run.

Two brokers (subprocesses pinned to CPU 0; the load runs on CPU 1), each with a SASL_PLAINTEXT
listener and the SCRAM user `bench`:

- `none`: no authorizer;
- `acls`: authorizer.class.name=StandardAuthorizer and --bindings ACLs written before it starts:
  per other principal a LITERAL topic, a LITERAL group and a PREFIXED group (of ~40 different
  prefix lengths, so a lookup walks many prefixes), plus the one that lets `bench` in: READ on
  the groups PREFIXED `hb-`, which the heartbeats' groups match only through a prefix.

Each round measures both, alternating which goes first, with bench/security.py's heartbeat
load: --members static members, each on its own authenticated connection and in its own group,
each keeping --window Heartbeat v4 requests in flight for --seconds. Reported: heartbeats/s of
each and acls / none per round (goal >= 0.95), and, in process, the cost of one uncached
decision against the 10,000 bindings and of one cached one.

    .venv/bin/python bench/authorizer.py                 # 3 rounds, Markdown on stdout
    .venv/bin/python bench/authorizer.py --rounds 5 --json
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import security as bench_security  # noqa: E402  (bench/security.py: the heartbeat load)

from roster.security.acl_store import AclStore  # noqa: E402
from roster.security.acls import (  # noqa: E402
    AclBinding,
    AclIndex,
    Operation,
    Pattern,
    Permission,
    Resource,
    decide,
)
from roster.security.authorizer import StandardAuthorizer  # noqa: E402
from roster.security.users import add_offline  # noqa: E402

LISTENER = re.compile(r"roster listener (\S+) \((\S+)\) on (\S+):(\d+)")
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bindings(count: int) -> list[AclBinding]:
    found = [AclBinding(Resource.GROUP, "hb-", Pattern.PREFIXED, f"User:{bench_security.USER}",
                        "*", Operation.READ, Permission.ALLOW)]
    i = 0
    while len(found) < count:
        who = f"User:app{i}"
        found += [AclBinding(Resource.TOPIC, f"t{i}", Pattern.LITERAL, who, "*", Operation.READ,
                             Permission.ALLOW),
                  AclBinding(Resource.GROUP, f"g{i}", Pattern.LITERAL, who, "*", Operation.READ,
                             Permission.ALLOW),
                  AclBinding(Resource.GROUP, "hb-" + "x" * (i % 40) + str(i), Pattern.PREFIXED,
                             who, "*", Operation.READ, Permission.ALLOW)]
        i += 1
    return found[:count]


class Broker:
    """A broker with PLAINTEXT and SASL_PLAINTEXT listeners (duck-typed for
    bench/security.py's heartbeats())."""

    def __init__(self, root: Path, extra: dict[str, str]) -> None:
        add_offline(root / "data", bench_security.USER, "SCRAM-SHA-256", bench_security.PASSWORD)
        settings = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                    "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                    "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1",
                    "log.flush.interval.ms": "1000", **extra}
        command = [sys.executable, "-m", "roster", "--log-level", "WARNING", "serve",
                   "--data-dir", str(root / "data"), "--port", "0"]
        for key, value in settings.items():
            command += ["--set", f"{key}={value}"]

        def pin():
            if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > 1:
                os.sched_setaffinity(0, {0})

        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, preexec_fn=pin,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.listeners: dict[str, tuple[str, int]] = {}
        for line in self.proc.stdout:
            match = LISTENER.match(line)
            if match:
                self.listeners[match.group(1)] = (match.group(3), int(match.group(4)))
            if line.startswith("roster listening on"):
                break
        if len(self.listeners) != 2:
            self.stop()
            raise RuntimeError("the broker did not start")
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    def client_context(self):
        return None

    def cpu_seconds(self) -> float:
        """User and system CPU time the broker has used (Linux /proc)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def decision_costs(index: AclIndex, repeat: int = 20_000) -> dict[str, float]:
    """Microseconds per decision: uncached (acls.decide over the index) and cached (the
    authorizer's per principal/address cache, as a steady heartbeat sees it)."""
    names = [f"hb-member-{i}" for i in range(100)]
    start = time.perf_counter()
    for i in range(repeat):
        decide(index, "User:bench", "127.0.0.1", Operation.READ, Resource.GROUP, names[i % 100])
    uncached = (time.perf_counter() - start) / repeat * 1e6

    class Store:
        pass

    store = Store()
    store.index = index
    authorizer = StandardAuthorizer(store)
    for name in names:
        authorizer.authorize("User:bench", "127.0.0.1", Operation.READ, Resource.GROUP, name)
    start = time.perf_counter()
    for i in range(repeat):
        authorizer.authorize("User:bench", "127.0.0.1", Operation.READ, Resource.GROUP,
                             names[i % 100])
    cached = (time.perf_counter() - start) / repeat * 1e6
    return {"uncached decision us": uncached, "cached decision us": cached}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0, help="per measurement")
    parser.add_argument("--members", type=int, default=32)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--bindings", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > 1:
        os.sched_setaffinity(0, {1})
    root = Path(tempfile.mkdtemp(prefix="roster-bench-authorizer-"))
    acls = bindings(args.bindings)
    (root / "acls" / "data").mkdir(parents=True)
    AclStore.open(root / "acls" / "data").apply(acls)
    (root / "none" / "data").mkdir(parents=True)
    results: dict[str, list[float]] = {"none": [], "acls": []}
    per_cpu: dict[str, list[float]] = {"none": [], "acls": []}
    brokers = {}
    try:
        brokers["none"] = Broker(root / "none", {})
        brokers["acls"] = Broker(root / "acls", {"authorizer.class.name": STANDARD})
        for round_no in range(args.rounds):
            order = ["none", "acls"] if round_no % 2 == 0 else ["acls", "none"]
            for name in order:
                cpu = brokers[name].cpu_seconds()
                rate = asyncio.run(bench_security.heartbeats(
                    brokers[name], "SASL_PLAINTEXT", args.members, args.window, args.seconds,
                    f"{name}{round_no}"))
                cpu = brokers[name].cpu_seconds() - cpu
                results[name].append(rate)
                # heartbeats per broker CPU-second (setup included in the CPU): steadier than
                # the rate on a machine others share
                per_cpu[name].append(rate * args.seconds / cpu if cpu else float("nan"))
                log(f"round {round_no + 1}: {name}: {rate:,.0f} heartbeats/s, "
                    f"{per_cpu[name][-1]:,.0f} per broker CPU-second")
    finally:
        for broker in brokers.values():
            broker.stop()
        shutil.rmtree(root, ignore_errors=True)
    ratios = [a / n for a, n in zip(results["acls"], results["none"])]
    cpu_ratios = [a / n for a, n in zip(per_cpu["acls"], per_cpu["none"])]
    costs = decision_costs(AclIndex(acls))
    summary = {"bindings": args.bindings, "members": args.members, "window": args.window,
               "heartbeats/s none": results["none"], "heartbeats/s acls": results["acls"],
               "acls / none": ratios, "median acls / none": statistics.median(ratios),
               "per broker CPU-second none": per_cpu["none"],
               "per broker CPU-second acls": per_cpu["acls"],
               "per CPU-second acls / none": cpu_ratios,
               "median per CPU-second acls / none": statistics.median(cpu_ratios), **costs}
    if args.json:
        print(json.dumps(summary, indent=1))
        return
    print(f"| round | no authorizer (heartbeats/s) | {args.bindings:,} bindings | ratio | "
          "ratio per broker CPU-second |")
    print("|---|---|---|---|---|")
    for i, (n, a, r, c) in enumerate(zip(results["none"], results["acls"], ratios,
                                         cpu_ratios)):
        print(f"| {i + 1} | {n:,.0f} | {a:,.0f} | {r:.3f} | {c:.3f} |")
    print(f"\nmedian ratio: {statistics.median(ratios):.3f} (per broker CPU-second: "
          f"{statistics.median(cpu_ratios):.3f}); one decision against "
          f"{args.bindings:,} bindings: {costs['uncached decision us']:.2f} us uncached, "
          f"{costs['cached decision us']:.2f} us cached")


if __name__ == "__main__":
    main()
