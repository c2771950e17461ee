"""A long poll's latency reaches /metrics when it is answered: a JoinGroup that parks until the
rest of the group rejoins is counted then, with the time it waited (roster_request_seconds is
a histogram per API, read here through Prometheus' own parser)."""
from __future__ import annotations

import datetime
import socket
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from roster.protocol.build import element, make
from roster.protocol.codec import decode_response, encode_request, request_schema
from tests.support.process import BrokerProcess
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop]

JOIN, SYNC = 11, 14
JOIN_V, SYNC_V = 5, 3
SECONDS_30 = datetime.timedelta(seconds=30)
MARGIN_S = 0.1  # the broker may start a parked request's clock just after it logs the join


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def http_broker(tmp_path):
    port = free_port()
    broker = BrokerProcess(tmp_path, {"group.initial.rebalance.delay.ms": "0",
                                      "http.port": str(port)}).start()
    broker.http = f"http://127.0.0.1:{port}/metrics"
    yield broker
    broker.stop()


def join_latency(broker) -> tuple[float, float]:
    """(count, sum in seconds) of roster_request_seconds{api="JOIN_GROUP"}."""
    with urllib.request.urlopen(broker.http, timeout=10) as answer:
        text = answer.read().decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("api") == "JOIN_GROUP" and sample.name in (
                    "roster_request_seconds_count", "roster_request_seconds_sum"):
                found[sample.name] = sample.value
    return found.get("roster_request_seconds_count", 0.0), \
        found.get("roster_request_seconds_sum", 0.0)


def join_frame(correlation_id: int, member_id: str, instance_id: str) -> bytes:
    schema = request_schema(JOIN, JOIN_V)
    protocol = make(element(schema, "protocols"), name="range", metadata=b"")
    body = make(schema, group_id="parked", session_timeout=SECONDS_30,
                rebalance_timeout=SECONDS_30, member_id=member_id,
                group_instance_id=instance_id, protocol_type="consumer", protocols=(protocol,))
    return encode_request(JOIN, JOIN_V, correlation_id, "roster-tests", body)


def read_join(wire: Wire):
    _, answer = decode_response(JOIN, JOIN_V, wire.read_frame())
    assert answer.error_code == 0, answer
    return answer


def test_a_parked_join_group_is_observed_when_answered(http_broker):
    with Wire(http_broker.bootstrap) as a, Wire(http_broker.bootstrap) as b:
        # member a forms the group alone and syncs: Stable
        a.send_raw(join_frame(1, "", "instance-a"))
        joined = read_join(a)
        sync = request_schema(SYNC, SYNC_V)
        synced = a.call(SYNC, SYNC_V, group_id="parked", generation_id=joined.generation_id,
                        member_id=joined.member_id, group_instance_id="instance-a",
                        assignments=(make(element(sync, "assignments"),
                                          member_id=joined.member_id, assignment=b""),))
        assert synced.error_code == 0
        count_before, sum_before = join_latency(http_broker)
        assert count_before == 1

        # member b's JoinGroup parks: the group waits for a to rejoin
        mark = len(http_broker.output)
        b.send_raw(join_frame(1, "", "instance-b"))
        # once the broker says it is rebalancing for b, b's latency has begun (or begins a
        # moment later: MARGIN_S)
        http_broker.wait_for_line("preparing to rebalance group parked", since=mark)
        parked_from = time.monotonic()
        while time.monotonic() - parked_from < 0.5:
            # not answered, so not yet observed (scraped a few times while it waits)
            assert join_latency(http_broker)[0] == count_before
        parked_for = time.monotonic() - parked_from

        a.send_raw(join_frame(2, joined.member_id, "instance-a"))   # a rejoins: both answered
        read_join(a)
        read_join(b)
        count_after, sum_after = join_latency(http_broker)
    assert count_after == count_before + 2
    # b's latency is its wait: it began by parked_from and ended after a rejoined, so it
    # holds parked_for however late a loaded machine reads the frames or the log
    assert sum_after - sum_before >= parked_for - MARGIN_S, (sum_after - sum_before, parked_for)
