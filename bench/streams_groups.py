#!/usr/bin/env python3
"""Streams groups (KIP-1071): roster against Apache Kafka 4.4 on the same machine, in one run,
with ratios. The brokers are bench/versus_kafka.py's (`roster`, and `kafka`: KRaft, one node,
-Xmx1g -XX:+UseSerialGC, tests/support/kafka_peer's settings, so no initial rebalance delay and
no assignment interval on either), each pinned to the same core, this load generator on the
other; rounds interleave the brokers (the order reversed each round) and the tables give
medians.

  heartbeats  --members stream threads in groups of 100, each group reading its own topic of
              100 partitions through one stateless subtopology, formed and settled (every
              member runs its tasks); then, for --seconds after --warmup s (the JIT's), their
              steady StreamsGroupHeartbeat v0 frames (group, member id and epoch; every other
              field null: what a Streams member sends between changes) pipelined over
              --connections connections, --window in flight each: answers/s and answers per
              broker CPU-second.
  join        a fresh group of --join-members members on a topic of --join-members + 1
              partitions, settled; one more member joins and every member heartbeats back to
              back with the tasks it runs (it gives up a revoked task at once, as a stateless
              task can): the time from the joiner's first heartbeat until it runs its task and
              every task has one owner again (a task moves only once its old owner said it
              let go of it), and the broker's CPU over it; --join-rounds rounds. With real
              clients the heartbeat interval (5 s) paces this, not the coordinator.

    .venv/bin/python bench/streams_groups.py
    .venv/bin/python bench/streams_groups.py --members 1000 --rounds 3

Prints a Markdown table; progress on stderr. Results and the command: docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import datetime
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import coordinator as kit  # noqa: E402  (Snapshot, cpu_between, wait_quiet, settle_close)
import coordinator_consumer  # noqa: E402  (blast)
import versus_kafka  # noqa: E402  (the brokers)
from loadgen import open_conns  # noqa: E402

from roster.protocol.api_keys import ApiKey  # noqa: E402
from roster.protocol.build import element, make  # noqa: E402
from roster.protocol.codec import decode_response, encode_request, request_schema  # noqa: E402

API, VERSION = ApiKey.STREAMS_GROUP_HEARTBEAT, 0
ERROR_AT = 9   # response: correlation id, header tags, throttle time, then the error code
GROUP_SIZE = 100
SCHEMA = request_schema(API, VERSION)
TASKS = element(SCHEMA, "active_tasks")


def topology(topic: str):
    entry = element(SCHEMA, "topology")
    return make(entry, epoch=0, subtopologies=(make(
        element(entry, "subtopologies"), subtopology_id="0", source_topics=(topic,),
        source_topic_regex=(), state_changelog_topics=(), repartition_sink_topics=(),
        repartition_source_topics=(), copartition_groups=()),))


def heartbeat_frame(group: str, member_id: str, epoch: int, topic: str | None = None,
                    owned: tuple | None = None, endpoints_epoch: int = 0) -> bytes:
    """A join (epoch 0, with `topic`'s topology), a heartbeat reporting `owned` partitions of
    subtopology "0", or (owned None) a steady heartbeat. `endpoints_epoch`: the endpoint
    information epoch the member last heard, as a Streams member sends it back."""
    joining = epoch == 0
    tasks = None if owned is None else (make(TASKS, subtopology_id="0", partitions=owned),)
    body = make(SCHEMA, group_id=group, member_id=member_id, member_epoch=epoch,
                endpoint_information_epoch=endpoints_epoch, instance_id=None, rack_id=None,
                rebalance_timeout=datetime.timedelta(milliseconds=60_000 if joining else -1),
                topology=topology(topic) if joining else None,
                active_tasks=() if joining else tasks,
                standby_tasks=() if joining or tasks else None,
                warmup_tasks=() if joining or tasks else None,
                process_id=f"process-{member_id}" if joining else None, user_endpoint=None,
                client_tags=() if joining else None, task_offsets=None, task_end_offsets=None,
                shutdown_application=False)
    return encode_request(API, VERSION, 0, "bench", body)


class Threads:
    """Stream threads of one group, each heartbeating with the tasks it runs."""

    def __init__(self, conns, group: str, topic: str) -> None:
        self.conns, self.group, self.topic = conns, group, topic
        # member id -> [epoch, partitions it runs, endpoint information epoch it heard]
        self.state: dict[str, list] = {}

    def add(self) -> str:
        member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        self.state[member_id] = [0, (), 0]
        return member_id

    def steady_frames(self) -> list[bytes]:
        return [heartbeat_frame(self.group, m, epoch, endpoints_epoch=endpoints)
                for m, (epoch, _, endpoints) in self.state.items()]

    async def beat(self, member_id: str) -> None:
        epoch, owned, endpoints = self.state[member_id]
        frame = heartbeat_frame(self.group, member_id, epoch, self.topic,
                                None if epoch == 0 else owned, endpoints)
        conn = self.conns[hash(member_id) % len(self.conns)]
        _, body = decode_response(API, VERSION, await conn.request(bytearray(frame)))
        if int(body.error_code):
            raise RuntimeError(f"{self.group}/{member_id}: {body.error_code!r} "
                               f"{body.error_message}")
        self.state[member_id][0] = body.member_epoch
        self.state[member_id][2] = body.endpoint_information_epoch
        if body.active_tasks is not None:   # answered when they changed; it lets go at once
            self.state[member_id][1] = tuple(sorted(
                p for t in body.active_tasks for p in t.partitions))

    def owners(self) -> dict[int, int]:
        counted: dict[int, int] = {}
        for _, owned, _ in self.state.values():
            for p in owned:
                counted[p] = counted.get(p, 0) + 1
        return counted

    async def settle(self, partitions: int, deadline_s: float = 120.0) -> None:
        """Heartbeat every member back to back until each partition has one owner and nothing
        changes in a round."""
        give_up = time.monotonic() + deadline_s
        while True:
            before = {m: tuple(v) for m, v in self.state.items()}
            await asyncio.gather(*(self.beat(m) for m in list(self.state)))
            owners = self.owners()
            if len(owners) == partitions and set(owners.values()) == {1} and \
                    before == {m: tuple(v) for m, v in self.state.items()}:
                return
            if time.monotonic() > give_up:
                raise RuntimeError(f"{self.group} did not settle: {len(owners)} of "
                                   f"{partitions} partitions owned")


async def phase_heartbeats(brokers, kind: str, args) -> dict:
    broker = brokers.start(kind, "streams-heartbeats")
    conns: list = []
    try:
        groups = max(1, args.members // GROUP_SIZE)
        topics = {f"sg-{g:03d}": GROUP_SIZE for g in range(groups)}
        versus_kafka.make_topics(broker, topics)
        conns = await open_conns(broker.host, broker.port, min(64, args.members))
        started = time.perf_counter()
        threads = [Threads(conns, f"sg-{g:03d}", f"sg-{g:03d}") for g in range(groups)]
        for t in threads:
            for _ in range(GROUP_SIZE):
                t.add()
        await asyncio.gather(*(t.settle(GROUP_SIZE) for t in threads))
        formed_s = time.perf_counter() - started
        kit.close_all(conns)
        conns = []
        frames = [frame for t in threads for frame in t.steady_frames()]
        await kit.wait_quiet(args, [broker], f"{kind} streams heartbeats")
        result = await coordinator_consumer.blast(kit, broker, frames, ERROR_AT, args,
                                                  f"{kind} streams heartbeats")
        result["formed_s"] = formed_s
        result["members"] = len(frames)
        kit.progress(f"{kind}: {result['per_s']:,.0f} StreamsGroupHeartbeats/s "
                     f"({result['per_broker_cpu_s'] or 0:,.0f} per broker CPU-s), "
                     f"{len(frames):,} members formed in {formed_s:.1f} s, errors "
                     f"{result['errors']}, rest of the machine {result['other_cpus']:.2f} CPUs")
        return result
    finally:
        await kit.settle_close(conns)
        brokers.stop(broker)


async def phase_join(brokers, kind: str, args) -> dict:
    broker = brokers.start(kind, "streams-join")
    conns: list = []
    try:
        size, rounds = args.join_members, args.join_rounds
        partitions = size + rounds
        versus_kafka.make_topics(broker, {"sg-join": partitions})
        conns = await open_conns(broker.host, broker.port, min(32, size))
        threads = Threads(conns, "sg-join", "sg-join")
        for _ in range(size):
            threads.add()
        await threads.settle(partitions)
        runs = []
        for _ in range(rounds):
            await kit.wait_quiet(args, [broker], f"{kind} streams join")
            before = kit.Snapshot.take(broker)
            joiner = threads.add()
            await threads.settle(partitions)
            after = kit.Snapshot.take(broker)
            assert threads.state[joiner][1], "the joiner runs no task"
            usage = kit.cpu_between(before, after)
            runs.append(usage)
            kit.progress(f"{kind}: member {len(threads.state)} joins: its task runs after "
                         f"{usage['wall_s'] * 1000:.1f} ms (broker CPU "
                         f"{usage['broker_cpu_s'] * 1000:.0f} ms)")
        return {"runs": runs, "median_s": statistics.median(r["wall_s"] for r in runs),
                "broker_cpu_s": statistics.median(r["broker_cpu_s"] for r in runs)}
    finally:
        await kit.settle_close(conns)
        brokers.stop(broker)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", default="roster,kafka")
    p.add_argument("--members", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=10.0)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--window", type=int, default=128)
    p.add_argument("--join-members", type=int, default=100)
    p.add_argument("--join-rounds", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quiet-cpus", type=float, default=0.3)
    p.add_argument("--quiet-wait", type=float, default=20.0)
    args = p.parse_args(argv)
    args.brokers = args.brokers.split(",")
    # the names coordinator_consumer.blast reads
    args.hb_connections, args.hb_window = args.connections, args.window
    args.hb_warmup, args.cg_seconds = args.warmup, args.seconds
    return args


async def run(args) -> int:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        versus_kafka.BROKER_CPUS = {cpus[0]}
        os.sched_setaffinity(0, {cpus[1]})
    per_s: dict = {k: [] for k in args.brokers}
    per_cpu: dict = {k: [] for k in args.brokers}
    join_s: dict = {k: [] for k in args.brokers}
    join_cpu: dict = {k: [] for k in args.brokers}
    loads = [versus_kafka.loadavg()]
    with tempfile.TemporaryDirectory(prefix="streams-bench-") as work:
        brokers = versus_kafka.Brokers(Path(work))
        try:
            for n in range(args.rounds):
                for kind in versus_kafka.order(args.brokers, n):
                    hb = await phase_heartbeats(brokers, kind, args)
                    per_s[kind].append(hb["per_s"])
                    per_cpu[kind].append(hb["per_broker_cpu_s"] or 0.0)
                for kind in versus_kafka.order(args.brokers, n):
                    joined = await phase_join(brokers, kind, args)
                    join_s[kind].append(joined["median_s"])
                    join_cpu[kind].append(joined["broker_cpu_s"])
        finally:
            brokers.stop_all()
    loads.append(versus_kafka.loadavg())
    header = "| measure | " + " | ".join(args.brokers) + " | roster / kafka |"
    print(header)
    print("|---|" + "---:|" * (len(args.brokers) + 1))
    rows = (
        (f"StreamsGroupHeartbeat per broker CPU-s, {args.members:,} members", per_cpu,
         "{:,.0f}"),
        (f"StreamsGroupHeartbeat/s (wall), {args.members:,} members", per_s, "{:,.0f}"),
        (f"a member joins a {args.join_members}-member group → its task runs (ms, lower is "
         "better)", {k: [v * 1000 for v in vs] for k, vs in join_s.items()}, "{:.1f}"),
        ("…its broker CPU (ms, lower is better)",
         {k: [v * 1000 for v in vs] for k, vs in join_cpu.items()}, "{:.0f}"),
    )
    for label, values, form in rows:
        cells = [form.format(statistics.median(values[k])) if values[k] else "-"
                 for k in args.brokers]
        ratio = ""
        if values.get("roster") and values.get("kafka"):
            ratio = statistics.median(values['roster']) / statistics.median(values['kafka'])
            ratio = f"**{ratio:.2f}**"
        print(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
    print(f"\nmedians of {args.rounds} rounds ({args.join_rounds} joins each); load average "
          f"{loads[0]:.1f} before, {loads[1]:.1f} after (2 CPUs); broker CPU "
          f"{sorted(versus_kafka.BROKER_CPUS or [])}, load generator on the other")
    return 0


def main(argv=None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
