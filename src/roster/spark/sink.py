"""The `roster` sink: df.write.format("roster") and df.writeStream.format("roster").

Input columns (by name): `value` (binary or string, required), `key` (binary or string),
`headers` (array<struct<key:string,value:binary>>), `topic` (string), `partition` (int). The
option `topic`, when set, wins over the column (as in Spark's Kafka sink). Without a partition,
records are placed by Kafka's default partitioner (murmur2 of the key; round robin without one).
Records are produced with acks=all. The writers are Arrow writers: Spark hands `write()` Arrow
record batches, which `roster.spark.producing` turns into Kafka record batches column by column.

Streaming writes are idempotent per micro-batch through markers. Each write task, identified by
(sink id, task partition id), keeps a marker: an offset committed with OffsetCommit into the
group `roster-sink-<sink id>` for partition <task partition id> of the marker topic, whose value
is batchId + 1 and whose metadata describes the batch. A task first reads its marker; if the
marker says this batch (or a later one) is done, it writes nothing. Otherwise it produces its
records, waits for every acknowledgement, then commits the marker. The window this leaves: a task
that dies after some of its records were acknowledged and before its marker commit is
acknowledged is written again, whole, when Spark retries it or replays the batch.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from dataclasses import dataclass

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
)

from roster.spark.options import OptionError, Settings
from roster.spark.wire import Broker

log = logging.getLogger("roster.spark")


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    task: int
    batch_id: int | None
    records: int
    skipped: bool = False


def check_schema(schema: StructType, settings: Settings) -> None:
    """Refuse an input the sink cannot write, before any task runs."""
    fields = {f.name: f.dataType for f in schema.fields}
    text = (BinaryType, StringType)
    if "value" not in fields:
        raise OptionError("the roster sink needs a column named value (binary or string)")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], text):
            raise OptionError(f"column {name} must be binary or string, not "
                              f"{fields[name].simpleString()}")
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise OptionError("column topic must be a string")
    if "partition" in fields and not isinstance(fields["partition"],
                                                (IntegerType, LongType, ShortType)):
        raise OptionError("column partition must be an integer")
    if "headers" in fields:
        headers = fields["headers"]
        ok = isinstance(headers, ArrayType) and isinstance(headers.elementType, StructType) and \
            [f.name.lower() for f in headers.elementType.fields] == ["key", "value"]
        if not ok:
            raise OptionError("column headers must be array<struct<key:string,value:binary>>")
    if settings.topic is None and "topic" not in fields:
        raise OptionError("say where to write: the option topic or a column named topic")


def produce_batches(settings: Settings, batches, loop: asyncio.AbstractEventLoop) -> int:
    """Produce the rows of every Arrow record batch (acks=all), `sink.chunkRecords` records per
    round; returns the number of records once all of them are acknowledged."""
    # imported here: only executors produce; the driver-side processes that plan and commit
    # the write (a fresh runner per query) do not need the record codecs
    from roster.spark.producing import ArrowProducer
    producer = ArrowProducer(settings, loop)
    try:
        return producer.produce(batches)
    finally:
        producer.close()


class RosterBatchWriter(DataSourceArrowWriter):
    """A batch write just produces (no markers: Spark does not replay batch jobs)."""

    def __init__(self, settings: Settings, schema: StructType) -> None:
        check_schema(schema, settings)
        self.settings = settings

    def write(self, iterator) -> SinkCommitMessage:
        from pyspark import TaskContext
        context = TaskContext.get()
        loop = asyncio.new_event_loop()
        try:
            count = produce_batches(self.settings, iterator, loop)
        finally:
            loop.close()
        return SinkCommitMessage(context.partitionId() if context else -1, None, count)


def sink_id(settings: Settings, query_id: str | None) -> str | None:
    """The marker group's id: the option sink.id, else the query id (kept in the checkpoint,
    so a restarted query finds its markers), else one derived from checkpointLocation."""
    if settings.sink_id:
        return settings.sink_id
    if query_id:
        return query_id
    if settings.checkpoint_location:
        return "cp-" + hashlib.sha256(settings.checkpoint_location.encode()).hexdigest()[:24]
    return None


def marker_done(offset: int, metadata: str, batch_id: int, query_id: str | None) -> bool:
    """Whether a task's marker says batch `batch_id` was already written."""
    if offset < batch_id + 1:
        return False
    try:
        written_by = json.loads(metadata).get("query") if metadata else None
    except (ValueError, AttributeError):
        written_by = None
    # a marker left by another query under the same sink.id does not count
    return written_by is None or query_id is None or written_by == query_id


class RosterStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, settings: Settings, schema: StructType) -> None:
        check_schema(schema, settings)
        self.settings = settings

    def write(self, iterator) -> SinkCommitMessage:
        from pyspark import TaskContext
        context = TaskContext.get()
        raw_batch = context.getLocalProperty("streaming.sql.batchId") if context else None
        query_id = context.getLocalProperty("sql.streaming.queryId") if context else None
        task = context.partitionId() if context else -1
        batch_id = int(raw_batch) if raw_batch is not None else None
        ident = sink_id(self.settings, query_id)
        loop = asyncio.new_event_loop()
        try:
            if batch_id is None or ident is None or task < 0:
                log.warning("no batch id or sink id: writing without a replay marker")
                count = produce_batches(self.settings, iterator, loop)
                return SinkCommitMessage(task, batch_id, count)
            return self._write_once(iterator, loop, ident, task, batch_id, query_id)
        finally:
            loop.close()

    def _write_once(self, iterator, loop, ident, task, batch_id, query_id) -> SinkCommitMessage:
        s = self.settings
        group, marker = f"roster-sink-{ident}", (s.marker_topic, task)
        broker = Broker(s.bootstrap, s.client_id, s.security)
        try:
            loop.run_until_complete(broker.ensure_partition(*marker))
            offset, metadata = loop.run_until_complete(broker.committed(group, [marker]))[marker]
            if marker_done(offset, metadata, batch_id, query_id):
                log.info("sink %s task %d: batch %d already written (%s); skipping", ident,
                         task, batch_id, metadata)
                return SinkCommitMessage(task, batch_id, 0, skipped=True)
            count = produce_batches(s, iterator, loop)
            note = json.dumps({"batch": batch_id, "records": count, "query": query_id},
                              separators=(",", ":"))
            loop.run_until_complete(broker.commit(group, {marker: (batch_id + 1, note)}))
            return SinkCommitMessage(task, batch_id, count)
        finally:
            broker.close()

    def commit(self, messages, batchId: int) -> None:
        written = sum(m.records for m in messages if m is not None)
        skipped = sum(1 for m in messages if m is not None and m.skipped)
        log.info("roster sink: batch %d committed, %d records written, %d tasks skipped as "
                 "already written", batchId, written, skipped)

    def abort(self, messages, batchId: int) -> None:
        log.warning("roster sink: batch %d aborted; tasks that committed their marker will not "
                    "write again when it is replayed", batchId)
