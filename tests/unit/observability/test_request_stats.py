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

    from roster.observability.metrics import Metrics
    broker = SimpleNamespace(groups=SimpleNamespace(
        coordinator=SimpleNamespace(groups={}), consumer=SimpleNamespace(groups={})))
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
