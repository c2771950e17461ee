#!/usr/bin/env python3
"""librdkafka's mock cluster (C, in memory, part of the confluent-kafka wheel) served on loopback
as a peer for the benchmarks.

A librdkafka client configured with `test.mock.num.brokers` starts a mock cluster inside itself
and logs the address it listens on; this process keeps one such client alive, creates the
requested topics through the mock's own CreateTopics, prints the bootstrap address as its first
stdout line and serves until SIGTERM/SIGINT.

    .venv/bin/python bench/mock_cluster.py --topics bench,t

Topics are made by asking the mock's Metadata for them: it creates a topic it does not know with
its default of 4 partitions (its CreateTopics needs a controller its Metadata does not name, so
an admin client cannot create one). The benchmarks use partition 0.

The mock's group coordinator holds a new group's first rebalance for its own
group.initial.rebalance.delay.ms (3 s; librdkafka exposes no configuration property for it).
"""
from __future__ import annotations

import argparse
import logging
import re
import signal
import sys
import threading

import confluent_kafka

ADDRESS = re.compile(r"Mock cluster enabled.*replaced with (\S+)")


class _AddressLog(logging.Handler):
    """Catches the one log line in which librdkafka names the mock cluster's address."""

    def __init__(self) -> None:
        super().__init__()
        self.address: str | None = None
        self.found = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        match = ADDRESS.search(record.getMessage())
        if match:
            self.address = match.group(1)
            self.found.set()


def start(brokers: int = 1) -> tuple[confluent_kafka.Producer, str]:
    """(the client that hosts the mock cluster, its bootstrap address)."""
    handler = _AddressLog()
    logger = logging.getLogger("mock_cluster")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    host = confluent_kafka.Producer({"test.mock.num.brokers": brokers, "logger": logger})
    host.poll(0)   # librdkafka logs through the handle's queue
    while not handler.found.wait(0.1):
        host.poll(0.1)
        if handler.found.is_set():
            break
    return host, handler.address


def create_topics(host: confluent_kafka.Producer, names: str) -> None:
    for name in filter(None, names.split(",")):
        name = name.partition(":")[0]   # a partition count is not the mock's to take
        host.list_topics(topic=name, timeout=30)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--brokers", type=int, default=1)
    parser.add_argument("--topics", default="", help="comma list of topic names to create")
    args = parser.parse_args(argv)
    host, bootstrap = start(args.brokers)
    create_topics(host, args.topics)
    print(bootstrap, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.wait(1.0):
        host.poll(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
