#!/usr/bin/env python3
"""What a change costs: produce and heartbeat throughput and 1,000-member rebalance time of
roster at a base commit and at the code under test, interleaved in one run, with the ratios.
(Written for the connection limits, issue 11; used for issues 13 and 18 too.)

Each round runs, for each side (the order alternates between rounds), against a fresh broker:

  produce    bench/produce_fetch.py's pipelined load generator: one connection re-sending one
             pre-encoded Produce request (a ~64 KiB batch of 1 KiB records, acks=1), 16 in
             flight; records/s and records per broker-CPU-second;
  heartbeat  bench/coordinator.py's heartbeat phase: static members formed into groups, then
             their Heartbeat v3 frames pipelined over 16 connections (128 in flight each);
             answers/s and answers per broker-CPU-second.
  rebalance  (--measures ...,rebalance) bench/coordinator.py's rebalance phase: a group of
             --rb-size members, one connection each, formed, then --rounds-per-measure timed
             rebalances (every member rejoins with new metadata); the median's wall time and
             the broker's CPU per rebalance.

The side is chosen with PYTHONPATH for the broker process (`python -m roster`), so both sides
run the same interpreter and packages; the load generators are this checkout's. Medians over
the rounds, and current/base ratios, are printed as Markdown. The machine may be shared: the
per-broker-CPU-second rates are the ones to compare when other processes were busy (the table
shows how busy).

    git worktree add /tmp/roster-base ce7a94a
    .venv/bin/python bench/hardening.py --base /tmp/roster-base/src --current src --rounds 5
    # and a third tree, e.g. the current one without one change, measured in the same rounds:
    .venv/bin/python bench/hardening.py --base /tmp/roster-base/src \
        --also without-change=/tmp/roster-without/src --current src
    # a side's brokers with a setting of their own, e.g. /metrics on (issue 18: on vs off)
    .venv/bin/python bench/hardening.py --base src --current src --set-for current=http.port=0 \
        --measures heartbeat,rebalance

Everything stays on 127.0.0.1; brokers and data directories are removed at the end.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import coordinator  # noqa: E402
import produce_fetch  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def progress(message: str) -> None:
    print(f"[hardening {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def describe(src: Path) -> str:
    """The commit a source tree is at (and whether it has uncommitted changes)."""
    try:
        commit = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--", "."],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return str(src)
    return commit + (" + uncommitted changes" if dirty else "")


class Side:
    """PYTHONPATH for the brokers started while it is in use, and their --set settings."""

    def __init__(self, name: str, src: Path, settings: list[str] | None = None) -> None:
        self.name = name
        self.src = src.resolve()
        self.settings = settings or []

    def __enter__(self):
        self._saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = str(self.src)
        return self

    def __exit__(self, *_):
        if self._saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = self._saved


def produce_round(side: Side, args, workdir: Path, cpus) -> dict:
    data_dir = workdir / f"produce-{side.name}"
    argv = [sys.executable, "-m", "roster", "serve", "--host", "127.0.0.1", "--port", "0",
            "--data-dir", str(data_dir)]
    for setting in side.settings:
        argv += ["--set", setting]
    with side:
        broker = produce_fetch.Service("roster", argv, workdir / f"produce-{side.name}.log",
                                       re.compile(r"roster listening on (\S+:\d+)"), cpus,
                                       args.timeout)
    try:
        subprocess.run([sys.executable, "-m", "roster", "topics", "--bootstrap-server",
                        broker.address, "create", produce_fetch.TOPIC, "--partitions", "1"],
                       check=True, cwd=REPO, timeout=args.timeout, capture_output=True)
        value = b"v" * args.record_size
        produce_fetch.wait_for_quiet(args.quiet_cpus, args.quiet_wait)
        with produce_fetch.CpuMeter(broker.proc.pid) as meter:
            result = produce_fetch.produce_pipelined(broker, "1", args, value)
        broker.check()
    finally:
        broker.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    broker_cpu_s = meter.usage["broker"] * result.seconds
    return {"per_s": result.records / result.seconds,
            "per_broker_cpu_s": result.records / broker_cpu_s if broker_cpu_s else None,
            "other_cpus": meter.usage["other"]}


def heartbeat_round(side: Side, args, targets: coordinator.Targets) -> dict:
    args.set = side.settings
    with side:
        result = asyncio.run(coordinator.phase_heartbeat(targets, "roster", args))
    if result.get("invalid"):
        raise RuntimeError(f"{side.name}: heartbeat answers carried errors: {result['errors']}")
    return {"per_s": result["per_s"], "per_broker_cpu_s": result["per_broker_cpu_s"],
            "other_cpus": result["other_cpus"]}


def rebalance_round(side: Side, args, targets: coordinator.Targets) -> dict:
    """bench/coordinator.py's rebalance phase for one group of --rb-size members: the median
    of its timed rebalances (wall, from the last JoinGroup sent to every member holding its
    SyncGroup answer) and the broker's CPU per rebalance."""
    phase_args = argparse.Namespace(**vars(args))
    phase_args.set, phase_args.rounds = side.settings, args.rounds_per_measure
    with side:
        result = asyncio.run(coordinator.phase_rebalance(targets, "roster", args.rb_size,
                                                         phase_args))
    rounds = result["rounds"]
    if not rounds or any(r["errors"] for r in rounds):
        raise RuntimeError(f"{side.name}: rebalance rounds failed: {rounds}")
    return {"ms": statistics.median(r["rebalance_s"] for r in rounds) * 1000,
            "cpu_ms": statistics.median(r["broker_cpu_s"] for r in rounds) * 1000,
            "other_cpus": statistics.median(r["other_cpus"] for r in rounds)}


