#!/usr/bin/env python3
"""Partition assignor benchmark: what one assignment costs the group leader, and how many
partitions change hands when one member joins or leaves.

The group: --members members (default 1,000), all subscribed to --topics topics (default 10)
of --partitions partitions each (default 1,000: 10,000 partitions in all). For every built-in
assignor, four assignments are timed (CPU ms, best of --repeat runs):

  scratch  no member owns anything (a new group)
  steady   every member owns what that assignor gave it in the previous generation (a
           rebalance that changes nothing, e.g. a metadata refresh: the realistic sticky case)
  join     steady plus one new member that owns nothing (its id sorts mid-order)
  leave    steady minus one member (the one in the middle of the member order)

"moved" counts the partitions whose current owner is a different member after the join or the
leave (for cooperative-sticky: the partitions it withholds for the second round, which are
exactly those). "2nd round" times cooperative-sticky's follow-up assignment after the join,
once the owners have revoked. A second table does the same for sticky and cooperative-sticky
with heterogeneous subscriptions (each member subscribes to half the topics, seeded).

    .venv/bin/python bench/assignors.py                  # Markdown tables
    .venv/bin/python bench/assignors.py --repeat 9 --json results.json
    .venv/bin/python bench/assignors.py --members 100 --topics 5 --partitions 100

Pure computation in this process; nothing is started or written except the optional JSON.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from roster.client.assignors import ASSIGNORS, Assignment, Assignor, MemberSubscription  # noqa: E402

GENERATION = 7


def timed(repeat: int, run: Callable[[], Assignment]) -> tuple[float, Assignment]:
    """CPU milliseconds of the fastest of `repeat` runs (CPU time of this process, and the
    best run, so that other load on a shared machine disturbs the figure least), and the
    (deterministic) result."""
    samples = []
    result: Assignment = {}
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        result = run()
        samples.append((time.process_time() - start) * 1000)
    return min(samples), result


def owning(members: Sequence[MemberSubscription], assignment: Assignment,
           generation: int) -> list[MemberSubscription]:
    return [MemberSubscription(m.member_id, m.group_instance_id, m.topics,
                               tuple(assignment.get(m.member_id, ())), generation)
            for m in members]


def changed_hands(before: Assignment, after: Assignment) -> int:
    """Partitions whose owner is still in the group but no longer holds them (another member
    does, or, cooperatively, nobody yet). A departed member's partitions are not counted:
    they have no owner left to take them from."""
    owner = {tp: m for m, tps in before.items() for tp in tps}
    holder = {tp: m for m, tps in after.items() for tp in tps}
    return sum(1 for tp, m in owner.items()
               if m in after and holder.get(tp) != m)


def measure(assignor: Assignor, partitions_per_topic: Mapping[str, int],
            members: list[MemberSubscription], newcomer: MemberSubscription,
            repeat: int) -> dict:
    total = sum(partitions_per_topic.values())
    row: dict = {"assignor": assignor.name}
    row["scratch_ms"], first = timed(repeat, lambda: assignor.assign(partitions_per_topic, members))
    if assignor.rebalance_protocol == "cooperative":
        # a new cooperative group needs no second round: nothing was owned, nothing withheld
        assert sum(map(len, first.values())) == total
    steady = owning(members, first, GENERATION)
    row["steady_ms"], same = timed(repeat, lambda: assignor.assign(partitions_per_topic, steady))
    row["steady_moved"] = changed_hands(first, same)

    joined = steady + [newcomer]
    row["join_ms"], after_join = timed(
        repeat, lambda: assignor.assign(partitions_per_topic, joined))
    row["join_moved"] = changed_hands(first, after_join)
    row["newcomer_gets"] = len(after_join[newcomer.member_id])

    left = steady[:len(steady) // 2] + steady[len(steady) // 2 + 1:]
    row["leave_ms"], after_leave = timed(
        repeat, lambda: assignor.assign(partitions_per_topic, left))
    row["leave_moved"] = changed_hands(first, after_leave)

    if assignor.rebalance_protocol == "cooperative":
        rejoined = owning(joined, after_join, GENERATION + 1)
        row["second_round_ms"], second = timed(
            repeat, lambda: assignor.assign(partitions_per_topic, rejoined))
        assert sum(map(len, second.values())) == total
        assert changed_hands(after_join, second) == 0
        row["newcomer_gets"] = len(second[newcomer.member_id])
    return row


def ms(value: float) -> str:
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def markdown(rows: list[dict]) -> str:
    lines = ["| assignor | scratch ms | steady ms | join ms | leave ms | moved on join "
             "| moved on leave | newcomer gets | coop 2nd round ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        second = ms(r["second_round_ms"]) if "second_round_ms" in r else "–"
        lines.append(f"| {r['assignor']} | {ms(r['scratch_ms'])} | {ms(r['steady_ms'])} "
                     f"| {ms(r['join_ms'])} | {ms(r['leave_ms'])} | {r['join_moved']:,} "
                     f"| {r['leave_moved']:,} | {r['newcomer_gets']} | {second} |")
    return "\n".join(lines)


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{model}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=1000, help="per topic")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1, help="heterogeneous subscriptions")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()

    partitions_per_topic = {f"topic-{t:03d}": args.partitions for t in range(args.topics)}
    topics = tuple(partitions_per_topic)
    members = [MemberSubscription(f"member-{i:05d}", None, topics) for i in range(args.members)]
    # member ids are random in Kafka; these two land mid-order, like a typical one would
    newcomer_id = f"member-{args.members // 2:05d}-new"
    newcomer = MemberSubscription(newcomer_id, None, topics)
    print(f"{args.members:,} members, {args.topics} topics x {args.partitions:,} partitions; "
          f"best of {args.repeat} runs\n{machine()}\n")

    homogeneous = [measure(a, partitions_per_topic, members, newcomer, args.repeat)
                   for a in ASSIGNORS.values()]
    print("Identical subscriptions\n")
    print(markdown(homogeneous))

    rnd = random.Random(args.seed)
    half = max(1, args.topics // 2)
    mixed = [MemberSubscription(m.member_id, None, tuple(sorted(rnd.sample(topics, half))))
             for m in members]
    mixed_newcomer = MemberSubscription(newcomer_id, None, tuple(sorted(rnd.sample(topics, half))))
    heterogeneous = [measure(ASSIGNORS[n], partitions_per_topic, mixed, mixed_newcomer, args.repeat)
                     for n in ("sticky", "cooperative-sticky")]
    print(f"\nEach member subscribed to {half} of the {args.topics} topics (seed {args.seed})\n")
    print(markdown(heterogeneous))

    if args.json:
        report = {"machine": machine(), "args": {**vars(args), "json": str(args.json)},
                  "identical": homogeneous, "heterogeneous": heterogeneous}
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
