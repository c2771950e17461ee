#!/usr/bin/env python3
"""Work per request in roster's connection layer and handler, counted rather than timed: the
Python and C function calls made while a Connection serves pipelined Produce requests (one
~64 KiB batch of 1 KiB records, acks=1) or Heartbeats, fed as a socket would in reads of up to
256 KiB (produce) or 64 KiB (heartbeat), and the writes it makes. A count does not move with
the machine's load, so it shows what a change adds on a machine too busy to time it
(bench/hardening.py times it).

Each source tree runs in its own process (PYTHONPATH-like: the tree's src/ first on sys.path);
the socket is replaced by bench/connection_standin.py's transport stand-in.

    .venv/bin/python bench/connection_calls.py /tmp/roster-base/src src
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from connection_standin import connect, feed

BENCH = Path(__file__).resolve().parent


async def count(kind: str, requests: int) -> tuple[float, float]:
    from roster.broker.broker import Broker
    from roster.config import BrokerConfig
    config = BrokerConfig.from_overrides({"offsets.topic.num.partitions": "1"})
    broker = Broker(config, Path(tempfile.mkdtemp(prefix="roster-calls-")))
    broker.start()
    connection, transport = connect(broker, config)
    if kind == "produce":
        from pipelined_producer import build_batch, produce_frame
        batch, _ = build_batch(b"v" * 1024, 64 * 1024, int(time.time() * 1000))
        frame, read_size = produce_frame(9, "bench", 0, 1, batch), 256 * 1024
    else:
        import loadgen
        frame = bytes(loadgen.heartbeat_frame("bench", "g", 1, "m", None))
        read_size = 64 * 1024
    stream = frame * requests

    feed(connection, stream, read_size)  # warm-up: topic created, first segment, caches
    calls = 0

    def profile(frame, event, arg):
        nonlocal calls
        if event == "call" or event == "c_call":
            calls += 1

    writes_before = transport.writes
    sys.setprofile(profile)
    try:
        feed(connection, stream, read_size)
    finally:
        sys.setprofile(None)
    await broker.stop()
    return calls / requests, (transport.writes - writes_before) / requests


def child(src: str, kind: str, requests: int) -> None:
    sys.path[:0] = [src, str(BENCH)]
    import roster
    assert roster.__file__.startswith(str(Path(src).resolve())), roster.__file__
    import uvloop
    calls, writes = uvloop.run(count(kind, requests))
    print(f"{calls:.2f} {writes:.4f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", nargs="*", type=Path, help="src/ directories; the first is the base")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--child", nargs=2, metavar=("SRC", "KIND"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.requests)
        return 0
    print("| tree | produce: calls per request | writes per request | heartbeat: calls per "
          "request | writes per request |")
    print("|---|---:|---:|---:|---:|")
    for tree in args.trees:
        cells = []
        for kind in ("produce", "heartbeat"):
            out = subprocess.run([sys.executable, __file__, "--requests", str(args.requests),
                                  "--child", str(tree.resolve()), kind],
                                 capture_output=True, text=True, check=True).stdout.split()
            cells += [out[0], out[1]]
        print(f"| {tree} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
