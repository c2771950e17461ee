"""Offsets committed inside a transaction (KIP-98/KIP-447 TxnOffsetCommit), pending until the
transaction's marker: Kafka's pendingTransactionalOffsets.

They are kept per producer id, apart from the committed offsets (offset_store.py): a fetch does
not see them, and OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for a partition
that has one. The producer's commit marker makes them committed (their records are replayed
into the store, in the order they were written); an abort marker drops them. Both happen live
and while __consumer_offsets is replayed at start, so a restart lands in the same state.
"""
from __future__ import annotations

from roster.protocol.group_records import OffsetKey, Record

Partition = tuple[str, int]


class PendingTxnOffsets:
    def __init__(self) -> None:
        # producer id -> (group, topic, partition) -> the newest pending offset record
        self._by_producer: dict[int, dict[tuple[str, str, int], Record]] = {}
        # producer id -> the groups its open transaction committed offsets to, until its marker
        # (Kafka's openTransactionsByGroup: a superseded offset leaves the transaction open)
        self._groups: dict[int, set[str]] = {}

    def add(self, producer_id: int, records) -> None:
        """Offset records of this producer's open transaction, written (or replayed)."""
        pending = self._by_producer.setdefault(producer_id, {})
        groups = self._groups.setdefault(producer_id, set())
        for record in records:
            key = record.key
            if type(key) is OffsetKey:
                groups.add(key.group)
                pending.pop((key.group, key.topic, key.partition), None)  # newest last
                pending[(key.group, key.topic, key.partition)] = record

    def end(self, producer_id: int, commit: bool) -> list[Record]:
        """The producer's marker: the records to replay into the committed offsets (none on
        abort); either way nothing stays pending for it."""
        pending = self._by_producer.pop(producer_id, {})
        self._groups.pop(producer_id, None)
        return list(pending.values()) if commit else []

    def superseded(self, group_id: str, topic: str, partition: int) -> None:
        """A plain commit (or deletion) of this partition was written after the pending
        offsets: it wins whatever the transactions decide, as in Kafka, where the later
        record in __consumer_offsets wins."""
        key = (group_id, topic, partition)
        for pending in self._by_producer.values():
            pending.pop(key, None)

    def any_pending(self) -> bool:
        """True while some producer's transaction holds pending offsets."""
        return bool(self._by_producer)

    def unstable(self, group_id: str, partition: Partition) -> bool:
        key = (group_id, *partition)
        return any(key in pending for pending in self._by_producer.values())

    def partitions(self, group_id: str) -> set[Partition]:
        """The group's partitions with an offset pending in some open transaction."""
        return {(topic, partition) for pending in self._by_producer.values()
                for group, topic, partition in pending if group == group_id}

    def open_for(self, group_id: str) -> bool:
        """Whether an open transaction committed offsets to the group: Kafka then keeps the
        group through offset expiry."""
        return any(group_id in groups for groups in self._groups.values())

    def producers(self) -> list[int]:
        return list(self._by_producer)
