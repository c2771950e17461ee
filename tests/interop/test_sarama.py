"""sarama (Go; Debian's golang-github-shopify-sarama-dev, 1.22.1) as a consumer group member
against roster, with its default settings but for `Version`, which sarama's consumer groups need
to be at least 0.10.2: at that floor sarama fetches with Fetch v3 (magic-1 message sets) and
produces with Produce v2, and it commits with OffsetCommit v1 at every version, all of which
Kafka 4.0 dropped and roster serves as Kafka 3.9 did (down- and up-converting the message
sets). One run uses a modern Version (2.1.0: Fetch v4+, record batches).

The Go program (tests/interop/sarama/group_consumer.go) is built once per session, offline:
GOPATH mode over Debian's Go library sources in /usr/share/gocode, GOPROXY=off.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.interop.test_bad_input import _create
from tests.support import clients
from tests.support.needs import missing
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("sarama")]

SOURCE = Path(__file__).parent / "sarama" / "group_consumer.go"
# Go's build cache is content-addressed and safe to share between processes: kept under .cache/,
# a second run reuses sarama's compiled packages (a cold cgo build takes minutes on 2 cores)
GO_BUILD_CACHE = Path(__file__).resolve().parents[2] / ".cache" / "go-build-sarama"
GOCODE = Path("/usr/share/gocode")
SARAMA = GOCODE / "src" / "github.com" / "Shopify" / "sarama"


def go_environment(work: Path) -> dict[str, str]:
    """Debian's Go libraries are GOPATH source trees: build in GOPATH mode with nothing
    fetched (no module proxy, no network)."""
    return {**os.environ, "GO111MODULE": "off", "GOPATH": f"{work / 'gopath'}:{GOCODE}",
            "GOPROXY": "off", "GOFLAGS": "", "GOCACHE": str(GO_BUILD_CACHE),
            "CGO_ENABLED": "1"}


@pytest.fixture(scope="session")
def group_consumer(tmp_path_factory) -> Path:
    go = shutil.which("go")
    if go is None or not SARAMA.is_dir():
        missing("needs the Debian packages golang-go and golang-github-shopify-sarama-dev "
                "(scripts/ensure-system-deps.sh installs them)")
    work = tmp_path_factory.mktemp("sarama-build")
    binary = work / "group_consumer"
    built = subprocess.run([go, "build", "-o", str(binary), str(SOURCE)], cwd=work,
                           env=go_environment(work), capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr
    return binary


def roster_cli(bootstrap: str, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "roster", *args[:1], "--bootstrap-server",
                             bootstrap, *args[1:]], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def described_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int, int, int]]:
    """`roster offsets describe`: (topic, partition) -> (committed, log end, lag)."""
    rows = {}
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
    for line in roster_cli(bootstrap, "offsets", "describe", group).splitlines()[1:]:
        _, topic, partition, current, end, lag, *_ = line.split()
        rows[(topic, int(partition))] = (int(current), int(end), int(lag))
    return rows


def run_group_consumer(binary: Path, broker, *args: str) -> dict[int, tuple[int, int]]:
    """Run the Go member; partition -> (messages consumed, last offset)."""
    ran = subprocess.run([str(binary), "-brokers", broker.bootstrap, *args],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr + "\n".join(broker.output[-30:])
    consumed = {}
    for line in ran.stdout.splitlines():
        _, partition, count, last = line.split()
        consumed[int(partition)] = (int(count), int(last))
    return consumed


@pytest.mark.parametrize("version", ["0.10.2.0", "2.1.0"])
def test_a_sarama_group_member_consumes_and_commits(broker_factory, group_consumer, version):
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "go-clicks", 3).error_code == 0
    clients.produce_confluent(broker.bootstrap, "go-clicks", clients.sample_records(30, 3, "g"),
                              "none")
    consumed = run_group_consumer(group_consumer, broker, "-topic", "go-clicks", "-group",
                                  "go-group", "-expect", "30", "-version", version)
    assert consumed == {0: (10, 9), 1: (10, 9), 2: (10, 9)}
    # what sarama committed (OffsetCommit v1) is what roster reports
    assert described_offsets(broker.bootstrap, "go-group") == {
        ("go-clicks", p): (10, 10, 0) for p in range(3)}


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4"])
def test_sarama_at_its_group_floor_produces_and_consumes(broker_factory, group_consumer,
                                                         compression):
    """sarama at 0.10.2.0 end to end: Produce v2 with magic-1 message sets (compressed ones as a
    wrapper message), then a group member reading them back with Fetch v3 and committing."""
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    topic = f"go-{compression}"
    started_ms = time.time() * 1000
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, topic, 2).error_code == 0
    consumed = run_group_consumer(group_consumer, broker, "-topic", topic, "-group", "go-floor",
                                  "-produce", "40", "-partitions", "2", "-compression",
                                  compression, "-expect", "40", "-version", "0.10.2.0")
    assert consumed == {0: (20, 19), 1: (20, 19)}
    # what sarama produced is what a modern client reads: keys, values, in order
    records = clients.consume_confluent(broker.bootstrap, topic, 2, 40)
    assert sorted((r.partition, r.offset, r.key, r.value) for r in records) == sorted(
        (i % 2, i // 2, f"key-{i}".encode(), f"value-{i}".encode()) for i in range(40))
    # magic 1 carries sarama's create times, kept through the up-conversion
    assert all(started_ms - 1000 <= r.timestamp <= time.time() * 1000 for r in records)
    assert described_offsets(broker.bootstrap, "go-floor") == {
        (topic, p): (20, 20, 0) for p in range(2)}
