#!/usr/bin/env python3
"""A classic eager rebalance's CPU cost in a real Broker, in this process: --members static
members of one group, each on a Connection of its own (a socket's stand-in that keeps what is
written), form the group; then, --rounds times, every member rejoins with new metadata (what
one join causes under the eager protocol), the leader's JoinGroup answer lists them all, every
member sends SyncGroup (the leader's with every assignment) and the group's record is written
to __consumer_offsets before the SyncGroup answers go out. CPU ms per rebalance, from the first
rejoin fed to the last SyncGroup answer: the best of the rounds, and the median.

The broker half of bench/versus_kafka.py's 1,000-member rebalance without the kernel's share
(the sockets' reads and writes) and without the load generator: it moves by a few percent
between runs where the socket benchmark moves by a third. PYTHONPATH picks the tree, so trees
are compared by alternating runs; --profile prints cProfile's view of one more round.

    for i in 1 2 3; do for tree in /tmp/roster-base/src src; do
      PYTHONPATH=$tree taskset -c 1 .venv/bin/python bench/rebalance_broker.py
    done; done
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import roster  # the tree PYTHONPATH names, before loadgen puts this checkout's src/ first

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loadgen  # noqa: E402
from connection_standin import Transport, connect, feed, started_broker  # noqa: E402

GROUP = "rebalance"
SESSION_MS = 600_000


class Members:
    """The members' connections, and an event set once each has had `expected` answers."""

    def __init__(self, broker, config, count: int) -> None:
        self.answered = 0
        self.expected = 0
        self.done = asyncio.Event()
        self.pairs = []
        self.member_ids = [""] * count   # each member's id once it has one (a rejoin names it)
        for _ in range(count):
            connection, transport = connect(broker, config)
            transport.write = self._counting(transport)
            self.pairs.append((connection, transport))

    def _counting(self, transport: Transport):
        write = transport.write

        def counted(data) -> None:
            write(data)
            self.answered += 1
            if self.answered == self.expected:
                self.done.set()
        return counted

    async def send_all(self, frames: list[bytes]) -> tuple[list[bytes], float]:
        """Feed each member its frame and wait for every answer: the answers, in order, and
        the CPU seconds this process spent from the first frame fed to the last answer."""
        for _, transport in self.pairs:
            transport.data.clear()
        self.answered, self.expected = 0, len(frames)
        self.done.clear()
        started = time.process_time()
        for (connection, _), frame in zip(self.pairs, frames):
            feed(connection, frame, 64 * 1024)
        await asyncio.wait_for(self.done.wait(), 60)
        cpu = time.process_time() - started
        return [bytes(transport.data[4:]) for _, transport in self.pairs], cpu


async def rebalance(members: Members, round_no: int) -> float:
    """Every member joins with round_no's metadata, then syncs; raises unless all succeed in
    one new generation. Returns the broker's CPU seconds (the frames are built and the answers
    read outside them)."""
    metadata = loadgen.subscription(round_no)
    joins, join_cpu = await members.send_all([bytes(loadgen.join_frame(
        f"c{i}", GROUP, SESSION_MS, SESSION_MS, member_id, f"i{i}", metadata))
        for i, member_id in enumerate(members.member_ids)])
    answers = [loadgen.parse_join(a) for a in joins]
    members.member_ids = [a.member_id for a in answers]
    if {a.error for a in answers} != {0} or len({a.generation for a in answers}) != 1:
        raise SystemExit(f"joins answered {sorted({(a.error, a.generation) for a in answers})}")
    leader = next(a for a in answers if a.members)
    assignments = [(m, loadgen.ASSIGNMENT) for m in leader.members]
    syncs, sync_cpu = await members.send_all([bytes(loadgen.sync_frame(
        f"c{i}", GROUP, a.generation, a.member_id, f"i{i}",
        assignments if a is leader else [])) for i, a in enumerate(answers)])
    errors = {loadgen.error_of(s) for s in syncs}
    if errors != {0}:
        raise SystemExit(f"syncs answered errors {errors}")
    return join_cpu + sync_cpu


async def run(args) -> None:
    broker, config = await started_broker("roster-rb-broker-")
    members = Members(broker, config, args.members)
    await rebalance(members, 0)   # the group forms
    await rebalance(members, 1)   # warm-up
    if args.profile:
        import cProfile
        import pstats
        profile = cProfile.Profile()
        profile.enable()
        await rebalance(members, 2)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(35)
    else:
        took = [await rebalance(members, 2 + n) * 1000 for n in range(args.rounds)]
        print(f"{min(took):.1f} ms CPU per rebalance of {args.members:,} (best of "
              f"{args.rounds}; median {statistics.median(took):.1f}) ({roster.__file__})")
    await broker.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--profile", action="store_true", help="cProfile one round instead")
    args = ap.parse_args()
    import uvloop
    uvloop.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
