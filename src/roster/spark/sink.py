"""The `roster` sink: df.write.format("roster") and df.writeStream.format("roster").

Input columns (by name): `value` (binary or string, required), `key` (binary or string),
`headers` (array<struct<key:string,value:binary>>), `topic` (string), `partition` (int). The
option `topic`, when set, wins over the column (as in Spark's Kafka sink). Without a partition,
records are placed by Kafka's default partitioner (murmur2 of the key; round robin without one).
Records are produced with acks=all. The writers are Arrow writers: Spark hands `write()` Arrow
record batches, which `roster.spark.producing` turns into Kafka record batches column by column.

Streaming writes are exactly once per micro-batch through markers written in the task's
transaction. Each write task, identified by (sink id, task partition id), keeps a marker: an
offset in the group `roster-sink-<sink id>` for partition <task partition id> of the marker
topic, whose value is batchId + 1 and whose metadata describes the batch. A task initializes its
transactional.id (`roster-sink-<sink id>-<task>`, the same for every attempt, so an earlier
attempt is fenced and its open transaction aborted), then reads its marker; if the marker says
this batch (or a later one) is done, it writes nothing. Otherwise it produces its records and
commits the marker (TxnOffsetCommit) in one transaction: a task that dies before the commit
leaves only aborted records, which read_committed readers never see.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import signal
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


def produce_batches(settings: Settings, batches, loop: asyncio.AbstractEventLoop,
                    transaction=None) -> int:
    """Produce the rows of every Arrow record batch (acks=all), `sink.chunkRecords` records per
    round, inside `transaction` when given; returns the number of records once all of them are
    acknowledged."""
    # imported here: only executors produce; the driver-side processes that plan and commit
    # the write (a fresh runner per query) do not need the record codecs
    from roster.spark.producing import ArrowProducer
    producer = ArrowProducer(settings, loop, transaction)
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


def transactional_id(ident: str, task: int) -> str:
    """A write task's transactional.id: the same for every attempt of the task."""
    return f"roster-sink-{ident}-{task}"


def fail_point(points: str | None, name: str) -> None:
    """Tests kill a task at a named point: the file `points` lists the points, one a line; a
    point is consumed when reached (so the retry gets through) and the process dies with
    SIGKILL, as an executor lost at that instant would."""
    if not points or not os.path.exists(points):
        return
    with open(points, "r+") as listed:
        lines = listed.read().split()
        if name not in lines:
            return
        lines.remove(name)
        listed.seek(0)
        listed.truncate()
        listed.write("\n".join(lines))
    os.kill(os.getpid(), signal.SIGKILL)


class RosterStreamWriter(DataSourceStreamArrowWriter):
    fail_points: str | None = None     # tests only: see fail_point

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
        """One transaction holds the task's records and its marker. Its transactional.id is
        the task's, the same for every attempt: initializing it fences an earlier attempt that
        may still run, and aborts what that attempt left open, before the marker is read."""
        from roster.client.transactional_producer import TransactionalProducer
        s = self.settings
        group, marker = f"roster-sink-{ident}", (s.marker_topic, task)
        broker = Broker(s.bootstrap, s.client_id, s.security,
                        request_timeout_ms=s.request_timeout_ms)
        txn = TransactionalProducer(s.bootstrap, transactional_id(ident, task),
                                    transaction_timeout_ms=s.sink_transaction_timeout_ms,
                                    client_id=s.client_id, security=s.security,
                                    request_timeout_ms=s.request_timeout_ms)
        try:
            loop.run_until_complete(broker.ensure_partition(*marker))
            loop.run_until_complete(txn.init_transactions())
            offset, metadata = loop.run_until_complete(broker.committed(group, [marker]))[marker]
            if marker_done(offset, metadata, batch_id, query_id):
                log.info("sink %s task %d: batch %d already written (%s); skipping", ident,
                         task, batch_id, metadata)
                return SinkCommitMessage(task, batch_id, 0, skipped=True)
            txn.begin_transaction()
            count = produce_batches(s, iterator, loop, txn)
            note = json.dumps({"batch": batch_id, "records": count, "query": query_id},
                              separators=(",", ":"))
            loop.run_until_complete(txn.send_offsets_to_transaction(
                {marker: (batch_id + 1, note)}, group))
            fail_point(self.fail_points, "before-commit")
            loop.run_until_complete(txn.commit_transaction())
            return SinkCommitMessage(task, batch_id, count)
        finally:
            broker.close()
            loop.run_until_complete(txn.close())

    def commit(self, messages, batchId: int) -> None:
        written = sum(m.records for m in messages if m is not None)
        skipped = sum(1 for m in messages if m is not None and m.skipped)
        log.info("roster sink: batch %d committed, %d records written, %d tasks skipped as "
                 "already written", batchId, written, skipped)

    def abort(self, messages, batchId: int) -> None:
        log.warning("roster sink: batch %d aborted; tasks that committed their marker will not "
                    "write again when it is replayed", batchId)
