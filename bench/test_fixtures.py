#!/usr/bin/env python3
"""What a test suite pays for its broker: roster (as `roster serve` and as the pytest plugin's
in-process broker) against Apache Kafka 4.4 started as tests/support/kafka_peer.py starts it
and against librdkafka's mock cluster (confluent-kafka, `test.mock.num.brokers`).

Measured, each a median over --rounds fresh brokers (a script, not a pytest module: the name
is the issue's):

  start       from spawning the broker (or making the mock's host client) to the first
              answered Metadata (a raw Metadata v1 request, probed every 10 ms);
              roster: `python -m roster serve` with its defaults; roster-plugin: a fresh
              Python process that imports roster.testing and starts RosterBroker (what a
              pytest session's first roster_broker costs); kafka: KafkaPeer.start (storage
              format included) in a thread, the Metadata probe from here; mock: the client
              hosting the mock cluster, to the address it logs, then the probe.
  ready       to a FindCoordinator that names a coordinator (the offsets topic made and
              loaded) and a first topic made: what a suite's first test waits for (a Kafka
              node just started may refuse CreateTopics while its controller still fences it).
  topic       a fresh topic, per test: CreateTopics answered (roster's admin client on a kept
              connection; the mock cannot create topics through its admin API: a Metadata
              request for an unknown name creates it); roster-plugin: RosterBroker.
              create_topic (in-process, no round trip).
  group       a fresh group, per test: a confluent-kafka consumer in a new group subscribes
              to a topic holding one record and returns it (FindCoordinator, JoinGroup,
              SyncGroup, OffsetFetch, Fetch): the per-test cost of a consumer test.

    .venv/bin/python bench/test_fixtures.py                       # all, 3 rounds
    .venv/bin/python bench/test_fixtures.py --only roster,roster-plugin,mock --rounds 5
    .venv/bin/python bench/test_fixtures.py --json /tmp/fixtures.json

Everything on 127.0.0.1. The 1-minute load average is printed with the results: the machine
is shared, and wall times on a loaded one are slower for every broker alike.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TOPICS_PER_ROUND = 5
GROUPS_PER_ROUND = 3


def metadata_answered(host: str, port: int) -> bool:
    """A Metadata v1 for no topic, answered (any answer: the broker serves)."""
    try:
        with socket.create_connection((host, port), timeout=0.5) as sock:
            body = struct.pack(">hhih", 3, 1, 1, 5) + b"probe" + struct.pack(">i", 0)
            sock.sendall(struct.pack(">i", len(body)) + body)
            return len(sock.recv(4)) == 4
    except OSError:
        return False


def wait_metadata(address: str, began: float, timeout_s: float = 180) -> float:
    host, _, port = address.rpartition(":")
    while not metadata_answered(host, int(port)):
        if time.monotonic() - began > timeout_s:
            raise RuntimeError(f"{address}: no Metadata answer in {timeout_s} s")
        time.sleep(0.01)
    return time.monotonic() - began


def wait_coordinator(bootstrap: str, began: float, timeout_s: float = 180) -> float:
    from roster.admin.client import AdminClient, AdminError
    from roster.protocol.api_keys import ApiKey
    while True:
        try:
            with AdminClient(bootstrap, timeout_s=5.0) as admin:
                answer = admin.call(ApiKey.FIND_COORDINATOR, key="probe", key_type=0,
                                    coordinator_keys=("probe",))
                errors = [c.error_code for c in getattr(answer, "coordinators", ())] or [
                    answer.error_code]
                if all(int(e) == 0 for e in errors):
                    return time.monotonic() - began
        except (AdminError, OSError):
            pass
        if time.monotonic() - began > timeout_s:
            raise RuntimeError(f"{bootstrap}: no coordinator in {timeout_s} s")
        time.sleep(0.01)


# -- the brokers ---------------------------------------------------------------------------

def peer_settings() -> dict[str, str]:
    """The settings the Kafka peer runs with (no initial rebalance delay, 5 offsets
    partitions, ...): `roster serve` gets them too, so the two start the same broker."""
    from tests.support.kafka_peer import PEER_SETTINGS
    return dict(PEER_SETTINGS)


class RosterServe:
    name = "roster"

    def start(self) -> dict:
        port = random.randint(20000, 60000)
        self.data = tempfile.mkdtemp(prefix="bench-roster-")
        began = time.monotonic()
        settings = [arg for key, value in peer_settings().items()
                    for arg in ("--set", f"{key}={value}")]
        self.proc = subprocess.Popen([sys.executable, "-m", "roster", "serve", "--host",
                                      "127.0.0.1", "--port", str(port), "--data-dir", self.data,
                                      *settings],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.bootstrap = f"127.0.0.1:{port}"
        start = wait_metadata(self.bootstrap, began)
        return {"start": start, "ready": ready_for_a_test(self, began)}

    def create_topic(self, name: str) -> None:
        create_topic_over_the_wire(self.bootstrap, name)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


PLUGIN_CHILD = r"""
import sys, time, tempfile, pathlib, json
began = time.monotonic()
from roster.testing import RosterBroker
import roster.broker.network.server   # what start() imports: counted apart
imported = time.monotonic()
broker = RosterBroker(pathlib.Path(tempfile.mkdtemp()) / "data").start()
started = time.monotonic() - imported
print(json.dumps({"bootstrap": str(broker.bootstrap), "started": started,
                  "imports": imported - began}), flush=True)
