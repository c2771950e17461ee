"""The main job (`make run`): a click-stream pipeline on Spark, reading from roster as a static
member of a consumer group.

1. start a roster broker (data in ./data) and create the topics;
2. produce synthetic click events (JSON, keyed by user) for the whole run;
3. run a PySpark Structured Streaming query through the `roster` data source as the static
   member `pipeline-1` of group `clicks-pipeline`: page views per 10-second window with a
   watermark, each window written to the topic `click-counts` once it closes;
4. at the end, show the latest windows from `click-counts` and the group's committed offsets
   and lag, and leave commands to look around.

    python -m roster.pipeline [--seconds 40 | --forever] [--port 9092] [--data-dir ./data]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

GROUP = "clicks-pipeline"
INSTANCE = "pipeline-1"
SOURCE, OUTPUT = "clicks", "click-counts"
PAGES = ["/", "/pricing", "/docs", "/blog", "/signup", "/login"]


CONSOLE: list[str] = []   # the console's address, when the broker serves one


def start_broker(port: int, data_dir: Path,
                 http_port: int | None = None) -> tuple[subprocess.Popen, str]:
    """Run `roster serve` and wait for its `roster listening on` line."""
    http = ["--http-port", str(http_port)] if http_port is not None else []
    process = subprocess.Popen(
        [sys.executable, "-m", "roster", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--data-dir", str(data_dir), "--set", "group.initial.rebalance.delay.ms=0", *http],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    for line in process.stdout:
        if line.startswith("roster listening on "):
            if http_port is not None:   # serving before that line (server.py)
                CONSOLE.append(f"http://127.0.0.1:{http_port}/")
                print(f"group console: {CONSOLE[0]}group/{GROUP} "
                      f"(metrics: {CONSOLE[0]}metrics)", flush=True)
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
            return process, line.split(" on ", 1)[1].strip()
    sys.exit(f"roster did not start (is port {port} in use?)")


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


def look_around(bootstrap: str) -> None:
    from roster.admin.client import AdminClient
    from roster.admin.groups import describe, describe_lines, last_written
    from roster.admin.offsets import describe_lines as offset_lines
    with AdminClient(bootstrap) as admin:
        print()
        print("\n".join(describe_lines(describe(admin, GROUP), last_written(admin, GROUP))))
        print()
        print("\n".join(offset_lines(admin, GROUP)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="roster-pipeline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=9092)
    parser.add_argument("--data-dir", type=Path, default=Path("./data"))
    parser.add_argument("--seconds", type=float, default=45.0, help="how long to run")
    parser.add_argument("--forever", action="store_true", help="run until Ctrl-C")
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
        query = start_query(spark, bootstrap, args.data_dir / "checkpoints" / "clicks")
        deadline = None if args.forever else time.monotonic() + args.seconds
        last_batch = -1
        while not interrupted.is_set() and (deadline is None or time.monotonic() < deadline):
            progress = query.lastProgress
            if progress and progress["batchId"] != last_batch:
                last_batch = progress["batchId"]
                print(f"batch {last_batch}: {progress['numInputRows']} clicks in, "
                      f"{progress['sources'][0].get('endOffset')}", flush=True)
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            interrupted.wait(1.0)
        stop.set()
        stop_between_batches(query)
        show_results(spark, bootstrap)
        look_around(bootstrap)
    finally:
        stop.set()
        if query is not None and query.isActive:
            query.stop()
        if spark is not None:
            spark.stop()
        broker.send_signal(signal.SIGTERM)
        broker.wait(30)
    print(f"""
The broker has stopped; everything is kept in {args.data_dir}. To look around:
  make serve                                          # the broker again, on port {args.port}
  .venv/bin/roster groups describe {GROUP}
  .venv/bin/roster offsets describe {GROUP}
  kcat -b localhost:{args.port} -C -t {OUTPUT} -o -10 -e
  make run                                            # run again: it resumes from the group
  .venv/bin/roster groups history {GROUP}   # its rebalances, and those it avoided
""")
    if CONSOLE:
        print(f"The group console was at {CONSOLE[0]}group/{GROUP} while the job ran; "
              f"`make serve HTTP_PORT={args.http_port}` serves it again with the broker.")
    else:
        print("For the group console and /metrics: make run HTTP_PORT=9644")
    return 0


if __name__ == "__main__":
    sys.exit(main())