def median(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key)]
    return statistics.median(values) if values else None


def render(results: dict, sides: list[Side], args, wall_s: float) -> str:
    base = sides[0].name
    trees = "; ".join(f"{s.name}: {describe(s.src)} ({s.src})" for s in sides)
    out = [f"{trees}; {args.rounds} rounds, sides interleaved, medians; {wall_s:.0f} s", ""]
    out.append("| measure | side | per s | /base | per broker-CPU-s | /base | "
               "rest of machine (CPUs) |")
    out.append("|---|---|---:|---:|---:|---:|---:|")
    labels = {"produce": f"produce acks=1, pipelined ({args.pipeline_depth} in flight), "
                         f"records",
              "heartbeat": f"heartbeats ({args.hb_members:,} members, {args.hb_connections} "
                           f"conns x {args.hb_window})"}
    for measure, label in labels.items():
        rows = results[measure]
        if not rows[base]:
            continue
        b, bc = median(rows[base], "per_s"), median(rows[base], "per_broker_cpu_s")
        for side in sides:
            if not rows[side.name]:
                continue
            r, rc = median(rows[side.name], "per_s"), median(rows[side.name], "per_broker_cpu_s")
            other = median(rows[side.name], "other_cpus") or 0.0
            out.append(f"| {label} | {side.name} | {r:,.0f} | {r / b:.3f} | {rc:,.0f} | "
                       f"{rc / bc:.3f} | {other:.2f} |")
    rows = results["rebalance"]
    if rows[base]:
        out.append("")
        out.append(f"| {args.rb_size:,}-member rebalance | side | wall ms | /base | broker CPU ms "
                   f"| /base | rest of machine (CPUs) |")
        out.append("|---|---|---:|---:|---:|---:|---:|")
        b, bc = median(rows[base], "ms"), median(rows[base], "cpu_ms")
        for side in sides:
            if not rows[side.name]:
                continue
            r, rc = median(rows[side.name], "ms"), median(rows[side.name], "cpu_ms")
            other = median(rows[side.name], "other_cpus") or 0.0
            out.append(f"| medians of {len(rows[side.name])} rounds (each the median of "
                       f"{args.rounds_per_measure} rebalances) | {side.name} | {r:.1f} | "
                       f"{r / b:.3f} | {rc:.0f} | {rc / bc if bc else 0:.3f} | {other:.2f} |")
        out.append("")
        out.append("(rebalance: time and CPU, so /base above 1 is slower)")
    out.append("")
    out.append("Every round (per s; per broker-CPU-s in brackets; rebalance: wall ms (CPU ms)):")
    out.append("")
    for measure in labels:
        for side in sides:
            rows = results[measure][side.name]
            if not rows:
                continue
            cells = ", ".join(f"{r['per_s']:,.0f} ({r['per_broker_cpu_s'] or 0:,.0f})"
                              for r in rows)
            out.append(f"- {measure}, {side.name}: {cells}")
    for side in sides:
        rows = results["rebalance"][side.name]
        if rows:
            cells = ", ".join(f"{r['ms']:.1f} ({r['cpu_ms']:.0f})" for r in rows)
            out.append(f"- rebalance, {side.name}: {cells}")
    return "\n".join(out)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, default=Path("/tmp/roster-base/src"),
                    help="source tree (its src/) of the base commit")
    ap.add_argument("--current", type=Path, default=REPO / "src",
                    help="source tree of the code under test (default: this checkout's src/)")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=SRC",
                    help="another source tree to measure alongside (repeatable), e.g. the "
                         "current tree without one change")
    ap.add_argument("--set-for", action="append", default=[], metavar="SIDE=KEY=VALUE",
                    help="a roster --set for one side's brokers only (repeatable), e.g. "
                         "current=http.port=0 to measure with /metrics on")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--measures", default="produce,heartbeat",
                    help="of produce, heartbeat, rebalance")
    ap.add_argument("--rb-size", type=int, default=1000, help="members in the rebalance measure")
    ap.add_argument("--rounds-per-measure", type=int, default=3,
                    help="timed rebalances in each rebalance measurement")
    ap.add_argument("--pipelined-records", type=int, default=300_000)
    ap.add_argument("--pipeline-depth", type=int, default=16)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--batch-bytes", type=int, default=64 * 1024)
    ap.add_argument("--hb-members", type=int, default=2000)
    ap.add_argument("--hb-groups", type=int, default=20)
    ap.add_argument("--hb-seconds", type=float, default=5.0)
    ap.add_argument("--quiet-cpus", type=float, default=0.3,
                    help="before each measurement wait until other processes use fewer CPUs")
    ap.add_argument("--quiet-wait", type=float, default=30.0, help="... for at most this long")
    ap.add_argument("--timeout", type=float, default=180)
    args = ap.parse_args(argv)
    # the heartbeat phase reads coordinator.py's own options: its defaults, with ours on top
    hb = coordinator.parse_args(["--only", "roster", "--phases", "heartbeat"])
    for key, value in vars(hb).items():
        if not hasattr(args, key):
            setattr(args, key, value)
    args.pool = min(args.pool, args.hb_members)
    args.rounds_per_measure = max(args.rounds_per_measure, 1)
    args.measures = [m for m in args.measures.split(",") if m]
    return args


