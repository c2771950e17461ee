"""Streaming helpers for the Spark tests: start a roster readStream into foreachBatch."""
from __future__ import annotations

import threading
import time


def stream(spark, bootstrap: str, **options):
    reader = spark.readStream.format("roster").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


class Collected:
    """An idempotent foreachBatch sink (it runs in this process): rows by batch id, so a batch
    Spark replays after a restart replaces its first attempt, as a real sink must arrange."""

    def __init__(self) -> None:
        self.by_batch: dict[int, list[tuple]] = {}
        self.batches: list[int] = []          # every call, replays included
        self.lock = threading.Lock()

    def __call__(self, df, batch_id: int) -> None:
        rows = [(r.topic, r.partition, r.offset, r.value)
                for r in df.select("topic", "partition", "offset", "value").collect()]
        with self.lock:
            self.by_batch[batch_id] = rows
            self.batches.append(batch_id)

    @property
    def rows(self) -> list[tuple]:
        with self.lock:
            return [row for rows in self.by_batch.values() for row in rows]

    def places(self) -> list[tuple[int, int]]:
        return sorted((p, o) for _, p, o, _ in self.rows)

    def partitions(self) -> set[int]:
        return {p for _, p, _, _ in self.rows}


def start(spark, bootstrap: str, sink: Collected, checkpoint, *, available_now=False,
          name: str | None = None, **options):
    writer = stream(spark, bootstrap, **options).writeStream.foreachBatch(sink) \
        .option("checkpointLocation", str(checkpoint))
    if name:
        writer = writer.queryName(name)
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="300 milliseconds")
    return writer.start()


def run_available_now(spark, bootstrap: str, checkpoint, timeout_s: float = 120, **options):
    sink = Collected()
    query = start(spark, bootstrap, sink, checkpoint, available_now=True, **options)
    try:
        assert query.awaitTermination(timeout_s), "the AvailableNow query did not finish"
    finally:
        if query.isActive:
            query.stop()
    return sink


def wait_until(condition, timeout_s: float, what: str, poll_s: float = 0.1, queries=()):
    """Wait for condition() to be truthy. A query that died fails the wait at once, with its
    exception; at the deadline the message carries every query's status."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        for query in queries:
            if query is not None and not query.isActive and query.exception() is not None:
                raise AssertionError(f"query {query.name or query.id} failed while waiting for "
                                     f"{what}: {query.exception()}")
        if time.monotonic() > deadline:
            states = [(q.name or str(q.id)[:8], q.isActive, q.status.get("message"))
                      for q in queries if q is not None]
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}; "
                                 f"queries: {states}")
        time.sleep(poll_s)