costs = []
for line in sys.stdin:
    if line.strip() == "topic":
        t = time.monotonic()
        broker.create_topic()
        costs.append(time.monotonic() - t)
        print(json.dumps({"topic": costs[-1]}), flush=True)
    elif line.strip() == "stop":
        break
broker.stop()
"""


class RosterPlugin:
    """The plugin's broker: in a fresh interpreter (imports included), as a session's first
    roster_broker fixture pays; topics through RosterBroker.create_topic."""
    name = "roster-plugin"

    def start(self) -> dict:
        began = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-c", PLUGIN_CHILD], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
        first = json.loads(self.proc.stdout.readline())
        self.bootstrap = first["bootstrap"]
        start = wait_metadata(self.bootstrap, began)
        return {"start": start, "ready": ready_for_a_test(self, began),
                "in_process_start": first["started"], "imports": first["imports"]}

    def create_topic(self, name: str) -> float:
        self.proc.stdin.write("topic\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())["topic"]

    def stop(self) -> None:
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()
        self.proc.wait(30)


class Kafka:
    name = "kafka"

    def start(self) -> dict:
        from tests.support.kafka_peer import KafkaPeer
        self.peer = KafkaPeer()
        seen: dict = {}
        began = time.monotonic()
        # the probe in a thread, the start in this one: the JVM is spawned with a parent-death
        # signal, which fires when the spawning *thread* ends
        probe = threading.Thread(target=lambda: seen.update(
            start=wait_metadata(self.peer.bootstrap, began)), daemon=True)
        probe.start()
        self.peer.start()
        probe.join(180)
        self.bootstrap = self.peer.bootstrap
        return {"start": seen["start"], "ready": ready_for_a_test(self, began)}

    def create_topic(self, name: str) -> None:
        create_topic_over_the_wire(self.bootstrap, name)

    def stop(self) -> None:
        self.peer.stop()


class Mock:
    name = "mock"

    def start(self) -> dict:
        sys.path.insert(0, str(ROOT / "bench"))
        import mock_cluster
        began = time.monotonic()
        self.host, self.bootstrap = mock_cluster.start(1)
        start = wait_metadata(self.bootstrap, began)
        return {"start": start, "ready": ready_for_a_test(self, began)}

    def create_topic(self, name: str) -> None:
        self.host.list_topics(topic=name, timeout=30)   # the mock creates it (4 partitions)

    def stop(self) -> None:
        self.host.flush(1)
        del self.host


_ADMINS: dict = {}


def create_topic_over_the_wire(bootstrap: str, name: str) -> None:
    """CreateTopics (1 partition) on one kept connection: roster's blocking admin client, the
    same for every broker, answered when the topic is made. Refusals a node that has just
    started may give (INVALID_REPLICATION_FACTOR while its controller has not unfenced it) are
    asked again, and counted in `ready`."""
    from roster.admin.client import AdminClient, AdminError
    from roster.admin.topics import create
    deadline = time.monotonic() + 120
    while True:
        try:
            admin = _ADMINS.get(bootstrap)
            if admin is None:
                admin = _ADMINS[bootstrap] = AdminClient(bootstrap)
            create(admin, name, 1, {})
            return
        except (AdminError, OSError) as exc:
            text = str(exc)
            if time.monotonic() > deadline or not any(
                    why in text for why in ("REPLICATION_FACTOR", "replicate", "fenced",
                                            "closed the connection", "cannot connect")):
                raise
            stale = _ADMINS.pop(bootstrap, None)
            if stale is not None:
                stale.close()   # a fresh connection for the next attempt
            time.sleep(0.2)


def ready_for_a_test(broker, began: float) -> float:
    """Seconds from `began` until a coordinator is found and a topic can be made."""
    wait_coordinator(broker.bootstrap, began)
    broker.create_topic(f"probe-{uuid.uuid4().hex[:8]}")
    return time.monotonic() - began


def group_round_trip(bootstrap: str, topic: str) -> float:
    """A fresh group's consumer gets the topic's one record: seconds."""
    from confluent_kafka import Consumer
    began = time.monotonic()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        while True:
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                return time.monotonic() - began
            if time.monotonic() - began > 60:
                raise RuntimeError("no record in 60 s")
    finally:
        consumer.close()


def produce_one(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, b"x", partition=0)
    producer.flush(30)


def measure(broker, rounds: int) -> dict:
    rows: dict[str, list[float]] = {}
    for _ in range(rounds):
        started = broker.start()
        try:
            for key, value in started.items():
                rows.setdefault(key, []).append(value)
            for _ in range(TOPICS_PER_ROUND):
                name = f"t-{uuid.uuid4().hex[:12]}"
                began = time.monotonic()
                inside = broker.create_topic(name)
                rows.setdefault("topic", []).append(
                    inside if inside is not None else time.monotonic() - began)
            topic = f"g-{uuid.uuid4().hex[:12]}"
            if isinstance(broker, RosterPlugin):
                create_topic_over_the_wire(broker.bootstrap, topic)
            else:
                broker.create_topic(topic)
            produce_one(broker.bootstrap, topic)
            for _ in range(GROUPS_PER_ROUND):
                rows.setdefault("group", []).append(group_round_trip(broker.bootstrap, topic))
        finally:
            broker.stop()
    return {key: statistics.median(values) for key, values in rows.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="roster,roster-plugin,kafka,mock")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    brokers = {b.name: b for b in (RosterServe(), RosterPlugin(), Kafka(), Mock())}
    chosen = [brokers[name] for name in args.only.split(",")]
    load_before = os.getloadavg()[0]
    results = {}
    for broker in chosen:
        print(f"measuring {broker.name} ...", file=sys.stderr, flush=True)
        results[broker.name] = measure(broker, args.rounds)
    load_after = os.getloadavg()[0]

    def cell(name, key, scale=1.0, unit="s"):
        value = results.get(name, {}).get(key)
        return "-" if value is None else f"{value * scale:.3f} {unit}" if unit == "s" \
            else f"{value * scale:.1f} {unit}"
    print(f"median of {args.rounds} rounds; load average {load_before:.1f} -> {load_after:.1f}")
    print("| | " + " | ".join(results) + " |")
    print("|---|" + "---|" * len(results))
    for key, label, scale, unit in (
            ("start", "start -> first Metadata answered", 1, "s"),
            ("ready", "start -> a coordinator found and a topic made", 1, "s"),
            ("imports", "of which importing roster's broker", 1000, "ms"),
            ("in_process_start", "of which RosterBroker.start() (imports done)", 1000, "ms"),
            ("topic", "a fresh topic (per test)", 1000, "ms"),
            ("group", "a fresh group's consumer gets a record (per test)", 1000, "ms")):
        print(f"| {label} | " + " | ".join(cell(n, key, scale, unit) for n in results) + " |")
    if args.json:
        args.json.write_text(json.dumps({"rounds": args.rounds, "load": [load_before, load_after],
                                         "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
