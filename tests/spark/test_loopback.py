"""Spark stays on loopback: the test session and `make run`'s session (roster.pipeline) use
127.0.0.1 as Spark's local host, and every socket their JVM listens on is a loopback one."""
from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        found.add(current)
        todo.extend(children.get(current, []))
    return found


def _address(hex_address: str) -> ipaddress._BaseAddress:
    raw = bytes.fromhex(hex_address)
    # /proc/net/tcp{,6} print addresses as 32-bit words in host (little-endian) order
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(words)


def listening_addresses(pid: int) -> list[str]:
    """Local addresses of the TCP sockets in LISTEN state held by `pid` and its children."""
    inodes = set()
    for p in _descendants(pid):
        try:
            for fd in Path(f"/proc/{p}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:          # 0A: LISTEN
                found.append(str(_address(fields[1].split(":")[0])))
    return found


def loopback_only(addresses: list[str]) -> bool:
    def ok(a):
        address = ipaddress.ip_address(a)
        mapped = getattr(address, "ipv4_mapped", None)
        return (mapped or address).is_loopback
    return bool(addresses) and all(ok(a) for a in addresses)


def test_the_test_session_uses_loopback(spark):
    jvm = spark.sparkContext._jvm
    local_host = jvm.org.apache.spark.util.Utils.localHostName()   # "localhost" on loopback
    assert jvm.java.net.InetAddress.getByName(local_host).isLoopbackAddress(), local_host
    assert spark.conf.get("spark.driver.host") == "127.0.0.1"
    assert spark.conf.get("spark.driver.bindAddress") == "127.0.0.1"
    addresses = listening_addresses(spark.sparkContext._gateway.proc.pid)
    assert loopback_only(addresses), addresses


PIPELINE_SESSION = """
import json, os, sys
sys.path.insert(0, {tests!r})
from roster.pipeline import spark_session
from tests.spark.test_loopback import listening_addresses
spark = spark_session()
print(json.dumps({{
    "local_host_is_loopback": spark.sparkContext._jvm.java.net.InetAddress.getByName(
        spark.sparkContext._jvm.org.apache.spark.util.Utils.localHostName()).isLoopbackAddress(),
    "listening": listening_addresses(spark.sparkContext._gateway.proc.pid)}}))
spark.stop()
"""


def test_the_pipeline_session_uses_loopback_even_without_spark_local_ip(spark):
    """`make run`'s session, in a process of its own (the test session is this process's)."""
    env = {k: v for k, v in os.environ.items() if k != "SPARK_LOCAL_IP"}
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", PIPELINE_SESSION.format(tests=root)],
                          env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["local_host_is_loopback"]
    assert loopback_only(answer["listening"]), answer["listening"]
    assert "resolves to a loopback address" not in done.stderr
