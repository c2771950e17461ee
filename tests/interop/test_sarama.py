"""sarama (Go; Debian's golang-github-shopify-sarama-dev, 1.22.1) as a consumer group member
against roster. With its default settings sarama commits with OffsetCommit v1, which Kafka 4.0
dropped and roster serves as Kafka 3.9 did.

The Go program (tests/interop/sarama/group_consumer.go) is built once per session, offline:
GOPATH mode over Debian's Go library sources in /usr/share/gocode, GOPROXY=off.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.interop.test_bad_input import _create
from tests.support import clients
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("sarama")]

SOURCE = Path(__file__).parent / "sarama" / "group_consumer.go"
GOCODE = Path("/usr/share/gocode")
SARAMA = GOCODE / "src" / "github.com" / "Shopify" / "sarama"


def go_environment(work: Path) -> dict[str, str]:
    """Debian's Go libraries are GOPATH source trees: build in GOPATH mode with nothing
    fetched (no module proxy, no network)."""
    return {**os.environ, "GO111MODULE": "off", "GOPATH": f"{work / 'gopath'}:{GOCODE}",
            "GOPROXY": "off", "GOFLAGS": "", "GOCACHE": str(work / "cache"),
            "CGO_ENABLED": "1"}


@pytest.fixture(scope="session")
def group_consumer(tmp_path_factory) -> Path:
    go = shutil.which("go")
    if go is None or not SARAMA.is_dir():
        pytest.skip("needs the Debian packages golang-go and golang-github-shopify-sarama-dev "
                    "(scripts/ensure-system-deps.sh installs them)")
    work = tmp_path_factory.mktemp("sarama-build")
    binary = work / "group_consumer"
    built = subprocess.run([go, "build", "-o", str(binary), str(SOURCE)], cwd=work,
                           env=go_environment(work), capture_output=True, text=True, timeout=300)
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
    for line in roster_cli(bootstrap, "offsets", "describe", group).splitlines()[2:]:
        topic, partition, current, end, lag = line.split()
        rows[(topic, int(partition))] = (int(current), int(end), int(lag))
    return rows


@pytest.mark.parametrize("version", ["0.11.0.0", "2.1.0"])
def test_a_sarama_group_member_consumes_and_commits(broker_factory, group_consumer, version):
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "go-clicks", 3).error_code == 0
    clients.produce_confluent(broker.bootstrap, "go-clicks", clients.sample_records(30, 3, "g"),
                              "none")
    ran = subprocess.run([str(group_consumer), "-brokers", broker.bootstrap, "-topic", "go-clicks",
                          "-group", "go-group", "-expect", "30", "-version", version],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr + "\n".join(broker.output[-30:])
    consumed = {}
    for line in ran.stdout.splitlines():
        _, partition, count, last = line.split()
        consumed[int(partition)] = (int(count), int(last))
    assert consumed == {0: (10, 9), 1: (10, 9), 2: (10, 9)}, ran.stdout
    # what sarama committed (OffsetCommit v1) is what roster reports
    assert described_offsets(broker.bootstrap, "go-group") == {
        ("go-clicks", p): (10, 10, 0) for p in range(3)}
