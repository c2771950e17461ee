"""RequestStats: what the connection observes per request comes out of /metrics as a
cumulative histogram per API with Prometheus' bounds, a sum in seconds and a count."""
from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from roster.observability.metrics import LATENCY_BOUNDS, RequestStats

JOIN_GROUP = bytes([0, 11, 0, 5])   # the start of a JoinGroup v5 request frame


def test_latencies_fold_into_cumulative_buckets():
    stats = RequestStats()
    for elapsed_ns in (500, 1_500, 5_000, 2_000_000, 3_000_000_000):
        stats.observe(JOIN_GROUP, elapsed_ns)
    pairs, seconds = stats.latency(11)
    bounds = dict(pairs)
    assert bounds["1.024e-06"] == 1          # 500 ns
    assert bounds["4.096e-06"] == 2          # + 1.5 us
    assert bounds["1.6384e-05"] == 3         # + 5 us
    assert bounds["0.004194304"] == 4        # + 2 ms
    assert bounds["4.294967296"] == 5 == bounds["+Inf"] == stats.count(11)
    assert [count for _, count in pairs] == sorted(count for _, count in pairs)
    assert len(pairs) == len(LATENCY_BOUNDS) + 1
    assert abs(seconds - 3.0020070) < 1e-9
    assert stats.keys() == [11]


def test_a_frame_that_is_not_a_request_counts_as_other():
    stats = RequestStats()
    stats.observe(b"", 10)            # a bare SASL token can be this short
    stats.observe(b"\x01", 10)
    stats.observe(b"\x07\x00token", 10)
    assert stats.keys() == [255] and stats.count(255) == 3


def test_the_collector_exposes_a_histogram_per_api():
    from types import SimpleNamespace

    from roster.broker.groups.runtime import GroupRuntime
    from roster.coordinator.config import GroupConfig
    from roster.observability.metrics import Metrics
    broker = SimpleNamespace(groups=GroupRuntime(GroupConfig()))
    metrics = Metrics(broker)
    try:
        metrics.stats.observe(JOIN_GROUP, 2_000_000)
        metrics.stats.bytes_in += 40
        samples = {(s.name, s.labels.get("api"), s.labels.get("le")): s.value
                   for family in text_string_to_metric_families(metrics.render().decode())
                   for s in family.samples}
    finally:
        metrics.close()
    assert samples[("roster_requests_total", "JOIN_GROUP", None)] == 1
    assert samples[("roster_request_seconds_count", "JOIN_GROUP", None)] == 1
    assert samples[("roster_request_seconds_sum", "JOIN_GROUP", None)] == 0.002
    assert samples[("roster_request_seconds_bucket", "JOIN_GROUP", "0.001048576")] == 0
    assert samples[("roster_request_seconds_bucket", "JOIN_GROUP", "0.004194304")] == 1
    assert samples[("roster_bytes_in_total", None, None)] == 40


class _Transport:
    def __init__(self) -> None:
        self.written = bytearray()

    def write(self, data) -> None:
        self.written += data

    def get_extra_info(self, key):
        return ("127.0.0.1", 5555) if key == "peername" else None

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_a_pipelined_burst_of_several_apis_is_observed_run_by_run():
    """The connection observes the requests it answers at once inline, by runs of one API
    (one clock read where a run begins and ends): runs that switch API mid-burst must land
    on the right key, every request counted once."""
    from types import SimpleNamespace

    from roster.broker.groups.runtime import GroupRuntime
    from roster.broker.handlers import build_registry
    from roster.broker.network.connection import Connection
    from roster.coordinator.config import GroupConfig
    from roster.protocol.build import make
    from roster.protocol.codec import encode_request, request_schema
    stats = RequestStats()
    broker = SimpleNamespace(config={"socket.request.max.bytes": 1 << 20},
                             registry=build_registry(), groups=GroupRuntime(GroupConfig()),
                             request_stats=stats)
    api_versions = encode_request(18, 0, 1, "test", make(request_schema(18, 0)))
    heartbeat = encode_request(12, 3, 2, "test", make(
        request_schema(12, 3), group_id="nobody", generation_id=1, member_id="m",
        group_instance_id=None))   # answered at once: UNKNOWN_MEMBER_ID
    stream = b"".join([api_versions, api_versions, heartbeat, api_versions, heartbeat,
                       heartbeat, heartbeat])
    connection = Connection(broker, SimpleNamespace(queued=None, admit=lambda _: True))
    transport = _Transport()
    connection.connection_made(transport)
    room = connection.get_buffer(-1)
    room[:len(stream)] = stream
    connection.buffer_updated(len(stream))
    assert stats.count(18) == 3 and stats.count(12) == 4 and stats.keys() == [12, 18]
    assert stats.nanoseconds[18] > 0 and stats.nanoseconds[12] > 0
    assert sum(stats.nanoseconds) == stats.nanoseconds[12] + stats.nanoseconds[18]
    assert stats.bytes_in == len(stream) and stats.bytes_out == len(transport.written) > 0
