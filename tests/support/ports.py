"""Ports for listeners a test configures before they bind (Kafka, Burrow, roster's HTTP
console), chosen where nothing else takes them in between.

A port from bind(("127.0.0.1", 0)) comes from the kernel's ephemeral range, the range every
outgoing connection also takes its local port from: between the pick and the listener's own
bind (a JVM's start, seconds under load) any client's connect may take it, and Kafka then
exits with "Address already in use" (CI saw it). Below that range the kernel hands out
nothing by itself, so only another explicit pick could collide; each xdist worker picks from
its own slice, and a process never hands out one port twice.
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

LOWEST = 10000     # above the well-known and registered ports services here commonly use
_handed_out: set[int] = set()


def _ephemeral_start() -> int:
    try:
        low, _high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low)
    except (OSError, ValueError):
        return 32768    # Linux's default


def _worker_slice() -> range:
    top = _ephemeral_start()
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    width = (top - LOWEST) // max(count, 1)
    return range(LOWEST + index * width, LOWEST + (index + 1) * width)


def _binds(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port free now, outside the ephemeral range, not handed out before."""
    ports = _worker_slice()
    if not ports:    # an ephemeral range starting below LOWEST: the kernel's pick, race and all
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return sock.getsockname()[1]
    for _ in range(1000):
        port = random.choice(ports)
        if port not in _handed_out and _binds(port):
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")
