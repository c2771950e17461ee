#!/usr/bin/env python3
"""The pure coordinator alone, in this process (no sockets, no log): how many heartbeats it
checks in per CPU-second with 10,000 static members in 100 groups, and how much CPU a
1,000-member rebalance costs (every member rejoins with new metadata, the followers sync, the
leader's assignment is written and handed out). It drives `Coordinator` as broker/groups/runtime.py
does and uses only the API that has not changed since issue 13, so it can time older trees:

    PYTHONPATH=/tmp/roster-old/src .venv/bin/python bench/coordinator_core.py
    .venv/bin/python bench/coordinator_core.py --repeats 15

Both figures are the best of `--repeats` (CPU time of this process), which is what survives a
busy machine; compare trees by alternating runs.
"""
from __future__ import annotations

import argparse
import gc
import itertools
import time

from roster.coordinator.classic.coordinator import Coordinator
from roster.coordinator.config import GroupConfig
from roster.coordinator.messages import JoinRequest, SyncRequest
from roster.coordinator.results import Result, Schedule


class Edge:
    """What broker/groups/runtime.py does for the coordinator, minus I/O: writes succeed at once,
    timers fire only when asked."""

    def __init__(self) -> None:
        ids = itertools.count()
        self.coordinator = Coordinator(GroupConfig(initial_rebalance_delay_ms=0),
                                       lambda prefix: f"{prefix}-{next(ids)}")
        self.replies: dict[int, object] = {}
        self.timers: dict[str, Schedule] = {}
        self.now = 0
        self.tokens = itertools.count(1)

    def apply(self, result: Result) -> None:
        for op in result.timers:
            if isinstance(op, Schedule):
                self.timers[op.key] = op
            else:
                self.timers.pop(op.key, None)
        for reply in result.replies:
            self.replies[reply.token] = reply.body
        for step in result.after_write:
            self.apply(self.coordinator.write_completed(step, None, self.now))

    def complete_join_phase(self) -> None:
        while joins := [key for key in self.timers if key.startswith("join:")]:
            for key in joins:
                self.apply(self.coordinator.expire(self.timers.pop(key).event, self.now))

    def join(self, group: str, member_id: str, instance: str, metadata: bytes) -> int:
        token = next(self.tokens)
        self.apply(self.coordinator.join(JoinRequest(
            group, member_id, instance, "consumer", (("range", metadata),), 30_000, 60_000,
            "bench", "/127.0.0.1", None, 9, token), self.now))
        return token

    def sync(self, group: str, generation: int, member_id: str, assignments=()) -> int:
        token = next(self.tokens)
        self.apply(self.coordinator.sync(SyncRequest(
            group, generation, member_id, None, "consumer", "range", assignments, 5, token),
            self.now))
        return token


def form(edge: Edge, group: str, size: int) -> tuple[list[str], int]:
    tokens = [edge.join(group, "", f"{group}-i{i}", b"m") for i in range(size)]
    edge.complete_join_phase()
    return rebalance_to_stable(edge, group, tokens, b"a")


def rebalance_to_stable(edge: Edge, group: str, join_tokens: list[int],
                        assignment: bytes) -> tuple[list[str], int]:
    replies = [edge.replies[t] for t in join_tokens]
    generation, leader = replies[0].generation, replies[0].leader
    ids = [r.member_id for r in replies]
    for member_id in ids:
        if member_id != leader:
            edge.sync(group, generation, member_id)
    edge.sync(group, generation, leader, tuple((m, assignment) for m in ids))
    assert edge.coordinator.groups[group].state.value == "Stable"
    return ids, generation


def heartbeats_per_cpu_s(repeats: int) -> float:
    edge = Edge()
    members = []
    for g in range(100):
        group = f"g{g}"
        ids, generation = form(edge, group, 100)
        members += [(group, generation, m, f"{group}-i{i}") for i, m in enumerate(ids)]
    check_in = edge.coordinator.check_in
    best = 0.0
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(3):
            edge.now += 100
            for group, generation, member_id, instance in members:
                check_in(group, generation, member_id, instance, edge.now, Result())
        best = max(best, 3 * len(members) / (time.process_time() - start))
    return best


def rebalance_cpu_ms(size: int) -> float:
    edge = Edge()
    ids, _ = form(edge, "big", size)
    start = time.process_time()
    tokens = [edge.join("big", m, f"big-i{i}", b"new") for i, m in enumerate(ids)]
    rebalance_to_stable(edge, "big", tokens, b"a2")
    return (time.process_time() - start) * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--size", type=int, default=1000, help="members in the timed rebalance")
    args = p.parse_args()
    gc.freeze()
    print(f"heartbeats per CPU-second: {heartbeats_per_cpu_s(args.repeats):,.0f}")
    best = min(rebalance_cpu_ms(args.size) for _ in range(max(args.repeats // 2, 1)))
    print(f"{args.size}-member rebalance: {best:.2f} ms CPU")


if __name__ == "__main__":
    main()
