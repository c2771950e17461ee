"""The only place the offsets' records are built (Kafka's newOffsetCommitRecord and its
tombstone); each group type builds its own group records (classic/records.py,
consumer/records.py)."""
from __future__ import annotations

from roster.protocol.group_records import OffsetKey, OffsetValue, Record


def offset_commit(group_id: str, topic: str, partition: int, offset: int, leader_epoch: int,
                  metadata: str, commit_timestamp: int, expire_timestamp: int = -1) -> Record:
    return Record(OffsetKey(group_id, topic, partition),
                  OffsetValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp))


def offset_tombstone(group_id: str, topic: str, partition: int) -> Record:
    return Record(OffsetKey(group_id, topic, partition), None)
