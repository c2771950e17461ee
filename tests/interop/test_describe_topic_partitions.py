"""DescribeTopicPartitions (75, KIP-966) against roster and the Apache Kafka peer: the same
pages for the same requests -- topics in name order, partitions up to the limit with a cursor
where the next page starts, an unknown topic UNKNOWN_TOPIC_OR_PARTITION, an empty ELR. (The Java
Admin's describeTopics uses it: kafka-topics --describe in test_kafka_tools.py.)"""
from __future__ import annotations

import threading
import time

import pytest

from roster.admin.client import AdminClient
from roster.protocol.api_keys import ApiKey
from tests.support import groups
from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_describe_topic_partitions_pages_in_name_order(target):
    prefix = unique_name("dtp")
    a, b, missing = f"{prefix}-a", f"{prefix}-b", f"{prefix}-c-missing"
    groups.create_topic(target.bootstrap, a, 3)
    groups.create_topic(target.bootstrap, b, 2)
    with AdminClient(target.bootstrap) as admin:
        topic = admin.entry(ApiKey.DESCRIBE_TOPIC_PARTITIONS, "topics")
        cursor_of = admin.entry(ApiKey.DESCRIBE_TOPIC_PARTITIONS, "cursor")

        def page(limit: int, cursor=None):
            answer = admin.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS,
                                topics=tuple(topic(name=n) for n in (missing, b, a)),
                                response_partition_limit=limit, cursor=cursor)
            shown = [(t.name, t.error_code.name, [p.partition_index for p in t.partitions])
                     for t in answer.topics]
            partitions = [p for t in answer.topics for p in t.partitions]
            assert all(p.eligible_leader_replicas == () and p.last_known_elr == ()
                       and list(p.replica_nodes) == list(p.isr_nodes) == [p.leader_id]
                       for p in partitions)
            nxt = answer.next_cursor
            return shown, None if nxt is None else (nxt.topic_name, nxt.partition_index)

        # Kafka's broker describes a topic once its metadata has it: a moment after creation
        deadline = time.monotonic() + 10
        while [e for _, e, _ in page(100)[0]] != ["none", "none", "unknown_topic_or_partition"]:
            assert time.monotonic() < deadline, f"{a} and {b} never described: {page(100)}"
            threading.Event().wait(0.05)
        first, cursor = page(4)
        assert first == [(a, "none", [0, 1, 2]), (b, "none", [0])]
        assert cursor == (b, 1)
        second, cursor = page(4, cursor_of(topic_name=b, partition_index=1))
        assert second == [(b, "none", [1]), (missing, "unknown_topic_or_partition", [])]
        assert cursor is None
        whole, cursor = page(100)
        assert whole == [(a, "none", [0, 1, 2]), (b, "none", [0, 1]),
                         (missing, "unknown_topic_or_partition", [])] and cursor is None