def _stop(*_) -> None:
    """SIGTERM ends the run like Ctrl-C (brokers stopped, files removed); a broker still
    starting, not yet known to the code that stops it, is sent SIGTERM here."""
    for child in _children():
        try:
            os.kill(child, signal.SIGTERM)
        except ProcessLookupError:
            pass
    raise KeyboardInterrupt


def _children() -> list[int]:
    """This process's child processes, by their parent id in /proc."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == me:
                found.append(int(entry))
    return found


def main(argv=None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    sides = [Side("base", args.base)]
    for item in args.also:
        name, _, src = item.partition("=")
        sides.append(Side(name, Path(src)))
    sides.append(Side("current", args.current))
    by_name = {side.name: side for side in sides}
    for item in args.set_for:
        name, _, setting = item.partition("=")
        if name not in by_name or "=" not in setting:
            raise SystemExit(f"--set-for {item!r}: expected SIDE=KEY=VALUE, SIDE one of "
                             f"{', '.join(by_name)}")
        by_name[name].settings.append(setting)
    for side in sides:
        if not (side.src / "roster" / "__init__.py").exists():
            raise SystemExit(f"{side.src} holds no roster package")
    coordinator.loadgen.raise_nofile_limit()
    cpus = sorted(os.sched_getaffinity(0))
    broker_cpus = None
    if len(cpus) >= 2:  # broker on one CPU, load generators on another, as the other benches
        broker_cpus = {cpus[0]}
        coordinator.BROKER_CPUS, coordinator.CLIENT_CPUS = {cpus[0]}, {cpus[1]}
        os.sched_setaffinity(0, {cpus[1]})
    workdir = Path(tempfile.mkdtemp(prefix="roster-hardening-bench-"))
    targets = coordinator.Targets(workdir, args)
    results = {m: {s.name: [] for s in sides} for m in ("produce", "heartbeat", "rebalance")}
    started = time.perf_counter()
    try:
        for round_no in range(args.rounds):
            order = sides if round_no % 2 == 0 else sides[::-1]  # no side always first
            for side in order:
                if "produce" in args.measures:
                    row = produce_round(side, args, workdir, broker_cpus)
                    results["produce"][side.name].append(row)
                    progress(f"round {round_no + 1} {side.name} produce: {row['per_s']:,.0f} "
                             f"records/s, {row['per_broker_cpu_s'] or 0:,.0f} per broker-CPU-s")
                if "heartbeat" in args.measures:
                    row = heartbeat_round(side, args, targets)
                    results["heartbeat"][side.name].append(row)
                    progress(f"round {round_no + 1} {side.name} heartbeat: {row['per_s']:,.0f}"
                             f"/s, {row['per_broker_cpu_s'] or 0:,.0f} per broker-CPU-s")
                if "rebalance" in args.measures:
                    row = rebalance_round(side, args, targets)
                    results["rebalance"][side.name].append(row)
                    progress(f"round {round_no + 1} {side.name} rebalance of {args.rb_size:,}: "
                             f"{row['ms']:.1f} ms, broker CPU {row['cpu_ms']:.0f} ms")
    finally:
        targets.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)
    print(render(results, sides, args, time.perf_counter() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
