"""How `__consumer_offsets` appends are cut into batches: one operation's records always share
one batch (a batch is one write, and recovery keeps a batch whole or cuts it), so a crash
between two writes never leaves part of an operation. The crash itself, with a real broker
killed at every write boundary: tests/interop/test_group_write_atomicity.py."""
from __future__ import annotations

import pytest

from roster.broker.groups.group_log import BATCH_TARGET_BYTES, encode_operation, operation_batches
from roster.coordinator.records import offset_commit
from roster.log.api import RecordTooLarge
from roster.protocol.group_records import decode
from roster.record_codec import MemoryRecords


def commit_operation(group: str, partitions: int, metadata_bytes: int, offset: int = 1):
    return [offset_commit(group, "t", p, offset, -1, "m" * metadata_bytes, 1_700_000_000_000)
            for p in range(partitions)]


def decoded(batch: bytes) -> list:
    records = MemoryRecords(batch)
    found = []
    while (one := records.next_batch()) is not None:
        found.extend(decode(entry.key, entry.value) for entry in one)
    return found


def test_an_operation_larger_than_a_batch_target_stays_in_one_batch():
    # 100 commits of 30 kB each: 3 MB, three batch targets' worth, and still one batch
    big = commit_operation("big", 100, 30_000)
    small_before, small_after = commit_operation("a", 3, 10), commit_operation("b", 3, 10)
    batches = list(operation_batches(encoded([small_before, big, small_after]), 0))
    assert [included for _, included, _ in batches] == [[0], [1], [2]]
    assert [decoded(batch) for batch, _, _ in batches] == [small_before, big, small_after]


def test_small_operations_share_a_batch_and_never_straddle_two():
    operations = [commit_operation(f"g{i}", 14, 30_000) for i in range(8)]  # 420 kB each
    batches = list(operation_batches(encoded(operations), 0))
    assert len(batches) > 1
    seen = []
    for batch, included, count in batches:
        assert count == sum(len(operations[i]) for i in included)
        assert decoded(batch) == [r for i in included for r in operations[i]]
        assert len(batch) <= BATCH_TARGET_BYTES + 1024 or len(included) == 1
        seen += included
    assert seen == list(range(8))


def encoded(operations):
    return [encode_operation(records) for records in operations]


def test_an_operation_over_the_batch_limit_is_refused_as_it_is_decided():
    # refused by encode_operation, which GroupLog.write calls as the operation is decided,
    # before any later operation can build on it
    limit = 100_000   # the topic's max.message.bytes in the broker; small to keep the test small
    with pytest.raises(RecordTooLarge):
        encode_operation(commit_operation("huge", 5, limit // 4), max_bytes=limit)
    assert encode_operation(commit_operation("fine", 2, 10), max_bytes=limit)


def test_an_operation_that_cannot_be_encoded_is_refused_as_it_is_decided():
    # offset metadata longer than its int16 length (offset.metadata.max.bytes set above 32767)
    with pytest.raises(RecordTooLarge):
        encode_operation(commit_operation("long", 1, 40_000))
