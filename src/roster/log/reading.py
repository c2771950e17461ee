"""Reading a partition log back batch by batch, as the internal topics' loaders replay them."""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from roster import record_codec   # loads the codec on first use

if TYPE_CHECKING:
    from roster.record_codec import DefaultRecordBatch

CHUNK_BYTES = 1 << 20


def batches_from_start(log, chunk_bytes: int = CHUNK_BYTES) -> Iterator[DefaultRecordBatch]:
    """Every record batch of `log` (a PartitionLog) from its log start to its end as it is
    now, decoded, oldest first; reads `chunk_bytes` at a time."""
    offset, end = log.log_start_offset, log.log_end_offset
    while offset < end:
        chunk = log.read(offset, chunk_bytes)
        if not chunk:
            return
        batches = record_codec.MemoryRecords(chunk)
        while (batch := batches.next_batch()) is not None:
            offset = batch.base_offset + batch.last_offset_delta + 1
            yield batch
