"""bench/mock_cluster.py: librdkafka's mock cluster from the confluent-kafka wheel, the peer the
produce and coordinator benchmarks measure against, starts from the repository alone, prints
its loopback address first and serves the topics it was asked for."""
from __future__ import annotations

import select
import subprocess
import sys
from pathlib import Path

from confluent_kafka.admin import AdminClient

MOCK = Path(__file__).resolve().parents[2] / "bench" / "mock_cluster.py"


def test_mock_cluster_serves_its_topics_on_loopback():
    proc = subprocess.Popen([sys.executable, str(MOCK), "--topics", "bench,t"],
                            stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "the mock printed no address in 60 s"
        address = proc.stdout.readline().strip()
        assert address.startswith("127.0.0.1:"), address
        topics = AdminClient({"bootstrap.servers": address}).list_topics(timeout=30).topics
        assert {"bench", "t"} <= set(topics)
        assert 0 in topics["bench"].partitions
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
