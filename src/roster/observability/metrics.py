"""`/metrics` in Prometheus' text format (prometheus-client). Nothing here is on a request's
path except RequestStats.observe_run and observe (a few list updates per run of one API's
requests, or per request that waited; only while the HTTP listener is on); everything else is
read from the broker's state when Prometheus scrapes.

Families (all prefixed roster_):
  groups{state,protocol}                    groups by state and type (classic | consumer | ...)
  group_members{group,protocol}             members per group
  group_epoch{group,protocol}               its classic generation or group epoch
  group_tasks{group,protocol,role}          tasks its members hold (streams: active, standby,
                                            warmup), from the type's GroupOverview.work
  rebalances_total{group,protocol,reason}   generations, by what triggered them
  rebalances_saved_total{group}             rebalances static membership avoided (KIP-345)
  rebalance_duration_seconds{protocol}      histogram: trigger to Stable
  partitions_moved_total{group}             partitions that changed owner
  consumer_lag{group,topic,partition}       log end offset - committed offset
  committed_offset / log_end_offset         the two sides of that lag
  requests_total{api}                       requests answered
  request_seconds{api}                      histogram: latency to the answer, long polls too
  heartbeats_total, offset_commits_total    the group hot paths, for rates
  bytes_in_total, bytes_out_total           request and answer bytes
  connections                               open client connections
  authentication_failures_total             SASL failures and failed TLS handshakes
  share_...                                 share partitions (KIP-932): share_metrics.py
"""
from __future__ import annotations

import logging
import time

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from roster.observability import events as ev
from roster.protocol.api_keys import ApiKey

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
# Heartbeat, ConsumerGroupHeartbeat, StreamsGroupHeartbeat
HEARTBEAT_KEYS = {int(ApiKey.HEARTBEAT), 68, int(ApiKey.STREAMS_GROUP_HEARTBEAT)}
COMMIT_KEY = int(ApiKey.OFFSET_COMMIT)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


_KEYS = 256     # API keys are below 256
_OTHER = 255    # what is not a request (a bare SASL token)
_SPAN = 64      # latency buckets per key: the bit lengths of a 64-bit count of nanoseconds
# The request latency histogram's bounds: powers of four from ~1 us to ~69 s, as
# (bit length, bound in seconds) over RequestStats' power-of-two buckets
LATENCY_BOUNDS = tuple((bits, repr(2 ** bits / 1e9)) for bits in range(10, 37, 2))


def _api_name(key: int) -> str:
    if key == _OTHER:
        return "OTHER"
    try:
        return ApiKey(key).name
    except ValueError:
        return str(key)


