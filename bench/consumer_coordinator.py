#!/usr/bin/env python3
"""Consumer group (KIP-848) coordinator benchmark: what ConsumerGroupHeartbeat costs the pure
core (roster.coordinator.consumer), driven in this process with a manual clock (no sockets,
no log: records are counted, not written).

The group: --members members (default 1,000) subscribed to --topics topics of --partitions
partitions each (default 10 x 1,000). Measured, in CPU time of this process:

  form       every member joins, one after the other (each join bumps the group epoch and
             computes a new target assignment), then all heartbeat until the group is Stable
  steady     heartbeats of reconciled members through the whole operation (heartbeat()):
             "light" (owned partitions not sent, what clients send between changes) and
             "full" (owned partitions listed); and "light" as the broker answers it,
             through steady_heartbeat() (no operation, no Result): us each
  join       one more member joins a Stable group: its heartbeat (a new target for everyone),
             then rounds of heartbeats until Stable again; partitions that changed owner
  leave      a member leaves (-1) and the rest reconcile; partitions that changed owner

    .venv/bin/python bench/consumer_coordinator.py
    .venv/bin/python bench/consumer_coordinator.py --members 100 --partitions 100
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from roster.coordinator.consumer.coordinator import ConsumerCoordinator  # noqa: E402
from roster.coordinator.consumer.messages import HeartbeatRequest  # noqa: E402
from roster.coordinator.consumer.model import DictTopicImage  # noqa: E402

GROUP = "bench"


class FixedCatalog(DictTopicImage):
    """A catalog that never changes, and says so (TopicImage.version), as the broker's does."""

    def version(self) -> int:
        return 0


class Driver:
    def __init__(self, topics: int, partitions: int) -> None:
        self.image = FixedCatalog({f"t{i}": (i.to_bytes(16, "big"), partitions)
                                     for i in range(topics)})
        self.names = tuple(self.image.topics)
        self.core = ConsumerCoordinator()
        self.now = 0
        self.records = 0
        self.owned: dict[str, tuple] = {}
        self.epoch: dict[str, int] = {}

    def beat(self, member: str, full: bool = True, epoch: int | None = None):
        joining = member not in self.epoch
        request = HeartbeatRequest(
            GROUP, member, 0 if joining else (self.epoch[member] if epoch is None else epoch),
            rebalance_timeout_ms=300_000 if joining else -1,
            subscribed_topic_names=self.names if joining else None,
            owned=() if joining else (self.owned[member] if full else None),
            token=member)
        result = self.core.heartbeat(request, self.image, self.now)
        self.records += len(result.records)
        for step in result.after_write:
            result.replies.extend(self.core.write_completed(step, None, self.now).replies)
        reply = result.replies[0].body
        if reply.error.value:
            raise RuntimeError(f"{member}: {reply.error!r} {reply.error_message}")
        self.epoch[member] = reply.member_epoch
        if reply.assignment is not None:
            self.owned[member] = reply.assignment
        elif joining:
            self.owned[member] = ()
        return reply

    def leave(self, member: str) -> None:
        self.core.heartbeat(HeartbeatRequest(GROUP, member, -1, token=member), self.image,
                            self.now)
        del self.epoch[member], self.owned[member]

    def converge(self) -> int:
        rounds = 0
        while self.core.groups[GROUP].state() != "Stable":
            rounds += 1
            for member in list(self.epoch):
                self.beat(member)
            if rounds > 20:
                raise RuntimeError("no convergence")
        return rounds

    def owners(self) -> dict:
        return {(t, p): m for m, pairs in self.owned.items() for t, ps in pairs for p in ps}


def cpu_ms(fn):
    gc.collect()
    start = time.process_time()
    out = fn()
    return (time.process_time() - start) * 1000, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--beats", type=int, default=20_000)
    args = ap.parse_args()
    d = Driver(args.topics, args.partitions)
    ids = [f"member-{i:05}" for i in range(args.members)]

    def form():
        for m in ids:
            d.beat(m)
        return d.converge()
    form_ms, rounds = cpu_ms(form)
    print(f"{args.members} members, {args.topics} x {args.partitions} partitions\n")
    print("| step | CPU | notes |")
    print("|---|---|---|")
    print(f"| form | {form_ms:.0f} ms | {args.members} joins, then {rounds} heartbeat rounds to "
          f"Stable; {d.records} records |")
    for full in (False, True):
        n = args.beats

        def steady():
            for i in range(n):
                d.beat(ids[i % len(ids)], full=full)
        ms, _ = cpu_ms(steady)
        print(f"| steady ({'full' if full else 'light'}) | {ms * 1000 / n:.1f} us/heartbeat | "
              f"{n / ms * 1000:,.0f} heartbeats per CPU-second |")

    def answered_steadily():
        core, n = d.core, args.beats
        for i in range(n):
            m = ids[i % len(ids)]
            if core.steady_heartbeat(GROUP, m, d.epoch[m], "", "", 0, d.now) is None:
                raise RuntimeError(f"{m}: not a steady heartbeat")
    ms, _ = cpu_ms(answered_steadily)
    print(f"| steady (light, steady_heartbeat) | {ms * 1000 / args.beats:.2f} us/heartbeat | "
          f"{args.beats / ms * 1000:,.0f} heartbeats per CPU-second |")
    before = d.owners()
    records = d.records
    join_ms, _ = cpu_ms(lambda: d.beat("member-new"))
    conv_ms, rounds = cpu_ms(d.converge)
    after = d.owners()
    moved = sum(1 for tp, m in before.items() if after.get(tp) != m)
    print(f"| join: the joiner's heartbeat | {join_ms:.1f} ms | new target for "
          f"{len(d.epoch)} members |")
    print(f"| join: to Stable | {conv_ms:.0f} ms | {rounds} rounds; {moved} partitions moved; "
          f"{d.records - records} records |")
    before = after
    leaver = ids[len(ids) // 2]
    held = sum(len(ps) for _, ps in d.owned[leaver])
    d.leave(leaver)
    conv_ms, rounds = cpu_ms(d.converge)
    after = d.owners()
    moved = sum(1 for tp, m in before.items() if m != leaver and after.get(tp) != m)
    print(f"| leave: to Stable | {conv_ms:.0f} ms | {rounds} rounds; {held} partitions of the "
          f"leaver placed; {moved} others moved |")


if __name__ == "__main__":
    main()
