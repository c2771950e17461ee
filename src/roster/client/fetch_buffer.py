"""Per-partition consumer positions and the records fetched but not yet returned.

A partition's **position** is the offset of the next record `poll()` will return, and it is
what `commit()` commits. It moves only when records are handed to the application (or when the
log holds no data record before the fetch offset: control batches, compacted gaps). Records a
Fetch brought beyond what one `poll()` may return wait here for the next one, so nothing is
skipped and nothing is committed before it was returned.

No I/O here: the Consumer fetches and calls `add`; `take` is what poll() returns.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from roster.client.records import ConsumerRecord

TopicPartition = tuple[str, int]


class PartitionState:
    """One owned partition. A new object on every seek, so a Fetch that was in flight across a
    seek or a revoke/re-assign can tell that its answer is stale (see FetchBuffer.add)."""

    __slots__ = ("position", "fetch_offset", "records")

    def __init__(self, offset: int) -> None:
        self.position = offset        # next record to return (what a commit may say)
        self.fetch_offset = offset    # where the next Fetch starts: past everything buffered
        self.records: deque[ConsumerRecord] = deque()


class FetchBuffer:
    def __init__(self) -> None:
        self._parts: dict[TopicPartition, PartitionState] = {}
        self._turn = 0                # where the next take() starts, so no partition starves

    def __contains__(self, tp: TopicPartition) -> bool:
        return tp in self._parts

    def state(self, tp: TopicPartition) -> PartitionState | None:
        return self._parts.get(tp)

    def seek(self, tp: TopicPartition, offset: int) -> PartitionState:
        """Start (or restart) `tp` at `offset`; whatever was buffered for it is dropped."""
        state = self._parts[tp] = PartitionState(offset)
        return state

    def drop(self, tp: TopicPartition) -> None:
        """The partition was revoked or lost: its buffered records are not ours to return."""
        self._parts.pop(tp, None)

    def buffered(self, tp: TopicPartition | None = None) -> int:
        if tp is not None:
            state = self._parts.get(tp)
            return len(state.records) if state else 0
        return sum(len(s.records) for s in self._parts.values())

    def add(self, tp: TopicPartition, state: PartitionState, fetched_from: int,
            records: Iterable[ConsumerRecord], next_offset: int) -> bool:
        """Keep the records of a Fetch that started at `fetched_from` and read the log up to
        `next_offset`. Returns False (and keeps nothing) when the answer is stale: the partition
        was revoked, re-assigned or sought while the Fetch was in flight."""
        if self._parts.get(tp) is not state or state.fetch_offset != fetched_from:
            return False
        for record in records:
            # a Fetch returns whole batches: the first may start before the fetch offset
            if record.offset >= state.fetch_offset:
                state.records.append(record)
                state.fetch_offset = record.offset + 1
        state.fetch_offset = max(state.fetch_offset, next_offset)
        if not state.records:
            # no data record lies between the position and the fetch offset
            state.position = state.fetch_offset
        return True

    def take(self, max_records: int, order: list[TopicPartition]) -> list[ConsumerRecord]:
        """Up to `max_records` buffered records of the partitions in `order`, each partition's
        in log order, advancing each position past exactly what is returned. The starting
        partition rotates from call to call."""
        out: list[ConsumerRecord] = []
        owned = [tp for tp in order if tp in self._parts]
        if not owned or max_records <= 0:
            return out
        start = self._turn % len(owned)
        self._turn += 1
        for tp in owned[start:] + owned[:start]:
            state = self._parts[tp]
            queue = state.records
            while queue and len(out) < max_records:
                record = queue.popleft()
                out.append(record)
                state.position = record.offset + 1
            if not queue:
                state.position = state.fetch_offset
            if len(out) >= max_records:
                break
        return out

    def positions(self) -> dict[TopicPartition, int]:
        """The position of every partition held: what commit() commits. The buffer holds the
        owned partitions that have started, and a revoked one until its on_revoked callback
        has run (so a commit there covers it, as Kafka's consumers allow)."""
        return {tp: state.position for tp, state in self._parts.items()}
