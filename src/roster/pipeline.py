"""The main job (`make run`): a click-stream pipeline on Spark, reading from roster as a static
member of a consumer group.

1. start a roster broker (data in ./data) and create the topics;
2. produce synthetic click events (JSON, keyed by user) for the whole run;
3. run a PySpark Structured Streaming query through the `roster` data source as the static
   member `pipeline-1` of group `clicks-pipeline`: page views per 10-second window with a
   watermark, each window written to the topic `click-counts` once it closes;
4. at the end, show the latest windows from `click-counts` and the group's committed offsets
   and lag, and leave commands to look around.

    python -m roster.pipeline [--seconds 45 | --forever] [--batches N] [--port 9092]
                              [--data-dir ./data] [--http-port PORT]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

DEFAULT_PORT, DEFAULT_DATA = 9092, Path("./data")   # the Makefile's PORT and DATA
GROUP = "clicks-pipeline"
INSTANCE = "pipeline-1"
SOURCE, OUTPUT = "clicks", "click-counts"
PAGES = ["/", "/pricing", "/docs", "/blog", "/signup", "/login"]


def start_broker(port: int, data_dir: Path,
                 http_port: int | None = None) -> tuple[subprocess.Popen, str]:
    """Run `roster serve` and wait for its `roster listening on` line."""
    http = ["--http-port", str(http_port)] if http_port is not None else []
    process = subprocess.Popen(
        [sys.executable, "-m", "roster", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--data-dir", str(data_dir), "--set", "group.initial.rebalance.delay.ms=0", *http],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    said = ""
    for line in process.stdout:
        if line.startswith("roster listening on "):
            if http_port is not None:   # serving before that line (server.py)
                console = f"http://127.0.0.1:{http_port}/"
                print(f"group console: {console}group/{GROUP} (metrics: {console}metrics)",
                      flush=True)
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
            return process, line.split(" on ", 1)[1].strip()
        said = line.strip() or said
    # the broker's own last line says why (a port in use, a data directory it cannot use)
    sys.exit(said if said.startswith("roster:") else
             f"roster did not start: {said or 'it printed nothing'}")


def ensure_topics(bootstrap: str) -> None:
    from roster.admin.client import AdminClient, AdminError
    from roster.admin.topics import create
    with AdminClient(bootstrap) as admin:
        for name, partitions in ((SOURCE, 3), (OUTPUT, 1)):
            try:
                create(admin, name, partitions, {})
            except AdminError as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise


def produce_clicks(bootstrap: str, stop: threading.Event, per_second: int = 200) -> None:
    """Synthetic clicks until `stop`: a user id key and a JSON value with the page and time."""
    from roster.client.producer import Producer
    from roster.client.records import OutgoingRecord

    async def run() -> None:
        producer = Producer(bootstrap, acks=1, compression="lz4")
        rng = random.Random(7)
        try:
            while not stop.is_set():
                now = int(time.time() * 1000)
                records = [OutgoingRecord(
                    json.dumps({"user": f"u{rng.randrange(500)}", "page": rng.choice(PAGES),
                                "ts": now}).encode(), key=f"u{rng.randrange(500)}".encode())
                    for _ in range(per_second // 10)]
                await producer.send_many(SOURCE, records)
                await asyncio.sleep(0.1)
        finally:
            await producer.close()

    asyncio.run(run())


def spark_session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors use this venv
    # The driver's address settings below do not cover Spark's own idea of the local host,
    # which is the external interface unless SPARK_LOCAL_IP names another: everything here
    # (broker, driver, executors) runs on this machine, so keep it all on loopback. The JVM
    # reads it when it starts, i.e. in getOrCreate() below.
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("roster-clicks")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.adaptive.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    import roster.spark
    roster.spark.register(spark)
    return spark


def stop_between_batches(query, timeout_s: float = 10.0) -> None:
    """Stop the query in the pause between two triggers: stopped mid-batch, Spark aborts the
    batch's write and logs it as ERRORs with stack traces (harmless, the batch is redone on the
    next run, but not what a user should read at the end of a good run)."""
    deadline = time.monotonic() + timeout_s
    while query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()


def start_query(spark, bootstrap: str, checkpoint: Path):
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType
    event = StructType([StructField("user", StringType()), StructField("page", StringType()),
                        StructField("ts", LongType())])
    clicks = (spark.readStream.format("roster")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", SOURCE)
              .option("group.id", GROUP)
              .option("group.instance.id", INSTANCE)   # static: a restart moves no partitions
              .option("startingOffsets", "group")      # resume where the group left off
              .option("maxOffsetsPerTrigger", 2000)
              .load())
    views = (clicks.select(F.from_json(F.col("value").cast("string"), event).alias("e"))
             .select((F.col("e.ts") / 1000).cast("timestamp").alias("at"), F.col("e.page"))
             .withWatermark("at", "10 seconds")
             .groupBy(F.window("at", "10 seconds"), F.col("page"))
             .count())
    out = views.select(
        F.col("page").cast("binary").alias("key"),
        F.to_json(F.struct(F.col("window.start").alias("window_start"), "page", "count"))
        .cast("binary").alias("value"))
    return (out.writeStream.format("roster")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", OUTPUT)
            .option("checkpointLocation", str(checkpoint))
            .outputMode("append")   # each window once, when the watermark closes it
            .trigger(processingTime="2 seconds")
            .start())


def show_results(spark, bootstrap: str) -> None:
    from pyspark.sql import functions as F
    latest = (spark.read.format("roster").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", OUTPUT).option("startingOffsets", "earliest").load()
              .select(F.col("offset"), F.col("value").cast("string").alias("json")))
    rows = [json.loads(r.json) for r in latest.orderBy(F.col("offset").desc()).limit(200)
            .collect()]
    newest: dict[tuple[str, str], int] = {}
    for row in reversed(rows):  # later updates of a window win
        newest[(row["window_start"], row["page"])] = row["count"]
    print(f"\nPage views per 10-second window (from topic {OUTPUT}, latest windows last):")
    for (window, page), count in sorted(newest.items())[-12:]:
        print(f"  {window}  {page:<9} {count:>5}")


def look_around(bootstrap: str, checkpoint: Path) -> None:
    from roster.admin.client import AdminClient
    from roster.admin.groups import describe, describe_lines, last_written
    with AdminClient(bootstrap) as admin:
        print()
        print("\n".join(describe_lines(describe(admin, GROUP), last_written(admin, GROUP))))
        print()
        print("\n".join(lag_lines(admin, spark_processed(checkpoint))))


def spark_processed(checkpoint: Path) -> dict[tuple[str, int], int]:
    """Where Spark has got to: the end offsets of the last batch its checkpoint records as
    done (offsets/N of the highest N that commits/ has; the source's line is its offsets)."""
    done = [int(p.name) for p in (checkpoint / "commits").glob("[0-9]*") if p.name.isdigit()]
    if not done:
        return {}
    lines = (checkpoint / "offsets" / str(max(done))).read_text().splitlines()
    source = json.loads(lines[2]) if len(lines) > 2 else {}
    return {(topic, int(partition)): int(offset)
            for topic, partitions in source.items() for partition, offset in partitions.items()}


def lag_lines(admin, processed: dict[tuple[str, int], int]) -> list[str]:
    """The group's committed offsets beside Spark's progress: the source commits a batch's
    offsets to the group when Spark plans the next batch (as Spark's Kafka source does), so
    after a stop the group trails the checkpoint by the last batch. Lag counts only what Spark
    has not processed."""
    from roster.admin.offsets import LATEST, committed, log_offsets
    group = {tp: o for tp, o in committed(admin, GROUP).items() if tp[0] == SOURCE}
    partitions = sorted(set(group) | {tp for tp in processed if tp[0] == SOURCE})
    if not partitions:
        return [f"Group {GROUP} has no committed offsets yet."]
    ends = log_offsets(admin, {SOURCE: [p for _, p in partitions]}, LATEST)
    rows = [("TOPIC", "PARTITION", "GROUP-OFFSET", "SPARK-PROCESSED", "LOG-END-OFFSET", "LAG")]
    for tp in partitions:
        done = max(group.get(tp, -1), processed.get(tp, -1))
        end = ends.get(tp, -1)
        rows.append((tp[0], str(tp[1]), str(group.get(tp, "-")), str(processed.get(tp, "-")),
                     str(end), str(max(end - done, 0)) if end >= 0 and done >= 0 else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    table = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    behind = sum(processed.get(tp, -1) - group.get(tp, -1) for tp in partitions
                 if processed.get(tp, -1) > group.get(tp, -1) >= 0)
    note = ([f"(Spark processed {behind} more records than the group has committed: the "
             f"source commits a batch's offsets when the next batch is planned, so the last "
             f"batch is committed when the pipeline runs again; LAG counts from what Spark "
             f"processed)"] if behind else [])
    return [f"Group {GROUP}, source topic {SOURCE}:"] + table + note


def print_new_batches(query, printed: int) -> list[int]:
    """Print every batch Spark finished after batch `printed` (recentProgress keeps the last
    ones; lastProgress alone would skip batches that finished between two polls); returns the
    ids of the batches printed."""
    latest: dict[int, dict] = {}
    for progress in query.recentProgress:
        # a trigger that found nothing to run reports the next batch's id: only a report with
        # addBatch time is of a batch that ran
        if progress["batchId"] > printed and "addBatch" in progress.get("durationMs", {}):
            latest[progress["batchId"]] = progress
    for batch_id in sorted(latest):
        progress = latest[batch_id]
        print(f"batch {batch_id}: {progress['numInputRows']} clicks in, "
              f"{progress['sources'][0].get('endOffset')}", flush=True)
    return sorted(latest)


def closing_hints(port: int, data_dir: Path, http_port: int | None = None) -> str:
    """The commands to look around, as they must be typed for this run: with its PORT and DATA
    when they are not the Makefile's defaults."""
    make_args = "".join([f" PORT={port}" if port != DEFAULT_PORT else "",
                         f" DATA={shlex.quote(str(data_dir))}"
                         if data_dir != DEFAULT_DATA else ""])
    server = f" --bootstrap-server 127.0.0.1:{port}" if port != DEFAULT_PORT else ""
    roster = ".venv/bin/roster"
    commands = [
        (f"make serve{make_args}", f"the broker again, on port {port}"),
        (f"{roster} groups describe {GROUP}{server}", "its members and assignment"),
        (f"{roster} offsets describe {GROUP}{server}", "committed offsets and lag"),
        (f"kcat -b 127.0.0.1:{port} -C -t {OUTPUT} -o -10 -e", "the latest windows"),
        (f"make run{make_args}", "run again: it resumes from the group"),
        (f"{roster} groups history {GROUP}{server}", "its rebalances, and those it avoided"),
    ]
    width = max(len(command) for command, _ in commands) + 2
    lines = [f"The broker has stopped; everything is kept in {data_dir}. To look around:"]
    lines += [f"  {command.ljust(width)}# {why}" for command, why in commands]
    if http_port is not None:
        lines.append(f"The group console was at http://127.0.0.1:{http_port}/group/{GROUP} "
                     f"while the job ran; `make serve{make_args} HTTP_PORT={http_port}` serves "
                     f"it again with the broker.")
    else:
        lines.append(f"For the group console and /metrics: make run{make_args} HTTP_PORT=9644")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="roster-pipeline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seconds", type=float, default=45.0, help="how long to run")
    parser.add_argument("--forever", action="store_true", help="run until Ctrl-C")
    parser.add_argument("--batches", type=int, help="stop as soon as Spark has finished this "
                        "many batches (still at most --seconds)")
    parser.add_argument("--http-port", type=int, help="serve /metrics and the group console "
                        "on this port while the job runs (docs/observability.md)")
    args = parser.parse_args(argv)

    print(f"starting roster on port {args.port} (data in {args.data_dir}) ...", flush=True)
    broker, address = start_broker(args.port, args.data_dir, args.http_port)
    bootstrap = address
    stop = threading.Event()
    interrupted = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: interrupted.set())
    spark = query = None
    try:
        ensure_topics(bootstrap)
        producer = threading.Thread(target=produce_clicks, args=(bootstrap, stop), daemon=True)
        producer.start()
        print("producing synthetic clicks; starting Spark (this takes a few seconds) ...",
              flush=True)
        spark = spark_session()
        checkpoint = args.data_dir / "checkpoints" / "clicks"
        query = start_query(spark, bootstrap, checkpoint)
        deadline = None if args.forever else time.monotonic() + args.seconds
        printed: list[int] = []
        while not interrupted.is_set() and (deadline is None or time.monotonic() < deadline):
            printed += print_new_batches(query, printed[-1] if printed else -1)
            if args.batches is not None and len(printed) >= args.batches:
                break
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            interrupted.wait(1.0)
        stop.set()
        stop_between_batches(query)
        print_new_batches(query, printed[-1] if printed else -1)  # finished while stopping
        show_results(spark, bootstrap)
        look_around(bootstrap, checkpoint)
    finally:
        stop.set()
        if query is not None and query.isActive:
            query.stop()
        if spark is not None:
            spark.stop()
        broker.send_signal(signal.SIGTERM)
        broker.wait(30)
    print()
    print(closing_hints(int(address.rsplit(":", 1)[1]), args.data_dir, args.http_port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
