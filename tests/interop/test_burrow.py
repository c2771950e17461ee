"""Burrow (LinkedIn's lag checker; Debian's `burrow`, 1.2.1) against roster. Burrow asks for
each partition's log end with ListOffsets v0, which Kafka 4.0 dropped: roster serves it as Kafka
3.9 did, so Burrow reports a group's lag, and the lag it reports is what `roster offsets
describe` prints.

Burrow needs ZooKeeper for its own coordination: Debian's `zookeeper`, started here on a
loopback port. Burrow reads __consumer_offsets through sarama at its client profile's
`kafka-version`, which is left unset here: Burrow's default, "0.8", fetches with Fetch v0, so
roster answers with magic-0 message sets down-converted from its stored batches, as Kafka 3.9
did (see docs/protocol.md). A second run sets Debian's example, "0.10.0" (Fetch v2, magic 1).
"""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.interop.test_bad_input import _create
from tests.interop.test_sarama import described_offsets
from tests.support import clients
from tests.support.needs import missing
from tests.support.ports import free_port
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("burrow")]

BURROW = shutil.which("Burrow") or "/usr/bin/Burrow"
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
DEADLINE_S = 60


def wait_for(check, what: str, timeout_s: float = DEADLINE_S, process=None):
    """Poll `check` until it returns something truthy (a condition with a deadline)."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"{what}: the process exited with {process.returncode}")
        try:
            last = check()
        except (OSError, ValueError, KeyError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen in {timeout_s}s (last: {last!r})")


def _zookeeper_ok(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
        s.sendall(b"ruok")
        return s.recv(4) == b"imok"


@pytest.fixture
def zookeeper(tmp_path):
    java = shutil.which("java")
    if java is None or not ZOOKEEPER_JAR.exists():
        missing("needs the Debian package zookeeper (and Java); "
                "scripts/ensure-system-deps.sh installs them")
    port = free_port()
    config = tmp_path / "zoo.cfg"
    config.write_text(f"tickTime=2000\ndataDir={tmp_path / 'zk-data'}\nclientPort={port}\n"
                      "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                      "4lw.commands.whitelist=ruok\n")
    with open(tmp_path / "zookeeper.log", "w") as log:
        process = subprocess.Popen([java, "-cp", str(ZOOKEEPER_JAR),
                                    "org.apache.zookeeper.server.ZooKeeperServerMain",
                                    str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: _zookeeper_ok(port), "ZooKeeper answering ruok", process=process)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(20)


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:  # Burrow answers 404 with a JSON body
        return json.loads(exc.read())


class Burrow:
    def __init__(self, directory: Path, zookeeper: str, bootstrap: str,
                 kafka_version: str | None = None) -> None:
        self.http = f"127.0.0.1:{free_port()}"
        self.log = directory / "burrow.log"
        (directory / "burrow.toml").write_text(f"""
[general]
pidfile="{directory / 'burrow.pid'}"

[logging]
level="debug"

[zookeeper]
servers=["{zookeeper}"]
timeout=6
root-path="/burrow"

[client-profile.roster]
client-id="burrow-test"
{f'kafka-version="{kafka_version}"' if kafka_version else ""}

[cluster.local]
class-name="kafka"
servers=["{bootstrap}"]
client-profile="roster"
topic-refresh=1
offset-refresh=1

[consumer.local]
class-name="kafka"
cluster="local"
servers=["{bootstrap}"]
client-profile="roster"
start-latest=false

[httpserver.default]
address="{self.http}"

[storage.default]
class-name="inmemory"
workers=2
intervals=10
expire-group=604800
min-distance=1

[evaluator.default]
class-name="caching"
expire-cache=1
""")
        with open(self.log, "w") as log:
            self.process = subprocess.Popen([BURROW, "-config-dir", str(directory)], cwd=directory,
                                            stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: _get(f"http://{self.http}/v3/kafka").get("clusters") == ["local"],
                 "Burrow's HTTP server", process=self.process)

    def get(self, path: str):
        return _get(f"http://{self.http}{path}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def tail(self) -> str:
        return "\n".join(self.log.read_text().splitlines()[-40:])


@pytest.fixture
def burrow_for(tmp_path, zookeeper):
    if not Path(BURROW).exists():
        missing("needs the Debian package burrow (scripts/ensure-system-deps.sh installs it)")
    started = []

    def start(bootstrap: str, kafka_version: str | None = None) -> Burrow:
        directory = tmp_path / f"burrow{len(started)}"
        directory.mkdir()
        started.append(Burrow(directory, zookeeper, bootstrap, kafka_version))
        return started[-1]

    yield start
    for burrow in started:
        burrow.stop()


@pytest.mark.parametrize("kafka_version", [None, "0.10.0"])
def test_burrow_reports_the_lag_roster_reports(broker_factory, burrow_for, kafka_version):
    from confluent_kafka import Consumer, TopicPartition
    broker = broker_factory()
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "lagged", 2).error_code == 0
    clients.produce_confluent(broker.bootstrap, "lagged", clients.sample_records(20, 2, "b"),
                              "none")
    burrow = burrow_for(broker.bootstrap, kafka_version)
    try:
        # the log end offsets Burrow got with ListOffsets v0
        topic = wait_for(lambda: burrow.get("/v3/kafka/local/topic/lagged").get("offsets"),
                         "Burrow knowing the offsets of 'lagged'", process=burrow.process)
        assert topic == [10, 10]

        committer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lag-group"})
        committer.commit(offsets=[TopicPartition("lagged", 0, 4), TopicPartition("lagged", 1, 7)],
                         asynchronous=False)
        committer.close()
        roster_view = described_offsets(broker.bootstrap, "lag-group")
        assert roster_view == {("lagged", 0): (4, 10, 6), ("lagged", 1): (7, 10, 3)}

        def burrow_lag():
            status = burrow.get("/v3/kafka/local/consumer/lag-group/lag")["status"]
            partitions = {(p["topic"], p["partition"]): p for p in status["partitions"]}
            if len(partitions) < 2 or any(p["end"] is None for p in partitions.values()):
                return None
            return status, partitions

        status, partitions = wait_for(burrow_lag, "Burrow reporting lag-group's lag",
                                      process=burrow.process)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- Burrow's log ---\n{burrow.tail()}") from None
    assert {key: (p["end"]["offset"], p["current_lag"]) for key, p in partitions.items()} == \
        {key: (current, lag) for key, (current, _, lag) in roster_view.items()}
    assert status["totallag"] == sum(lag for _, _, lag in roster_view.values())
    assert "lag-group" in burrow.get("/v3/kafka/local/consumer")["consumers"]
