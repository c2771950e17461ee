"""Executors: fetch exactly [start, end) of one partition, as Arrow record batches.

This is what `read(partition)` runs, on a pickled copy of the planner's reader: everything it
needs travels in the `RangePartition`. It opens its own connection and never joins the group.

One Arrow batch is yielded per Fetch response. The next Fetch is sent before that batch is
handed to Spark, so the broker reads and sends the next chunk of the log while this worker
builds the columns and Spark takes them in.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from roster.client.connection import ConnectionClosed
from roster.client.errors import AuthorizationError
from roster.protocol.errors import ErrorCode
from roster.security.client import ClientSecurity
from roster.spark.options import EARLIEST
from roster.spark.wire import RETRIABLE, Broker, BrokerError

log = logging.getLogger("roster.spark")
MAX_FAILURES = 5
# a lost connection or a moved leader: about half a minute of tries (a cluster fences a dead
# broker after broker.session.timeout.ms, 9 s by default, before its partitions move)
MAX_RETRIABLE_FAILURES = 35


class DataLossError(RuntimeError):
    """Records the query should read are gone (retention, truncation); with the option
    failOnDataLoss=false the source skips ahead instead."""


@dataclass(frozen=True)
class RangePartition(InputPartition):
    """One executor task: fetch [start, end) of topic-partition."""

    bootstrap: str
    client_id: str
    topic: str
    partition: int
    start: int
    end: int
    max_bytes: int
    wait_ms: int
    fail_on_data_loss: bool
    security: ClientSecurity | None = None
    isolation_level: int = 1
    request_timeout_ms: int = 30_000


def lost_message(tp, offset: int, log_start: int) -> str:
    return (f"{tp[0]}-{tp[1]}: offset {offset} is no longer in the log, which starts at "
            f"{log_start} (retention removed {log_start - offset} records the query has not "
            f"read). Set failOnDataLoss=false to skip them.")


def read_range(p: RangePartition):
    """Yield the records of [p.start, p.end) as pyarrow.RecordBatches in the source's schema,
    then stop (even if the last batch fetched goes further)."""
    # imported here: the driver-side processes import this module for RangePartition and
    # need neither pyarrow.compute nor aiokafka (each Spark query starts a new runner process)
    from roster.spark.arrow_records import FetchedRecords
    loop = asyncio.new_event_loop()
    broker = Broker(p.bootstrap, p.client_id, p.security, p.isolation_level,
                    p.request_timeout_ms)
    ahead: asyncio.Task | None = None         # the next Fetch, sent before yielding

    def send(position: int) -> asyncio.Task:
        task = loop.create_task(broker.fetch(p.topic, p.partition, position, p.max_bytes,
                                             p.wait_ms))
        # Let the task write its request now; its answer is awaited after Spark took the
        # batch in hand. One loop pass sends it once the connection is open.
        loop.run_until_complete(asyncio.sleep(0))
        return task

    position, failures, empty = p.start, 0, 0
    try:
        while position < p.end:
            task, ahead = (ahead if ahead is not None else send(position)), None
            try:
                got = loop.run_until_complete(task)
            except (ConnectionClosed, BrokerError, OSError) as exc:
                failures += 1
                if failures > MAX_RETRIABLE_FAILURES:
                    raise
                log.info("fetch %s-%d at %d failed (%s); retrying", p.topic, p.partition,
                         position, exc)
                time.sleep(min(0.2 * failures, 1.0))
                continue
            if got.error is ErrorCode.offset_out_of_range:
                position = _past_lost_records(loop, broker, p, position, got.log_start_offset)
                continue
            if got.error is ErrorCode.topic_authorization_failed:
                raise AuthorizationError(got.error, p.topic, "READ")
            if got.error is not ErrorCode.none:
                failures += 1
                # a leader moving (a broker of a cluster died) takes until it is fenced
                limit = MAX_RETRIABLE_FAILURES if got.error in RETRIABLE else MAX_FAILURES
                if failures > limit:
                    raise BrokerError(f"fetch {p.topic}-{p.partition}: {got.error.name}",
                                      got.error)
                time.sleep(min(0.2 * failures, 1.0))
                continue
            failures = 0
            fetched = FetchedRecords(got.records, position, p.end, got.aborted)
            if fetched.position == position:
                empty += 1
                if got.high_watermark <= position or empty > 20:
                    message = (f"{p.topic}-{p.partition}: offsets {position}..{p.end} were "
                               f"planned but the log ends at {got.high_watermark}")
                    if p.fail_on_data_loss:
                        raise DataLossError(message)
                    log.warning("%s; skipping them", message)
                    return
            else:
                empty = 0
            position = fetched.position
            if not fetched.reached_end and position < p.end:
                ahead = send(position)
            if len(fetched):
                yield fetched.to_arrow(p.topic, p.partition)
            if fetched.reached_end:
                return
    finally:
        if ahead is not None:       # Spark stopped reading early: drop the Fetch in flight
            ahead.cancel()
            try:
                loop.run_until_complete(ahead)
            except (asyncio.CancelledError, Exception):   # cancelled or failed: unused anyway
                pass
        broker.close()
        loop.close()


def _past_lost_records(loop, broker: Broker, p: RangePartition, position: int,
                       log_start: int) -> int:
    """OFFSET_OUT_OF_RANGE at `position`: fail (failOnDataLoss) or skip to the log start."""
    if log_start < 0:
        log_start = loop.run_until_complete(
            broker.list_offsets([(p.topic, p.partition)], EARLIEST))[(p.topic, p.partition)]
    if position >= log_start:
        raise DataLossError(f"{p.topic}-{p.partition}: offset {position} is beyond the log end "
                            f"(was the topic truncated or recreated?)")
    if p.fail_on_data_loss:
        raise DataLossError(lost_message((p.topic, p.partition), position, log_start))
    log.warning("%s-%d: skipping %d records lost to retention", p.topic, p.partition,
                log_start - position)
    return log_start
