"""DeleteRecords through the admin clients: the log start moves forward (never back), readers
start there, the move survives kill -9, and compacted topics refuse it."""
from __future__ import annotations

import pytest

from tests.interop.test_bad_input import _create
from tests.support import clients
from tests.support.wire import Wire

pytestmark = pytest.mark.interop


def _earliest(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec
    admin = AdminClient({"bootstrap.servers": bootstrap})
    answers = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.earliest()
                                  for p in range(partitions)})
    return {tp.partition: future.result(30).offset for tp, future in answers.items()}


def test_delete_records_moves_the_log_start_durably(broker):
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpPartition
    from kafka.errors import OffsetOutOfRangeError
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "purge", 2).error_code == 0
    clients.produce_confluent(broker.bootstrap, "purge", clients.sample_records(20, 2, "p"),
                              "none")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    answers = admin.delete_records([TopicPartition("purge", 0, 4), TopicPartition("purge", 1, -1)])
    assert {tp.partition: f.result(30).low_watermark for tp, f in answers.items()} == \
        {0: 4, 1: 10}
    left = clients.consume_kafka_python(broker.bootstrap, "purge", 2, 6)
    assert sorted((r.partition, r.offset) for r in left) == [(0, o) for o in range(4, 10)]

    broker.kill9()
    broker.start()
    assert _earliest(broker.bootstrap, "purge", 2) == {0: 4, 1: 10}
    python_admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        # lower than the log start: nothing moves back, and the answer says where it is
        kept = python_admin.delete_records({KpPartition("purge", 0): 2})
        assert [r["low_watermark"] for r in kept.values()] == [4], kept
        assert _earliest(broker.bootstrap, "purge", 2) == {0: 4, 1: 10}
        with pytest.raises(OffsetOutOfRangeError):
            python_admin.delete_records({KpPartition("purge", 0): 11})
    finally:
        python_admin.close()
    with Wire(broker.bootstrap) as wire:   # the first group lookup makes __consumer_offsets
        assert wire.call(10, 3, key="purgers", key_type=0).error_code == 0
    compacted = TopicPartition("__consumer_offsets", 0, 0)
    with pytest.raises(KafkaException, match="POLICY_VIOLATION"):
        admin.delete_records([compacted])[compacted].result(30)
