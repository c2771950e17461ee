"""Committed offsets, kept by group id apart from the groups themselves (Kafka's
OffsetMetadataManager): a group of any type, or none at all, may hold offsets, and a group that
changes type (coordinator/consumer/migration.py) keeps them without copying.

The store decides nothing about members or generations: the shard (shard.py) asks the group's
type whether a commit, fetch or deletion may go ahead (group_type.py), and then the store builds
the records. Offsets change only through replay(), once their records are written, the path a
restart takes too.

Transactions (KIP-98, TxnOffsetCommit): `pending` holds offsets committed inside a transaction,
by producer id, until their marker (txn_offsets.py); fetch with require_stable answers
UNSTABLE_OFFSET_COMMIT for a partition with one pending.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from roster.coordinator import records
from roster.coordinator.messages import CommitRequest, FetchedOffset
from roster.coordinator.txn_offsets import PendingTxnOffsets
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import OffsetCommit, Record

Partition = tuple[str, int]
Answers = tuple[tuple[str, int, ErrorCode], ...]


@dataclass(slots=True)
class CommittedOffset:
    # the order of OffsetValue's fields and of group_records.OffsetFields (the shard builds one
    # from those at replay)
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


@frozen
class OffsetExpiry:
    """How a group's offsets age (Kafka's OffsetExpirationCondition): counted from `since_ms`
    (when an Empty classic group became Empty), or from each offset's commit when None; the
    offsets of `kept` topics (those its members read) never expire."""

    since_ms: int | None = None
    kept: frozenset[str] | set[str] = frozenset()


_NONE: Mapping[Partition, CommittedOffset] = {}


class OffsetStore:
    def __init__(self, metadata_max_bytes: int) -> None:
        self.metadata_max_bytes = metadata_max_bytes
        self.committed: dict[str, dict[Partition, CommittedOffset]] = {}
        self.pending = PendingTxnOffsets()
        # commits whose records are being written, by group: their offsets are not replayed
        # yet, but the group has them (Kafka's hasOffsets counts pending commits), so neither
        # an expiry pass nor OffsetDelete may take it for a group with none and delete it
        self._writing: Counter[str] = Counter()

    # -- reading ----------------------------------------------------------------------------

    def of(self, group_id: str) -> Mapping[Partition, CommittedOffset]:
        """The group's committed offsets (empty when it has none)."""
        return self.committed.get(group_id, _NONE)

    def committing(self, group_id: str) -> bool:
        """True while a commit to the group is being written."""
        return self._writing[group_id] > 0

    def groups(self) -> Iterable[str]:
        return self.committed.keys()

    def fetch(self, group_id: str, wanted: list[Partition] | None,
              visible: bool = True, require_stable: bool = False) -> list[FetchedOffset]:
        """Committed offsets; `wanted` None means every partition the group has an offset for.
        `visible` False: the group is being deleted, and shows none. `require_stable`: a
        partition with a transactional offset pending answers UNSTABLE_OFFSET_COMMIT."""
        offsets = self.of(group_id) if visible else _NONE
        if wanted is None:
            wanted = sorted(offsets)
        answers = []
        for topic, partition in wanted:
            committed = offsets.get((topic, partition))
            if require_stable and self.pending.unstable(group_id, (topic, partition)):
                answers.append(FetchedOffset(topic, partition,
                                             error=ErrorCode.unstable_offset_commit))
            elif committed is None:
                answers.append(FetchedOffset(topic, partition))
            else:
                answers.append(FetchedOffset(topic, partition, committed.offset,
                                             committed.leader_epoch, committed.metadata))
        return answers

    # -- building records (nothing changes until they are replayed) ----------------------------

    def commit(self, request: CommitRequest, now: int) -> tuple[Answers, tuple[Record, ...]]:
        """One record per partition (a too large metadata is refused for its partition alone);
        the answers to give once they are written."""
        expire = now + request.retention_ms if request.retention_ms >= 0 else -1
        answers = []
        written = []
        for o in request.offsets:
            metadata = o.metadata or ""
            if len(metadata) > self.metadata_max_bytes:
                answers.append((o.topic, o.partition, ErrorCode.offset_metadata_too_large))
                continue
            answers.append((o.topic, o.partition, ErrorCode.none))
            written.append(records.offset_commit(
                request.group_id, o.topic, o.partition, o.offset, o.leader_epoch, metadata,
                now if o.commit_timestamp == -1 else o.commit_timestamp, expire))
        return tuple(answers), tuple(written)

    def commit_writing(self, group_id: str) -> None:
        """A plain commit's records are being written: until commit_written the group counts
        as having offsets. (A transactional commit is kept by its pending offsets instead.)"""
        self._writing[group_id] += 1

    def commit_written(self, group_id: str) -> None:
        """A commit's write is over (its records replayed, or dropped if it failed): it no
        longer keeps the group from going."""
        self._writing[group_id] -= 1
        if not self._writing[group_id]:
            del self._writing[group_id]

    def delete(self, group_id: str, partitions: list[Partition],
               subscribed: set[str] | frozenset[str] | None
               ) -> tuple[Answers, list[Partition]]:
        """OffsetDelete's answers and the offsets it removes (in request order, each once):
        a topic the group's members subscribe to keeps its offsets (GROUP_SUBSCRIBED_TO_TOPIC;
        `subscribed` None: any topic may be read, all are kept)."""
        offsets = self.of(group_id)
        answers = []
        removed: dict[Partition, None] = {}
        for topic, partition in partitions:
            if subscribed is None or topic in subscribed:
                answers.append((topic, partition, ErrorCode.group_subscribed_to_topic))
                continue
            answers.append((topic, partition, ErrorCode.none))
            # a pending transactional offset gets a tombstone too: it drops it (as in Kafka)
            if (topic, partition) in offsets or self.pending.unstable(group_id, (topic, partition)):
                removed[(topic, partition)] = None
        return tuple(answers), list(removed)

    def expired(self, group_id: str, expiry: OffsetExpiry | None, retention_ms: int,
                now: int) -> list[Partition]:
        """The offsets past retention (offsets.retention.minutes), in order. An offset committed
        with an explicit expire timestamp (OffsetCommit v2-4) expires then, whatever the group;
        the others as the group's `expiry` says (None: they do not expire). A partition with a
        transactional offset pending does not expire yet (Kafka's cleanupExpiredOffsets)."""
        out = []
        for key, offset in sorted(self.of(group_id).items()):
            if self.pending.unstable(group_id, key):
                continue
            if offset.expire_timestamp >= 0:
                if offset.expire_timestamp <= now:
                    out.append(key)
                continue
            if expiry is None or key[0] in expiry.kept:
                continue
            base = offset.commit_timestamp if expiry.since_ms is None else expiry.since_ms
            if base + retention_ms <= now:
                out.append(key)
        return out

    def everything(self, group_id: str) -> list[Partition]:
        """Every partition DeleteGroups removes: the committed offsets, then those only pending
        in an open transaction, whose tombstones drop them (Kafka's deleteAllOffsets)."""
        committed = sorted(self.of(group_id))
        return committed + sorted(self.pending.partitions(group_id) - set(committed))

    @staticmethod
    def tombstones(group_id: str, partitions: Iterable[Partition]) -> list[Record]:
        return [records.offset_tombstone(group_id, topic, partition)
                for topic, partition in partitions]

    # -- the only way offsets change -------------------------------------------------------------

    def replay_all(self, commits: Iterable[OffsetCommit]) -> None:
        """replay() for each plain offset-commit record (group_records.decode_offset_commit),
        in order: the restart's loop, kept free of a call per record."""
        committed = self.committed
        for group_id, topic, partition, fields in commits:
            group = committed.get(group_id)
            if fields is not None:
                if group is None:
                    group = committed[group_id] = {}
                group[(topic, partition)] = CommittedOffset(*fields)
            elif group is not None:   # a tombstone
                group.pop((topic, partition), None)
                if not group:
                    del committed[group_id]

    def replay(self, group_id: str, topic: str, partition: int,
               committed: CommittedOffset | None) -> None:
        """One offset-commit record: the partition's offset, or none (a tombstone)."""
        group = self.committed.get(group_id)
        if committed is None:
            if group is not None:
                group.pop((topic, partition), None)
                if not group:
                    del self.committed[group_id]
            return
        if group is None:
            group = self.committed[group_id] = {}
        group[(topic, partition)] = committed
