"""Share groups (KIP-932) on /metrics and the console: every share partition of the broker
(broker.share_state), read when Prometheus scrapes or a page is drawn, never on the fetch
path. Series exist for the share partitions the broker holds now: a deleted group's share state
goes, and its series with it (bounded by the partitions of live share groups).

Families (labels group, topic, partition):
  share_start_offset                        the share-partition start offset (SPSO)
  share_lag                                 records from the SPSO to the log end not yet
                                            delivered (DescribeShareGroupOffsets v1's lag)
  share_in_flight_records{state}            the in-flight window by state: available,
                                            acquired, acknowledged, archived (Kafka:
                                            InFlightMessageCount, their sum)
  share_records_acquired_total              deliveries (every record handed to a member)
  share_records_redelivered_total           of those, deliveries with delivery count > 1
  share_records_accepted_total, share_records_released_total, share_records_rejected_total,
  share_records_renewed_total               acknowledgements by type (Kafka:
                                            RecordAcknowledgementsPerSec{ackType}); released
                                            also counts records a closed share session gave back
  share_lock_expiries_total                 acquisition locks that ran out (Kafka:
                                            AcquisitionLockTimeoutPerSec)
  share_records_archived_total              archived at share.delivery.count.limit
  share_dead_letters_total                  written to the group's dead-letter topic (Kafka:
                                            DeadLetterQueueRecordCount)
"""
from __future__ import annotations


from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from roster.frozen import frozen
from roster.share.counts import ShareCounts
from roster.share.states import RecordState

STATES = (("available", RecordState.AVAILABLE), ("acquired", RecordState.ACQUIRED),
          ("acknowledged", RecordState.ACKNOWLEDGED), ("archived", RecordState.ARCHIVED))
# ShareCounts field -> (family name without roster_ and _total, help)
COUNTER_FAMILIES = (
    ("acquired", "share_records_acquired", "Records handed to share group members"),
    ("redelivered", "share_records_redelivered",
     "Records handed out again (delivery count above 1)"),
    ("accepted", "share_records_accepted", "Records acknowledged ACCEPT"),
    ("released", "share_records_released",
     "Records acknowledged RELEASE, or given back by a closed share session"),
    ("rejected", "share_records_rejected", "Records acknowledged REJECT"),
    ("renewed", "share_records_renewed", "Acquisition locks renewed (RENEW)"),
    ("lock_expired", "share_lock_expiries", "Acquisition locks that ran out"),
    ("archived", "share_records_archived",
     "Records archived at share.delivery.count.limit instead of redelivered"),
    ("dead_lettered", "share_dead_letters",
     "Records written to the group's dead-letter topic"),
)


@frozen
class SharePartitionRow:
    group_id: str
    topic: str
    partition: int
    start: int
    end: int               # the log end offset (the window's end if the log is gone)
    states: dict           # state name -> records in the window
    lag: int
    counts: ShareCounts

    @property
    def in_flight(self) -> int:
        return sum(self.states.values())


def share_rows(broker, group_id: str | None = None) -> list[SharePartitionRow]:
    """Every share partition (of `group_id` only, when given), by group, topic, partition."""
    state = getattr(broker, "share_state", None)
    if state is None:
        return []
    coordinator = state.coordinator
    rows = []
    for key, partition in list(coordinator.partitions.items()):
        gid, topic_id, index = key
        if group_id is not None and gid != group_id:
            continue
        topic = broker.topics.by_id(topic_id)
        name = topic.name if topic is not None else str(topic_id)
        log = topic.partitions[index] if topic is not None and \
            0 <= index < len(topic.partitions) else None
        end = log.log_end_offset if log is not None else partition.end
        counted = partition.state_counts()
        states = {label: counted[value] for label, value in STATES}
        lag = max(end - max(partition.start, 0) - partition.delivery_complete_count(), 0)
        rows.append(SharePartitionRow(gid, name, index, partition.start, end, states, lag,
                                      coordinator.counts.get(key) or ShareCounts()))
    rows.sort(key=lambda r: (r.group_id, r.topic, r.partition))
    return rows


def group_totals(rows: list[SharePartitionRow]) -> ShareCounts:
    total = ShareCounts()
    for row in rows:
        total.add(row.counts)
    return total


class ShareCollector:
    """prometheus-client's collector of the share families (registered by metrics.Metrics)."""

    def __init__(self, broker) -> None:
        self._broker = broker

    def collect(self):
        labels = ["group", "topic", "partition"]
        start = GaugeMetricFamily("roster_share_start_offset",
                                  "A share partition's start offset (SPSO)", labels=labels)
        lag = GaugeMetricFamily("roster_share_lag",
                                "Records from the share-partition start offset to the log end "
                                "not yet delivered", labels=labels)
        in_flight = GaugeMetricFamily("roster_share_in_flight_records",
                                      "A share partition's in-flight records by state",
                                      labels=[*labels, "state"])
        counters = [(field, CounterMetricFamily(f"roster_{name}", text, labels=labels))
                    for field, name, text in COUNTER_FAMILIES]
        for row in share_rows(self._broker):
            values = [row.group_id, row.topic, str(row.partition)]
            start.add_metric(values, row.start)
            lag.add_metric(values, row.lag)
            for label, _ in STATES:
                in_flight.add_metric([*values, label], row.states[label])
            for field, family in counters:
                family.add_metric(values, getattr(row.counts, field))
        yield start
        yield lag
        yield in_flight
        for _, family in counters:
            yield family