class RequestStats:
    """Per API key: requests answered and their latency (from when roster starts serving the
    request to its answer, a long poll's wait included); bytes in and out.

    This is the only part of /metrics on a request's path, so it counts in plain lists of ints
    that prometheus-client reads only when Prometheus scrapes (BrokerCollector). Latency goes
    into power-of-two buckets of nanoseconds, picked by `bit_length()` (one C call); the scrape
    folds them into the histogram's bounds (LATENCY_BOUNDS) and counts the requests from them.
    The requests a connection answers at once are observed by runs of one API (observe_run),
    a request that waits on its own, with its wait (observe)."""

    OTHER = _OTHER    # (Connection._serve_buffered computes the key inline)

    __slots__ = ("nanoseconds", "buckets", "bytes_in", "bytes_out")

    def __init__(self) -> None:
        self.nanoseconds = [0] * _KEYS
        # [key][bit length of the latency in ns]
        self.buckets = [[0] * _SPAN for _ in range(_KEYS)]
        self.bytes_in = 0      # added by the connection as it reads,
        self.bytes_out = 0     # and as it writes

    def observe(self, frame: bytes, elapsed_ns: int) -> None:
        """A request answered `elapsed_ns` after roster started on it. The frame is the
        request without its size prefix, its API key first (a bare SASL token, the one frame
        that is not a request, counts as OTHER unless it starts with a zero byte)."""
        try:
            key = _OTHER if frame[0] else frame[1]
        except IndexError:
            key = _OTHER
        self.nanoseconds[key] += elapsed_ns
        self.buckets[key][elapsed_ns.bit_length()] += 1

    def observe_run(self, key: int, count: int, elapsed_ns: int) -> None:
        """`count` requests of one API answered back to back in `elapsed_ns`: each observed
        at their mean (Connection._serve_buffered; one clock read a run, not a request)."""
        self.nanoseconds[key] += elapsed_ns
        self.buckets[key][(elapsed_ns // count).bit_length()] += count

    def count(self, key: int) -> int:
        return sum(self.buckets[key])

    def keys(self) -> list[int]:
        """The API keys that have been answered."""
        return [key for key in range(_KEYS) if self.count(key)]

    def latency(self, key: int) -> tuple[list[tuple[str, int]], float]:
        """One key's histogram as Prometheus has it: cumulative (bound, count) pairs ending
        with +Inf, and the sum in seconds."""
        row = self.buckets[key]
        pairs, below, folded = [], 0, 0
        for bits, label in LATENCY_BOUNDS:
            while folded <= bits:   # bucket b holds latencies below 2**b ns
                below += row[folded]
                folded += 1
            pairs.append((label, below))
        pairs.append(("+Inf", sum(row)))
        return pairs, self.nanoseconds[key] / 1e9


class AuthFailures(logging.Filter):
    """Counts authentication failures from the security layer's own log lines (SASL failures,
    failed TLS handshakes) without touching that layer; lets every record through."""

    MARKS = ("authentication failed", "TLS handshake with")

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        if any(message.startswith(mark) for mark in self.MARKS):
            self.count += 1
        return True


class EventTotals:
    """What the flight recorder saw, summed for Prometheus (fed with every batch of events)."""

    def __init__(self, protocols: tuple[str, ...] = ()) -> None:
        """`protocols`: the registered group types' names (each one's rebalance durations are
        shown from the start, at zero); a type not named is added at its first event."""
        self.rebalances: dict[tuple[str, str, str], int] = {}
        self.saved: dict[str, int] = {}
        self.moved: dict[str, int] = {}
        self.buckets = {p: [0] * len(BUCKETS) for p in protocols}
        self.duration_sum = dict.fromkeys(protocols, 0.0)
        self.duration_count = dict.fromkeys(protocols, 0)

    def add(self, events) -> None:
        for event in events:
            if event.kind == ev.GENERATION:
                key = (event.group_id, event.protocol, event.trigger.kind)
                self.rebalances[key] = self.rebalances.get(key, 0) + 1
                if event.moved:
                    self.moved[event.group_id] = self.moved.get(event.group_id, 0) + \
                        len(event.moved)
                seconds = event.duration_ms / 1000
                if event.protocol not in self.buckets:
                    self.buckets[event.protocol] = [0] * len(BUCKETS)
                    self.duration_sum[event.protocol] = 0.0
                    self.duration_count[event.protocol] = 0
                self.duration_sum[event.protocol] += seconds
                self.duration_count[event.protocol] += 1
                buckets = self.buckets[event.protocol]
                for i, bound in enumerate(BUCKETS):
                    if seconds <= bound:
                        buckets[i] += 1
            elif event.kind == ev.SAVED:
                self.saved[event.group_id] = self.saved.get(event.group_id, 0) + 1


def lag_rows(broker):
    """(group, topic, partition, committed, log end offset, lag) for every committed offset
    of every group, as `roster offsets describe` computes it."""
    rows = []
    offsets = broker.groups.shard.offsets
    for group_id in sorted(offsets.groups()):
        for (topic, partition), committed in sorted(offsets.of(group_id).items()):
            log = broker.topics.partition(topic, partition)
            if log is None:
                continue
            end = log.log_end_offset
            rows.append((group_id, topic, partition, committed.offset, end,
                         max(end - committed.offset, 0)))
    return rows


class BrokerCollector:
    def __init__(self, broker, stats: RequestStats, totals: EventTotals,
                 auth: AuthFailures, connections) -> None:
        self._broker = broker
        self._stats = stats
        self._totals = totals
        self._auth = auth
        self._connections = connections

    def collect(self):
        broker = self._broker
        groups = GaugeMetricFamily("roster_groups", "Groups by state and protocol",
                                   labels=["state", "protocol"])
        members = GaugeMetricFamily("roster_group_members", "Members of a group",
                                    labels=["group", "protocol"])
        epochs = GaugeMetricFamily("roster_group_epoch",
                                   "A group's classic generation or group epoch",
                                   labels=["group", "protocol"])
        tasks = GaugeMetricFamily("roster_group_tasks", "Tasks a group's members hold, by role",
                                  labels=["group", "protocol", "role"])
        by_state: dict[tuple[str, str], int] = {}
        offsets = broker.groups.shard.offsets
        for group in broker.groups.overview():
            if not group.protocol_type and not group.members and not offsets.of(group.group_id):
                continue   # a simple group that holds nothing (its offsets expired)
            key = (group.state, group.group_type)
            by_state[key] = by_state.get(key, 0) + 1
            members.add_metric([group.group_id, group.group_type], group.members)
            epochs.add_metric([group.group_id, group.group_type], group.generation)
            for role, n in group.work:
                tasks.add_metric([group.group_id, group.group_type, role], n)
        for (state, protocol), n in sorted(by_state.items()):
            groups.add_metric([state, protocol], n)
        yield groups
        yield members
        yield epochs
        yield tasks

        totals = self._totals
        rebalances = CounterMetricFamily("roster_rebalances", "Generations by trigger",
                                         labels=["group", "protocol", "reason"])
        for (group_id, protocol, reason), n in sorted(totals.rebalances.items()):
            rebalances.add_metric([group_id, protocol, reason], n)
        yield rebalances
        saved = CounterMetricFamily("roster_rebalances_saved",
                                    "Rebalances static membership avoided", labels=["group"])
        for group_id, n in sorted(totals.saved.items()):
            saved.add_metric([group_id], n)
        yield saved
        moved = CounterMetricFamily("roster_partitions_moved", "Partitions that changed owner",
                                    labels=["group"])
        for group_id, n in sorted(totals.moved.items()):
            moved.add_metric([group_id], n)
        yield moved
        duration = HistogramMetricFamily("roster_rebalance_duration_seconds",
                                         "From a rebalance's trigger to its generation's end",
                                         labels=["protocol"])
        for protocol, buckets in totals.buckets.items():
            pairs = [(str(b), n) for b, n in zip(BUCKETS, buckets)]
            pairs.append(("+Inf", totals.duration_count[protocol]))
            duration.add_metric([protocol], pairs, totals.duration_sum[protocol])
        yield duration

        lag = GaugeMetricFamily("roster_consumer_lag", "Log end offset minus committed offset",
                                labels=["group", "topic", "partition"])
        committed = GaugeMetricFamily("roster_committed_offset", "A group's committed offset",
                                      labels=["group", "topic", "partition"])
        end = GaugeMetricFamily("roster_log_end_offset", "A partition's log end offset",
                                labels=["group", "topic", "partition"])
        for group_id, topic, partition, offset, log_end, behind in lag_rows(broker):
            labels = [group_id, topic, str(partition)]
            lag.add_metric(labels, behind)
            committed.add_metric(labels, offset)
            end.add_metric(labels, log_end)
        yield lag
        yield committed
        yield end

        stats = self._stats
        requests = CounterMetricFamily("roster_requests", "Requests answered, by API",
                                       labels=["api"])
        latency = HistogramMetricFamily("roster_request_seconds",
                                        "From when roster starts serving a request to its "
                                        "answer (a long poll's wait included)",
                                        labels=["api"])
        for key in stats.keys():
            name = _api_name(key)
            requests.add_metric([name], stats.count(key))
            latency.add_metric([name], *stats.latency(key))
        yield requests
        yield latency
        yield CounterMetricFamily("roster_heartbeats", "Heartbeats (classic, consumer, streams)",
                                  value=sum(stats.count(k) for k in HEARTBEAT_KEYS))
        yield CounterMetricFamily("roster_offset_commits", "OffsetCommit requests",
                                  value=stats.count(COMMIT_KEY))
        yield CounterMetricFamily("roster_bytes_in", "Request bytes", value=stats.bytes_in)
        yield CounterMetricFamily("roster_bytes_out", "Answer bytes", value=stats.bytes_out)
        yield GaugeMetricFamily("roster_connections", "Open client connections",
                                value=self._connections())
        yield CounterMetricFamily("roster_authentication_failures",
                                  "SASL authentication failures and failed TLS handshakes",
                                  value=self._auth.count)
        yield GaugeMetricFamily("roster_up_seconds", "Seconds since the broker started",
                                value=time.monotonic() - _STARTED)


_STARTED = time.monotonic()


class Metrics:
    """Everything /metrics needs, wired into a running broker."""

    def __init__(self, broker, connections=lambda: 0) -> None:
        self.stats = RequestStats()
        # in the order they were registered, the built-in types last (roster/group_types.py)
        self.totals = EventTotals(tuple(reversed([t.name for t in broker.groups.types])))
        self.auth = AuthFailures()
        logging.getLogger("roster.security").addFilter(self.auth)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(broker, self.stats, self.totals, self.auth,
                                               connections))
        from roster.observability.share_metrics import ShareCollector
        self.registry.register(ShareCollector(broker))

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def close(self) -> None:
        logging.getLogger("roster.security").removeFilter(self.auth)
