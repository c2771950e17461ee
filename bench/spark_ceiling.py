"""A measuring instrument, not product: the cheapest streaming source and sink that Spark's
Python Data Source API allows, to measure the API's own ceiling on this machine.

Format `roster_ceiling`:

- as a source, it serves N records (option `records`) in 2 partitions, with exactly the row
  schema of roster's source (Kafka's columns: key, value, topic, partition, offset, timestamp,
  timestampType, headers) and 100-byte values like the benchmark's, as `pyarrow.RecordBatch`es
  of `batchRows` rows (default 10,000, about what one 1 MiB Fetch of those records holds in
  roster's `read()`). No network, no decoding: a worker builds a range's batches once and serves
  them from memory afterwards, so a second query over the same range only pays Spark.
- as a sink, it is an Arrow writer (like roster's sink) that counts the rows and drops them.

So `roster_ceiling → roster_ceiling` costs what every Python streaming pass-through pays: the
runner process per query, Python workers, Arrow → rows in the JVM after `read()`, rows → Arrow
before `write()`, and the micro-batch protocol. `bench/spark_pipeline.py --ceiling` runs it,
and the mixed pairs (roster source → noop, this source → roster sink) next to roster's own
pass-through.

Spark's workers must be able to import this module by name (the classes are pickled by
reference): the benchmark puts `bench/` on PYTHONPATH before it starts the session.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow

NAME = "roster_ceiling"
# Must stay equal to roster's source schema (the benchmark checks both, DDL and Arrow).
SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
          "timestamp timestamp, timestampType int, "
          "headers array<struct<key:string,value:binary>>")
HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
HEADERS = pa.list_(pa.field("element", HEADER))
TIMESTAMP = pa.timestamp("us", tz="UTC")
ARROW_SCHEMA = pa.schema([
    ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
    ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", TIMESTAMP),
    ("timestampType", pa.int32()), ("headers", HEADERS),
])
PARTITIONS = 2
VALUE = b"v" * 100
TOPIC = "synthetic"

# Batches already built in this worker process, by range: Spark reuses Python workers, so the
# second query over the same range serves them straight from memory.
_built: dict[tuple, list[pa.RecordBatch]] = {}


@dataclass(frozen=True)
class SyntheticPartition(InputPartition):
    partition: int
    start: int
    end: int
    batch_rows: int


@dataclass
class Count(WriterCommitMessage):
    rows: int


def split(records: int) -> dict[str, int]:
    """End offsets per partition: the records spread evenly, as the benchmark produces them."""
    return {str(p): records // PARTITIONS + (1 if p < records % PARTITIONS else 0)
            for p in range(PARTITIONS)}


def build(partition: int, start: int, end: int, batch_rows: int) -> list[pa.RecordBatch]:
    """Offsets [start, end) of one partition as Arrow batches in roster's source schema: a null
    key, the 100-byte value, one timestamp, no headers (what the benchmark's records carry)."""
    batches = []
    for first in range(start, end, batch_rows):
        count = min(batch_rows, end - first)
        headers = pa.ListArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), count + 1),
                                           pa.array([], HEADER), type=HEADERS)
        batches.append(pa.RecordBatch.from_arrays([
            pa.nulls(count, pa.binary()),
            pa.repeat(pa.scalar(VALUE, pa.binary()), count),
            pa.repeat(pa.scalar(TOPIC, pa.string()), count),
            pa.repeat(pa.scalar(partition, pa.int32()), count),
            pa.array(range(first, first + count), pa.int64()),
            pa.repeat(pa.scalar(1_700_000_000_000_000, TIMESTAMP), count),
            pa.repeat(pa.scalar(0, pa.int32()), count),
            headers,
        ], schema=ARROW_SCHEMA))
    return batches


class SyntheticDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema) -> DataSourceStreamReader:
        return SyntheticStreamReader(int(self.options.get("records", "200000")),
                                     int(self.options.get("batchrows", "10000")))

    def streamWriter(self, schema, overwrite: bool):
        return DiscardingWriter()


class SyntheticStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets {"partition": next offset}; everything is available from the start, so an
    AvailableNow query reads it all in one micro-batch, like the roster queries here."""

    def __init__(self, records: int, batch_rows: int) -> None:
        self.records = records
        self.batch_rows = batch_rows

    def initialOffset(self) -> dict:
        return {str(p): 0 for p in range(PARTITIONS)}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        return split(self.records)

    def prepareForTriggerAvailableNow(self) -> None:
        pass    # the end is fixed by the `records` option

    def partitions(self, start: dict, end: dict) -> list[SyntheticPartition]:
        return [SyntheticPartition(int(p), start.get(p, 0), end[p], self.batch_rows)
                for p in sorted(end) if end[p] > start.get(p, 0)]

    def read(self, partition: SyntheticPartition):
        key = (partition.partition, partition.start, partition.end, partition.batch_rows)
        batches = _built.get(key)
        if batches is None:
            batches = _built[key] = build(*key)
        return iter(batches)

    def commit(self, end: dict) -> None:
        pass


class DiscardingWriter(DataSourceStreamArrowWriter):
    """Takes every Arrow batch Spark sends and drops it; only the row count goes back."""

    def write(self, iterator) -> Count:
        return Count(sum(batch.num_rows for batch in iterator))

    def commit(self, messages, batchId: int) -> None:
        pass

    def abort(self, messages, batchId: int) -> None:
        pass
