#!/usr/bin/env python3
"""A heartbeat's CPU cost in a real Broker, in this process: --groups static members (each in a
group of its own, subscribed to topic "t" as a consumer would be) are formed through
Connections, then their Heartbeat v3 frames are fed to one Connection as a socket would, in
reads of --read bytes; CPU ns per heartbeat, the best of --repeat passes of --count. The
transport only collects what is written. With --metrics, /metrics' request stats are on (what
`--http-port` turns on); --profile prints cProfile's view instead.

Between bench/dispatch.py (a stand-in broker, no Connection reads) and the socket benchmarks
(bench/hardening.py, bench/coordinator.py: the whole process, swinging by 10-30% on a shared
machine): it moves by 2-3% between runs. PYTHONPATH picks the tree, so trees are compared by
alternating runs:

    for i in 1 2 3 4; do for tree in /tmp/roster-base/src src; do
      PYTHONPATH=$tree taskset -c 1 .venv/bin/python bench/heartbeat_broker.py
    done; done
    PYTHONPATH=src taskset -c 1 .venv/bin/python bench/heartbeat_broker.py --metrics
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import roster  # the tree PYTHONPATH names, before loadgen puts this checkout's src/ first

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heartbeat_floor  # noqa: E402
import loadgen  # noqa: E402
from connection_standin import Transport, connect, feed, started_broker  # noqa: E402

SUBSCRIPTION = loadgen.subscription(0)
SESSION_MS = 600_000  # within Kafka's default group.max.session.timeout.ms (30 min)


async def answer(transport: Transport) -> bytes:
    while len(transport.data) < 4 or len(transport.data) < 4 + int.from_bytes(
            transport.data[:4], "big"):
        await asyncio.sleep(0.001)
    size = int.from_bytes(transport.data[:4], "big")
    frame = bytes(transport.data[4:4 + size])
    del transport.data[:4 + size]
    return frame


async def run(args) -> None:
    broker, config = await started_broker("roster-hb-broker-")
    if args.metrics:
        from roster.observability.metrics import Metrics
        broker.request_stats = Metrics(broker).stats
    frames, members = [], []
    for g in range(args.groups):
        group, instance = f"g{g}", f"i{g}"
        connection, transport = connect(broker, config)
        # sessions outlast the formation (10,000 groups take longer than 30 s to form here)
        feed(connection, bytes(loadgen.join_frame("bench", group, SESSION_MS, 30_000, "",
                                                  instance, SUBSCRIPTION)), args.read)
        joined = loadgen.parse_join(await answer(transport))
        feed(connection, bytes(loadgen.sync_frame("bench", group, joined.generation,
                                                  joined.member_id, instance,
                                                  [(joined.member_id, b"a")])), args.read)
        await answer(transport)
        frames.append(bytes(loadgen.heartbeat_frame("bench", group, joined.generation,
                                                    joined.member_id, instance)))
        members.append((group, joined.generation, joined.member_id))
    connection, transport = connect(broker, config)
    stream = b"".join(frames) * (args.count // len(frames))
    count = args.count // len(frames) * len(frames)
    feed(connection, stream, args.read)   # warm-up, and every answer checked once
    size = len(transport.data) // count
    errors = {loadgen.error_of(transport.data[i + 4:]) for i in range(0, len(transport.data),
                                                                        size)}
    if errors != {0}:
        raise SystemExit(f"heartbeats answered with errors {errors}")
    if args.profile:
        import cProfile
        import pstats
        profile = cProfile.Profile()
        profile.enable()
        feed(connection, stream, args.read)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(40)
    else:
        best = None
        for _ in range(args.repeat):
            transport.data.clear()
            started = time.process_time()
            feed(connection, stream, args.read)
            elapsed = time.process_time() - started
            best = elapsed if best is None else min(best, elapsed)
        print(f"{best / count * 1e9:.0f} ns per heartbeat ({roster.__file__})")
        if args.floor:
            floor_ns, floor_answers = heartbeat_floor.best_ns(stream, count, members,
                                                              args.repeat)
            if floor_answers != bytes(transport.data):
                raise SystemExit("the floor's answers differ from roster's")
            print(f"{floor_ns:.0f} ns per heartbeat: the floor (bench/heartbeat_floor.py); "
                  f"roster costs {best / count * 1e9 / floor_ns:.2f}x it")
    await broker.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--read", type=int, default=64 * 1024, help="bytes per socket read")
    ap.add_argument("--metrics", action="store_true", help="request stats on (/metrics)")
    ap.add_argument("--profile", action="store_true", help="cProfile one pass instead")
    ap.add_argument("--floor", action="store_true",
                    help="also the least CPython can do per heartbeat over the same frames "
                         "(bench/heartbeat_floor.py), and roster's ratio to it")
    args = ap.parse_args()
    import uvloop
    uvloop.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
