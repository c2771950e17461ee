#!/usr/bin/env python3
"""Server-side (KIP-848) assignor benchmark: what one target assignment costs the consumer
group coordinator (roster.coordinator.consumer.assignors), and how many partitions change
owner when one member joins or leaves.

The group: --members members (default 1,000), all subscribed to --topics topics (default 10)
of --partitions partitions each (default 1,000: 10,000 in all). For `uniform` and `range`:

  scratch  a new group: nobody has a target yet
  steady   every member keeps its previous target (a metadata refresh that changes nothing)
  join     steady plus one new member (its id sorts mid-order)
  leave    steady minus the member in the middle

Times are CPU ms of this process, best of --repeat runs. The goal for uniform is 50 ms for
1,000 members x 10,000 partitions (issue 16); the table says how far each case is from it.

    .venv/bin/python bench/server_assignors.py
    .venv/bin/python bench/server_assignors.py --members 100 --partitions 100 --json out.json
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from roster.coordinator.consumer.assignors import ASSIGNORS, MemberSpec  # noqa: E402

GOAL_MS = 50.0


def timed(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            out = fn()
            best = min(best, (time.process_time() - start) * 1000)
        finally:
            gc.enable()
    return best, out


def owners(plan):
    return {(t, p): m for m, a in plan.items() for t, ps in a.items() for p in ps}


def run(members: int, topics: int, partitions: int, repeat: int):
    sizes = {i.to_bytes(16, "big"): partitions for i in range(topics)}
    subscribed = frozenset(sizes)
    ids = [f"member-{i:05}" for i in range(members)]
    rows = []
    for name, assignor in ASSIGNORS.items():
        scratch_specs = {m: MemberSpec(subscribed) for m in ids}
        scratch_ms, plan = timed(lambda: assignor(scratch_specs, sizes), repeat)
        steady_specs = {m: MemberSpec(subscribed, plan[m]) for m in ids}
        steady_ms, _ = timed(lambda: assignor(steady_specs, sizes), repeat)
        join_specs = dict(steady_specs)
        join_specs[ids[members // 2] + "-new"] = MemberSpec(subscribed)
        join_ms, joined = timed(lambda: assignor(join_specs, sizes), repeat)
        leave_specs = {m: s for m, s in steady_specs.items() if m != ids[members // 2]}
        leave_ms, left = timed(lambda: assignor(leave_specs, sizes), repeat)
        before, after_join, after_leave = owners(plan), owners(joined), owners(left)
        moved_join = sum(1 for tp, m in before.items() if after_join.get(tp) != m)
        moved_leave = sum(1 for tp, m in before.items()
                          if m != ids[members // 2] and after_leave.get(tp) != m)
        rows.append({"assignor": name, "scratch_ms": scratch_ms, "steady_ms": steady_ms,
                     "join_ms": join_ms, "leave_ms": leave_ms, "moved_on_join": moved_join,
                     "moved_on_leave": moved_leave})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = run(args.members, args.topics, args.partitions, args.repeat)
    print(f"{args.members} members, {args.topics} topics x {args.partitions} partitions, "
          f"best of {args.repeat} (CPU ms; goal {GOAL_MS:.0f} ms)\n")
    print("| assignor | scratch ms | steady ms | join ms | leave ms | moved on join | "
          "moved on leave |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['assignor']} | {r['scratch_ms']:.1f} | {r['steady_ms']:.1f} | "
              f"{r['join_ms']:.1f} | {r['leave_ms']:.1f} | {r['moved_on_join']} | "
              f"{r['moved_on_leave']} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
