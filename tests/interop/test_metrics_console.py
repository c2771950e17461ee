"""/metrics and the group console on a real broker with real clients: a Prometheus text-format
parser reads /metrics; its lag equals `roster offsets describe`; rebalances, saved rebalances,
requests and connections are counted; the console lists the groups and a group's page shows
its members and one dot per recorded generation (checked in the HTML here, and in headless
Chromium by test_console_browser.py)."""
from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from roster.admin.client import AdminClient
from roster.observability import events as ev
from roster.observability import history
from tests.support import groups
from tests.support.groups import ConfluentMember, Watch
from tests.support.wire import Wire

API_VERSIONS = 18

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("metrics-console")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http_broker(tmp_path_factory):
    from tests.support.process import BrokerProcess
    port = free_port()   # the listener serves before the broker says it listens
    broker = BrokerProcess(tmp_path_factory.mktemp("metrics"), {
        "group.initial.rebalance.delay.ms": "0", "http.port": str(port)}).start()
    broker.http = f"http://127.0.0.1:{port}/"
    yield broker
    broker.stop()


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.status == 200
        return answer.read().decode()


def scrape(broker) -> dict:
    """{(name, labels as a sorted tuple): value} from /metrics, through Prometheus' parser."""
    values = {}
    for family in text_string_to_metric_families(get(broker.http + "metrics")):
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return values


def roster_cli(broker, *args) -> str:
    return subprocess.run([sys.executable, "-m", "roster", args[0], "--bootstrap-server",
                           broker.bootstrap, *args[1:]], capture_output=True, text=True,
                          timeout=60, check=True).stdout


@pytest.fixture(scope="module")
def busy_group(http_broker):
    """A static group of two confluent-kafka members that consumed and committed part of a
    topic, then bounced one member (a saved rebalance); the members keep running."""
    group = topic = "metered"
    groups.create_topic(http_broker.bootstrap, topic, 4)
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": http_broker.bootstrap})
    watch = Watch()
    conf = {"heartbeat.interval.ms": 300, "session.timeout.ms": 6000}
    members = [ConfluentMember(watch, http_broker.bootstrap, group, topic, f"m-{i}",
                               f"meter-{i}", conf) for i in range(2)]
    for m in members:
        m.start()
    groups.wait_split(watch, members, 4)
    # produced once the partitions are split, so that each member consumes (and commits) its own
    for i in range(200):
        producer.produce(topic, str(i).encode(), partition=i % 4)
    producer.flush(30)
    watch.wait_for(lambda: all(len(m.records) >= 100 for m in members), groups.DEADLINE_S,
                   lambda: "every record consumed")
    for m in members:
        m.commit()
    members[1].stop()
    again = ConfluentMember(watch, http_broker.bootstrap, group, topic, "m-1-again",
                            "meter-1", conf).start()
    watch.wait_for(lambda: again.count("assign") >= 1, groups.DEADLINE_S, lambda: "reassigned")
    members[1] = again
    with AdminClient(http_broker.bootstrap) as client:   # wait for the saved event
        for event in history.events(client, group, follow=True, wait_ms=500, timeout_s=20):
            if event.kind == ev.SAVED:
                break
    for m in members:
        m.stop()        # static members leave nothing behind: the group stays Stable
    for i in range(40):   # more records: a lag to measure
        producer.produce(topic, b"late", partition=i % 4)
    producer.flush(30)
    return group


def test_prometheus_parser_reads_metrics_and_lag_equals_offsets_describe(http_broker,
                                                                         busy_group):
    values = scrape(http_broker)
    described = roster_cli(http_broker, "offsets", "describe", busy_group)
    expected = {}
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
    for line in described.splitlines()[1:]:
        fields = line.split()
        expected[(fields[1], fields[2])] = float(fields[5])
    got = {}
    for (name, labels), value in values.items():
        if name == "roster_consumer_lag" and dict(labels)["group"] == busy_group:
            got[(dict(labels)["topic"], dict(labels)["partition"])] = value
    assert len(got) == 4 and got == expected, (got, described)
    assert sum(got.values()) == 40


def test_metrics_count_rebalances_saved_requests_and_connections(http_broker, busy_group):
    values = scrape(http_broker)

    def total(name, **labels):
        return sum(v for (n, ls), v in values.items() if n == name and
                   all(dict(ls).get(k) == str(x) for k, x in labels.items()))
    assert total("roster_rebalances_total", group=busy_group) >= 1
    assert total("roster_rebalances_saved_total", group=busy_group) == 1
    assert total("roster_rebalance_duration_seconds_count", protocol="classic") >= 1
    assert total("roster_requests_total", api="HEARTBEAT") > 0
    assert total("roster_heartbeats_total") > 0 and total("roster_offset_commits_total") >= 2
    assert total("roster_bytes_in_total") > 0 and total("roster_bytes_out_total") > 0
    assert total("roster_groups", protocol="classic") >= 1
    assert ("roster_authentication_failures_total", ()) in values


def test_connections_gauge_counts_a_connection_while_it_is_open(http_broker, busy_group):
    """Three connections this test opens are counted while open, and gone once closed."""
    def connections() -> float:
        return sum(v for (n, _), v in scrape(http_broker).items() if n == "roster_connections")

    def settles_at(want: float) -> float:
        deadline = time.monotonic() + 30
        while (got := connections()) != want and time.monotonic() < deadline:
            threading.Event().wait(0.1)
        return got

    before = connections()
    wires = [Wire(http_broker.bootstrap) for _ in range(3)]
    try:
        for wire in wires:   # answered: the broker has accepted the connection
            assert wire.call(API_VERSIONS, 0).error_code == 0
        assert settles_at(before + 3) == before + 3, (before, connections())
    finally:
        for wire in wires:
            wire.close()
    assert settles_at(before) == before, (before, connections())


def test_console_lists_groups_and_shows_a_group(http_broker, busy_group):
    index = get(http_broker.http)
    assert f'href="/group/{busy_group}"' in index
    page = get(http_broker.http + f"group/{busy_group}")
    with AdminClient(http_broker.bootstrap) as client:
        recorded = [e for e in history.events(client, busy_group)
                    if e.kind == ev.GENERATION]
    dots = re.findall(r'<g class="generation" data-generation="(\d+)"', page)
    assert len(dots) == len(recorded) >= 1
    assert page.count('<tr class="member">') == 0 or "meter-" in page
    assert page.count('<tr class="lag">') == 4
    assert 'data-count="saved">1<' in page
    assert "saved a rebalance" in page
