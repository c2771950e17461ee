"""Offsets committed inside a transaction, in the pure group shard: pending (invisible to a
fetch, UNSTABLE_OFFSET_COMMIT under require_stable) until the producer's marker; a commit
replays them as committed offsets (a group nobody holds becomes a simple group, as for any
commit), an abort drops them; producers do not see each other's."""
from __future__ import annotations

from roster.coordinator.config import GroupConfig
from roster.coordinator.messages import CommitRequest, OffsetToCommit
from roster.coordinator.results import Result
from roster.coordinator.shard import GroupShard
from roster.group_types import GROUP_TYPES
from roster.protocol.errors import ErrorCode as E

NOW = 1_000


def shard() -> GroupShard:
    return GroupShard(GroupConfig(), lambda prefix: f"{prefix}-member", GROUP_TYPES)


def commit(s: GroupShard, producer_id: int, offsets: dict[int, int], group="g"):
    request = CommitRequest(group_id=group, offsets=tuple(
        OffsetToCommit("t", p, o, -1, "", -1) for p, o in offsets.items()), api_version=3)
    answers, written = s.txn_commit_offsets(request, NOW, Result())
    assert {e for _, _, e in answers} == {E.none}
    s.transaction_written(producer_id, written)   # what the edge does once they are durable


def fetched(s: GroupShard, require_stable=False, group="g"):
    return {f.partition: f.error if f.error is not E.none else f.offset
            for f in s.fetch_offsets(group, [("t", 0), ("t", 1)], require_stable)}


def test_pending_until_the_commit_marker():
    s = shard()
    commit(s, 7, {0: 10, 1: 11})
    commit(s, 7, {0: 12})                     # the newest pending offset of a partition wins
    assert fetched(s) == {0: -1, 1: -1}
    assert fetched(s, require_stable=True) == {0: E.unstable_offset_commit,
                                               1: E.unstable_offset_commit}
    s.end_transaction(7, commit=True, now=NOW)
    assert fetched(s, require_stable=True) == {0: 12, 1: 11}
    assert s.offsets.pending.producers() == []


def test_an_abort_drops_them_and_producers_are_apart():
    s = shard()
    commit(s, 7, {0: 10})
    commit(s, 8, {1: 20}, group="other")
    s.end_transaction(7, commit=False, now=NOW)
    assert fetched(s, require_stable=True) == {0: -1, 1: -1}
    assert s.fetch_offsets("other", [("t", 1)], True)[0].error is E.unstable_offset_commit
    s.end_transaction(8, commit=True, now=NOW)
    assert s.fetch_offsets("other", [("t", 1)], True)[0].offset == 20
    s.end_transaction(99, commit=True, now=NOW)   # a marker with nothing pending: nothing


def test_a_plain_commit_written_after_a_pending_offset_wins():
    from roster.coordinator import records
    s = shard()
    commit(s, 7, {0: 10, 1: 11})
    s.replay(records.offset_commit("g", "t", 0, 50, -1, "", NOW))   # a plain commit, later
    assert fetched(s, require_stable=True) == {0: 50, 1: E.unstable_offset_commit}
    s.end_transaction(7, commit=True, now=NOW)
    assert fetched(s) == {0: 50, 1: 11}


def written(s: GroupShard, result: Result) -> list[tuple]:
    """Make a result's records durable (replayed as the edge does); their offset keys."""
    for record in result.records:
        s.replay(record, NOW)
    return [(r.key.topic, r.key.partition) for r in result.records if hasattr(r.key, "topic")]


def plain_commit(s: GroupShard, partition: int, offset: int, at: int = NOW):
    from roster.coordinator import records
    s.replay(records.offset_commit("g", "t", partition, offset, -1, "", at), at)


def test_delete_groups_drops_the_pending_offsets_too():
    """Kafka's deleteAllOffsets: a tombstone for every committed offset and for every partition
    only pending, which drops the pending offsets: a later commit marker brings nothing back."""
    s = shard()
    plain_commit(s, 0, 5)                      # an Empty simple group with one offset
    commit(s, 7, {0: 10, 1: 11})
    deleted = s.delete_groups(["g"], NOW, "token")
    assert written(s, deleted) == [("t", 0), ("t", 1)]
    assert s.offsets.pending.partitions("g") == set()
    s.end_transaction(7, commit=True, now=NOW)
    assert fetched(s) == {0: -1, 1: -1}


def test_offset_delete_drops_a_pending_offset():
    s = shard()
    plain_commit(s, 0, 5)
    commit(s, 7, {1: 11})
    deleted = s.delete_offsets("g", [("t", 1)], NOW, "token")
    assert written(s, deleted) == [("t", 1)]
    s.end_transaction(7, commit=True, now=NOW)
    assert fetched(s) == {0: 5, 1: -1}


def test_expiry_skips_pending_partitions_and_keeps_a_group_with_an_open_transaction():
    """Kafka's cleanupExpiredOffsets: an offset with a transactional offset pending for its
    partition does not expire yet, and the group is not removed while a transaction that
    committed offsets to it is open."""
    s = shard()
    plain_commit(s, 0, 5)
    plain_commit(s, 1, 6)
    commit(s, 7, {1: 11})
    later = NOW + s.config.offsets_retention_ms
    assert written(s, s.expire_offsets(later)) == [("t", 0)]
    assert fetched(s) == {0: -1, 1: 6}
    s.offsets.pending.superseded("g", "t", 1)     # even with its offset gone, the
    plain_commit(s, 1, 6)                         # transaction keeps the group
    assert written(s, s.expire_offsets(later)) == [("t", 1)] and s.type_named("classic").has_group("g")
    s.end_transaction(7, commit=False, now=later)
    written(s, s.expire_offsets(later))
    assert not s.type_named("classic").has_group("g")           # no offset, no open transaction: it goes
