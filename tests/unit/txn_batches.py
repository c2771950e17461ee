"""Transactional record batches and transaction markers for log tests, and a read_committed
reader that filters them as the Java consumer does (Fetcher's CompletedFetch)."""
from __future__ import annotations

import heapq

from kafka.record.default_records import DefaultRecordBatchBuilder

from roster.log.batch import iter_batches
from roster.log.control import marker_batch
from roster.log.producer_state import ABORT, read_marker


def txn_batch(producer_id: int, count: int = 1, *, epoch: int = 0, sequence: int = 0,
              transactional: bool = True, timestamp: int = 1_000,
              keys: list[bytes] | None = None, values: list[bytes] | None = None) -> bytes:
    """A producer's batch of `count` records (transactional unless told otherwise), keyed
    `keys`, else k0, k1, ..."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0,
                                        is_transactional=transactional, producer_id=producer_id,
                                        producer_epoch=epoch, base_sequence=sequence,
                                        batch_size=1 << 30)
    for i in range(count):
        builder.append(i, timestamp=timestamp + i, key=keys[i] if keys else f"k{i}".encode(),
                       value=values[i] if values else f"p{producer_id}-{i}".encode(),
                       headers=[])
    return bytes(builder.build())


def marker(producer_id: int, commit: bool, *, epoch: int = 0, coordinator_epoch: int = 0,
           timestamp: int = 2_000) -> bytes:
    """A transaction marker, as the coordinator writes it (roster.log.control)."""
    return marker_batch(producer_id, epoch, commit, coordinator_epoch, timestamp)


def committed_offsets(data: bytes, aborted: list[tuple[int, int]], start: int = 0) -> list[int]:
    """Offsets (from `start`, the fetch offset) of the data records a read_committed consumer
    keeps from fetched `data`, given the answer's aborted transactions [(producer id, first
    offset)]."""
    return [record.offset for record in committed_records(data, aborted, start)]


def committed_records(data: bytes, aborted: list[tuple[int, int]], start: int = 0) -> list:
    """The records (roster.record_codec's) committed_offsets keeps."""
    from roster.record_codec import DefaultRecordBatch

    queue = sorted((first, pid) for pid, first in aborted)
    heapq.heapify(queue)
    aborting: set[int] = set()
    kept = []
    for position, header in iter_batches(data):
        while queue and queue[0][0] <= header.last_offset:
            aborting.add(heapq.heappop(queue)[1])
        if header.is_control:
            if read_marker(data, position).type == ABORT:
                aborting.discard(header.producer_id)
            continue
        if header.is_transactional and header.producer_id in aborting:
            continue
        batch = data[position:position + header.size]
        kept.extend(r for r in DefaultRecordBatch(batch) if r.offset >= start)
    return kept
