"""`roster serve`'s start, one source tree against another, on an empty data dir: spawn (pinned to
CPU 0, as versus_kafka.py pins its brokers) -> the first answered Metadata (v1, probed every
5 ms from this process), the broker's CPU then (/proc stat) and its RSS 3 s later (/proc statm).
The trees alternate round by round (A B, B A, ...) and the medians are printed.

    git archive HEAD~3 src | tar -x -C /tmp/before; git archive HEAD src | tar -x -C /tmp/after
    .venv/bin/python -m compileall -q /tmp/before/src /tmp/after/src   # as an install has them
    .venv/bin/python bench/start_trees.py --rounds 12 /tmp/before/src /tmp/after/src
    .venv/bin/python bench/start_trees.py --floor /tmp/after/src

Compile the trees first: with PYTHONDONTWRITEBYTECODE set (or a read-only tree) every start
compiles every module again, which is no broker's start. `--floor` prints what CPython costs
here instead, for the same tree: `python -c pass`, an asyncio socket server answering one
request, and such a server in a process that first imported what `roster serve` imports (as
`python -m roster` does: the collector off, then frozen).
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")
_BODY = struct.pack(">hhih", 3, 1, 7, 5) + b"probe" + struct.pack(">i", -1)  # Metadata v1, all
METADATA_V1 = struct.pack(">i", len(_BODY)) + _BODY


def _pinned() -> None:
    os.sched_setaffinity(0, {0})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answered(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            s.sendall(METADATA_V1)
            return len(s.recv(4, socket.MSG_WAITALL)) == 4
    except OSError:
        return False


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def start(src: str, idle_s: float = 3.0) -> tuple[float, float, float]:
    """(seconds to the first answer, broker CPU seconds then, RSS MiB idle_s later)."""
    work = tempfile.mkdtemp(prefix="start-trees-")
    port = _free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "roster", "serve", "--host", "127.0.0.1",
                             "--port", str(port), "--data-dir", f"{work}/data"],
                            env=dict(os.environ, PYTHONPATH=src), cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=_pinned)
    try:
        while not _answered(port):
            if proc.poll() is not None:
                raise RuntimeError(f"roster serve of {src} exited with {proc.returncode}")
            time.sleep(0.005)
        wall = time.perf_counter() - t0
        with open(f"/proc/{proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICKS
        time.sleep(idle_s)
        return wall, cpu, _rss_mib(proc.pid)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


SERVER = ("import asyncio, os\n"
          "async def main():\n"
          "    done = asyncio.Event()\n"
          "    async def serve(r, w):\n"
          "        await r.readexactly(4); w.write(b'\\0\\0\\0\\0'); await w.drain(); w.close()\n"
          "        done.set()\n"
          "    s = await asyncio.start_server(serve, '127.0.0.1', 0)\n"
          "    print(s.sockets[0].getsockname()[1], flush=True)\n"
          "    await done.wait()\n"
          "    await asyncio.sleep(3)\n"
          "    print(open('/proc/self/statm').read().split()[1], flush=True)\n"
          "asyncio.run(main())\n")
IMPORTS = ("import gc, sys\n"
           "sys.modules.setdefault('hypothesis', None)\n"
           "gc.disable()\n"
           "import roster.cli, roster.broker.network.server\n"
           "gc.freeze(); gc.enable()\n")


def _server(code: str, src: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=src), preexec_fn=_pinned)
    port = int(proc.stdout.readline())
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"ping")
        s.recv(4, socket.MSG_WAITALL)
    wall = time.perf_counter() - t0
    rss = int(proc.stdout.readline()) * PAGE / 2**20
    proc.wait(10)
    return wall, rss


def floor(src: str, rounds: int) -> None:
    runs: dict[str, list[tuple[float, float]]] = {
        "python -c pass": [], "an asyncio socket server answering one request": [],
        "the same after roster serve's imports": []}
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, preexec_fn=_pinned)
        runs["python -c pass"].append((time.perf_counter() - t0, 0.0))
        runs["an asyncio socket server answering one request"].append(_server(SERVER, src))
        runs["the same after roster serve's imports"].append(_server(IMPORTS + SERVER, src))
    for label, values in runs.items():
        wall, rss = zip(*values)
        memory = "" if label == "python -c pass" else \
            f", RSS 3 s after {statistics.median(rss):.1f} MiB"
        print(f"{label}: {statistics.median(wall):.3f} s{memory} (median of {len(values)})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trees", nargs="+", help="src directories (PYTHONPATH) to start roster from")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--floor", action="store_true", help="CPython's floors for the first tree")
    args = p.parse_args()
    if args.floor:
        floor(args.trees[0], args.rounds)
        return
    results: dict[str, list[tuple[float, float, float]]] = {t: [] for t in args.trees}
    for n in range(args.rounds):
        for tree in args.trees if n % 2 == 0 else args.trees[::-1]:
            results[tree].append(start(tree))
            wall, cpu, rss = results[tree][-1]
            print(f"{tree}: {wall:.3f} s, CPU {cpu:.2f} s, RSS {rss:.1f} MiB "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    for tree, values in results.items():
        wall, cpu, rss = (statistics.median(v) for v in zip(*values))
        print(f"{tree}: spawn -> first answered Metadata {wall:.3f} s, broker CPU {cpu:.3f} s, "
              f"RSS 3 s after {rss:.1f} MiB (median of {len(values)})")


if __name__ == "__main__":
    main()
