"""One group operation's `__consumer_offsets` records are all or nothing across a crash.

A commit of 100 partitions with 30 kB of metadata each is 3 MB of records, three times the size
at which the broker starts a new batch. A real broker process kills itself with SIGKILL right
after its Nth write to `__consumer_offsets` (broker/partitions/crash_points.py), for N = 1,
2, ... until a commit gets through without a kill: so every write boundary the broker has is hit
once. After each kill a restarted broker must show the group entirely before or entirely after
the commit, never some partitions at the new offset and some at the old one."""
from __future__ import annotations

import signal

import pytest

from roster.broker.groups.group_log import BATCH_TARGET_BYTES
from roster.broker.partitions.crash_points import KILL_AFTER_GROUP_WRITES
from tests.support.groups import committed_offsets_confluent, create_topic
from tests.support.process import BrokerProcess

pytestmark = pytest.mark.interop

GROUP, TOPIC, PARTITIONS, METADATA_BYTES = "wide-group", "wide", 100, 30_000


def commit_everywhere(bootstrap: str, offset: int) -> bool:
    """Commit `offset` for every partition in one OffsetCommit (kafka-python, whose commit
    takes a timeout); True when acknowledged."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP,
                             enable_auto_commit=False, reconnect_backoff_max_ms=200)
    try:
        consumer.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(
            offset, "m" * METADATA_BYTES, -1) for p in range(PARTITIONS)}, timeout_ms=15_000)
        return True
    except KafkaError:
        return False
    finally:
        consumer.close(autocommit=False)


def group_offsets(broker: BrokerProcess) -> set[int]:
    offsets = committed_offsets_confluent(broker.bootstrap, GROUP, TOPIC)
    assert len(offsets) == PARTITIONS, offsets
    return set(offsets.values())


def test_a_large_commit_is_all_or_nothing_at_every_write_boundary(tmp_path, monkeypatch):
    assert PARTITIONS * METADATA_BYTES > 2 * BATCH_TARGET_BYTES   # it would span batches
    # one operation's records are one batch: 3 MB of them needs message.max.bytes above it,
    # which __consumer_offsets follows (as on Kafka, whose coordinator refuses the commit else)
    broker = BrokerProcess(tmp_path / "data",
                           {"offset.metadata.max.bytes": str(METADATA_BYTES),
                            "message.max.bytes": str(8 << 20)}).start()
    try:
        create_topic(broker.bootstrap, TOPIC, PARTITIONS)
        assert commit_everywhere(broker.bootstrap, 1)
        broker.stop()
        state, kills = 1, 0
        for boundary in range(1, 10):
            monkeypatch.setenv(KILL_AFTER_GROUP_WRITES, str(boundary))
            broker.start()
            monkeypatch.delenv(KILL_AFTER_GROUP_WRITES)
            acknowledged = commit_everywhere(broker.bootstrap, state + 1)
            if broker.alive():   # the commit took fewer writes than `boundary`: all covered
                assert acknowledged
                assert group_offsets(broker) == {state + 1}
                break
            assert broker.proc.wait() == -signal.SIGKILL, broker.output[-20:]
            kills += 1
            broker.start()
            after = group_offsets(broker)
            assert after in ({state}, {state + 1}), \
                f"killed after write {boundary}: a torn commit left offsets {sorted(after)}"
            state = after.pop()
            broker.stop()
        else:
            pytest.fail("the commit never got through")
        assert kills >= 1, "no write boundary was hit"
    finally:
        broker.stop()
