#!/usr/bin/env python3
"""ConsumerGroupHeartbeat (KIP-848) through a real roster broker: how many steady heartbeats
one broker core answers, and what forming the groups costs.

--groups groups (default 100) of --members members (default 100: 10,000 members) subscribe to
one topic of --partitions partitions (default 100). Each member joins (epoch 0, every field),
then heartbeats with the partitions it was given until every group is Stable. Then each
member's steady heartbeat (its epoch and member id, every optional field null: what clients
send between changes) is pre-encoded and sent pipelined over --connections connections
(--window in flight on each) for --seconds: answers/s, and answers per broker-CPU-second
(utime+stime of the broker process). The comparison with the classic Heartbeat in the same
broker and run is bench/coordinator.py's phase `consumer` (which uses form() and Members from
here); results in docs/benchmarks-coordinator.md.

    .venv/bin/python bench/consumer_heartbeat.py
    .venv/bin/python bench/consumer_heartbeat.py --groups 10 --members 100 --seconds 5

Everything stays on 127.0.0.1; the broker runs on a temporary data directory that is removed.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from loadgen import Blaster, Conn, open_conns  # noqa: E402

from roster.protocol.build import element, make  # noqa: E402
from roster.protocol.codec import decode_response, encode_request, request_schema  # noqa: E402

API, VERSION = 68, 1
ERROR_AT = 9   # response: correlation id, header tags, throttle time, then the error code


def heartbeat_frame(group: str, member_id: str, epoch: int, topic: str | None = None,
                    owned=None, full: bool = False) -> bytes:
    schema = request_schema(API, VERSION)
    entry = element(schema, "topic_partitions")
    body = make(schema, group_id=group, member_id=member_id, member_epoch=epoch,
                instance_id=None, rack_id=None,
                rebalance_timeout=datetime.timedelta(milliseconds=300_000 if full else -1),
                subscribed_topic_names=(topic,) if full else None, subscribed_topic_regex=None,
                server_assignor=None,
                topic_partitions=None if owned is None else tuple(
                    make(entry, topic_id=t, partitions=tuple(ps)) for t, ps in owned))
    return encode_request(API, VERSION, 0, "bench", body)


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_broker(data_dir: Path) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "roster", "serve", "--host", "127.0.0.1", "--port", "0",
         "--data-dir", str(data_dir), "--set", "group.consumer.session.timeout.ms=120000",
         "--set", "group.consumer.max.session.timeout.ms=120000"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    for line in proc.stdout:
        if line.startswith("roster listening on "):
            # keep reading its log, or a full pipe would stop the broker
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
            return proc, int(line.rsplit(":", 1)[1])
    raise RuntimeError("the broker did not start")


async def form(conns: list[Conn], groups: int, members: int, topic: str) -> tuple[list, float]:
    """Join every member, then heartbeat until every group is Stable. Returns
    [(conn index, group, member id, epoch)] and the seconds it took."""
    started = time.monotonic()
    state = {}   # (group, member) -> [epoch, owned]
    everyone = [(f"g{g}", str(uuid.uuid4())) for g in range(groups) for _ in range(members)]

    async def beat(i, key, frame):
        answer = await conns[i % len(conns)].request(bytearray(frame))
        _, body = decode_response(API, VERSION, answer)
        if body.error_code.value:
            raise RuntimeError(f"{key}: {body.error_code!r} {body.error_message}")
        entry = state.setdefault(key, [0, ()])
        entry[0] = body.member_epoch
        if body.assignment is not None:
            entry[1] = tuple((tp.topic_id, tuple(tp.partitions))
                             for tp in body.assignment.topic_partitions)

    await asyncio.gather(*(beat(i, key, heartbeat_frame(key[0], key[1], 0, topic, (), True))
                           for i, key in enumerate(everyone)))
    for _ in range(10):
        before = {k: (v[0], v[1]) for k, v in state.items()}
        await asyncio.gather(*(beat(i, key, heartbeat_frame(key[0], key[1], state[key][0],
                                                            owned=state[key][1]))
                               for i, key in enumerate(everyone)))
        if before == {k: (v[0], v[1]) for k, v in state.items()}:
            break
    return ([(i, key[0], key[1], state[key][0]) for i, key in enumerate(everyone)],
            time.monotonic() - started)


class Members:
    """Consumer-protocol members of one group, driven the way the coordinator paces them at
    best: each member sends a heartbeat with its epoch and the partitions it owns, takes its
    answer, and sends the next at once (no heartbeat interval). `owners` counts how many
    members hold each partition, as their answers said; `exactly_once()` is the moment every
    partition of the topic has one owner."""

    def __init__(self, conns: list[Conn], group: str, topic: str, partitions: int) -> None:
        self.conns, self.group, self.topic, self.partitions = conns, group, topic, partitions
        self.state: dict[str, list] = {}        # member id -> [epoch, owned pairs]
        self.holders: dict[tuple, int] = {}     # (topic id, partition) -> members holding it
        self.held = 0                           # sum of holders.values()
        self.sent = 0

    def _hold(self, pairs, delta: int) -> None:
        holders = self.holders
        for topic_id, partitions in pairs:
            for p in partitions:
                key = (topic_id, p)
                count = holders.get(key, 0) + delta
                if count:
                    holders[key] = count
                else:
                    del holders[key]
                self.held += delta

    def exactly_once(self) -> bool:
        return self.held == self.partitions and len(self.holders) == self.partitions

    async def beat(self, member_id: str, join: bool = False) -> None:
        entry = self.state.setdefault(member_id, [0, ()])
        frame = heartbeat_frame(self.group, member_id, 0, self.topic, (), True) if join else \
            heartbeat_frame(self.group, member_id, entry[0], owned=entry[1])
        self.sent += 1
        answer = await self.conns[self.sent % len(self.conns)].request(bytearray(frame))
        _, body = decode_response(API, VERSION, answer)
        if body.error_code.value:
            raise RuntimeError(f"{member_id}: {body.error_code!r} {body.error_message}")
        entry[0] = body.member_epoch
        if body.assignment is not None:
            owned = tuple((tp.topic_id, tuple(tp.partitions))
                          for tp in body.assignment.topic_partitions)
            self._hold(entry[1], -1)
            self._hold(owned, +1)
            entry[1] = owned

    async def join(self, member_ids) -> None:
        await asyncio.gather(*(self.beat(m, join=True) for m in member_ids))

    async def round(self) -> None:
        """Every member heartbeats once, all at the same time."""
        await asyncio.gather(*(self.beat(m) for m in list(self.state)))

    async def settle(self, max_rounds: int = 20) -> int:
        """Rounds until a round changes nothing; returns how many there were."""
        for rounds in range(1, max_rounds + 1):
            before = {m: tuple(e) for m, e in self.state.items()}
            await self.round()
            if before == {m: tuple(e) for m, e in self.state.items()}:
                return rounds
        raise RuntimeError(f"group {self.group} did not settle in {max_rounds} rounds")


async def run(args) -> None:
    data = Path(tempfile.mkdtemp(prefix="roster-cg-bench-"))
    proc, port = start_broker(data)
    try:
        from roster.admin.client import AdminClient
        from roster.admin.topics import create
        with AdminClient(f"127.0.0.1:{port}") as admin:
            create(admin, "bench", args.partitions, {})
        conns = await open_conns("127.0.0.1", port, args.connections)
        members, formed_s = await form(conns, args.groups, args.members, "bench")
        for c in conns:
            c.close()
        frames: list[list[bytes]] = [[] for _ in range(args.connections)]
        for i, group, member_id, epoch in members:
            frames[i % args.connections].append(heartbeat_frame(group, member_id, epoch))
        blasters = await open_conns("127.0.0.1", port, args.connections,
                                    factory=lambda: Blaster(ERROR_AT))
        for b, fs in zip(blasters, frames):
            b.start(fs, args.window)
        await asyncio.sleep(1.0)   # warm-up
        answered0 = sum(b.answered for b in blasters)
        cpu0, t0 = cpu_s(proc.pid), time.monotonic()
        await asyncio.sleep(args.seconds)
        answered = sum(b.answered for b in blasters) - answered0
        cpu, elapsed = cpu_s(proc.pid) - cpu0, time.monotonic() - t0
        await asyncio.gather(*(b.stop() for b in blasters))
        errors = sum(sum(b.errors.values()) for b in blasters)
        for b in blasters:
            b.close()
        n = args.groups * args.members
        print(f"{n:,} members in {args.groups} groups, {args.partitions} partitions each group's "
              f"topic; {args.connections} connections x {args.window} in flight\n")
        print("| step | result |")
        print("|---|---|")
        print(f"| form (join + heartbeats to Stable) | {formed_s:.1f} s |")
        print(f"| steady heartbeats | {answered / elapsed:,.0f}/s, broker CPU "
              f"{cpu / elapsed:.0%}; {answered / cpu if cpu else 0:,.0f} per broker-CPU-second;"
              f" {errors} errors |")
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(data, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--window", type=int, default=128)
    ap.add_argument("--seconds", type=float, default=10.0)
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
