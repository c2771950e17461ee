#!/usr/bin/env python3
"""What the connection limits cost (issue 11): produce and heartbeat throughput of roster at a
base commit and at the code under test, interleaved in one run, with the ratios.

Each round runs, for each side (the order alternates between rounds), against a fresh broker:

  produce    bench/produce_fetch.py's pipelined load generator: one connection re-sending one
             pre-encoded Produce request (a ~64 KiB batch of 1 KiB records, acks=1), 16 in
             flight; records/s and records per broker-CPU-second;
  heartbeat  bench/coordinator.py's heartbeat phase: static members formed into groups, then
             their Heartbeat v3 frames pipelined over 16 connections (128 in flight each);
             answers/s and answers per broker-CPU-second.

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
    """PYTHONPATH for the brokers started while it is in use."""

    def __init__(self, name: str, src: Path) -> None:
        self.name = name
        self.src = src.resolve()

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
    with side:
        result = asyncio.run(coordinator.phase_heartbeat(targets, "roster", args))
    if result.get("invalid"):
        raise RuntimeError(f"{side.name}: heartbeat answers carried errors: {result['errors']}")
    return {"per_s": result["per_s"], "per_broker_cpu_s": result["per_broker_cpu_s"],
            "other_cpus": result["other_cpus"]}


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
    out.append("")
    out.append("Every round (per s; per broker-CPU-s in brackets):")
    out.append("")
    for measure in labels:
        for side in sides:
            rows = results[measure][side.name]
            if not rows:
                continue
            cells = ", ".join(f"{r['per_s']:,.0f} ({r['per_broker_cpu_s'] or 0:,.0f})"
                              for r in rows)
            out.append(f"- {measure}, {side.name}: {cells}")
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
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--measures", default="produce,heartbeat")
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
    results = {m: {s.name: [] for s in sides} for m in ("produce", "heartbeat")}
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
    finally:
        targets.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)
    print(render(results, sides, args, time.perf_counter() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
