"""Fetched Kafka record batches → Arrow record batches in the source's schema.

`read()` hands Spark `pyarrow.RecordBatch`es rather than one Python tuple per record: Spark then
takes the columns as they are, instead of converting every value of every row through its
per-type converters (the tuple path cost more than fetching and decoding together). Records are
decoded by aiokafka's compiled record reader; the columns are built from plain lists in one call
each, and the constant ones (topic, partition, the batch's timestamp type) without a per-record
Python value.

The Arrow schema must equal what Spark derives from the source's DDL schema (pyspark checks it
with `Schema.equals` before it accepts the first batch), so it is spelled out here and compared
with Spark's own conversion in the tests.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from roster.client.records import AbortedTransactions
from roster.record_codec import MemoryRecords

HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
HEADERS = pa.list_(pa.field("element", HEADER))
TIMESTAMP = pa.timestamp("us", tz="UTC")
ARROW_SCHEMA = pa.schema([
    ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
    ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", TIMESTAMP),
    ("timestampType", pa.int32()), ("headers", HEADERS),
])
_NO_HEADERS = pa.array([], HEADER)
NO_HEADERS = ()   # shared by every record without headers


class FetchedRecords:
    """The data records of one Fetch response that fall in [position, end), column by column.

    `position` is where the next fetch starts: past the last record taken, and past whole
    batches (compacted gaps, control batches) that held nothing more to take. `reached_end`
    says a record at or beyond `end` was seen, so the range is complete."""

    def __init__(self, data: bytes, position: int, end: int, aborted=()) -> None:
        self.keys: list = []
        self.values: list = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.headers: list = []
        self.runs: list[tuple[int, int]] = []     # (timestamp type, records) per record batch
        self.has_headers = False
        self.reached_end = False
        self.position = position
        self._decode(data, end, AbortedTransactions(aborted))

    def __len__(self) -> int:
        return len(self.offsets)

    def _decode(self, data: bytes, end: int, skipping: AbortedTransactions) -> None:
        keys, values, offsets = self.keys, self.values, self.offsets
        timestamps, headers = self.timestamps, self.headers
        position = self.position
        batches = MemoryRecords(data)
        while (batch := batches.next_batch()) is not None:
            following = getattr(batch, "next_offset", None)
            # (read_committed) batches of aborted transactions, and control batches; drops()
            # sees every batch, the abort markers included, which end an aborted transaction
            if skipping.drops(batch) or getattr(batch, "is_control_batch", False):
                if following is not None:
                    position = max(position, following)
                continue
            taken = len(offsets)
            for record in batch:
                offset = record.offset
                if offset < position:
                    continue
                if offset >= end:
                    self.reached_end = True
                    break
                keys.append(record.key)
                values.append(record.value)
                offsets.append(offset)
                timestamps.append(record.timestamp)
                record_headers = record.headers
                if record_headers:
                    self.has_headers = True
                    headers.append(record_headers)
                else:
                    # not the record's own empty list: that one would live until to_arrow,
                    # and thousands of surviving containers per fetch make the garbage
                    # collector's generation passes the largest cost of decoding
                    headers.append(NO_HEADERS)
                position = offset + 1
            if len(offsets) > taken:
                kind = getattr(batch, "timestamp_type", 0) or 0    # None in a v0 batch
                self.runs.append((kind, len(offsets) - taken))
            if self.reached_end:
                break
            if following is not None:
                position = max(position, following)
        self.position = position

    def to_arrow(self, topic: str, partition: int) -> pa.RecordBatch:
        count = len(self.offsets)
        # milliseconds → microseconds; a v0 record has no timestamp: -1, as Kafka reports it
        millis = pc.fill_null(pa.array(self.timestamps, pa.int64()), -1)
        stamps = pc.multiply(millis, 1000).cast(TIMESTAMP)
        kinds = pa.concat_arrays([pa.repeat(pa.scalar(kind, pa.int32()), n)
                                  for kind, n in self.runs])
        if self.has_headers:
            headers = pa.array(self.headers, HEADERS)
        else:   # every list empty: n+1 zero offsets over no header at all
            headers = pa.ListArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), count + 1),
                                               _NO_HEADERS, type=HEADERS)
        return pa.RecordBatch.from_arrays([
            pa.array(self.keys, pa.binary()), pa.array(self.values, pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), count),
            pa.repeat(pa.scalar(partition, pa.int32()), count),
            pa.array(self.offsets, pa.int64()), stamps, kinds, headers,
        ], schema=ARROW_SCHEMA)
