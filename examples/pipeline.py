"""A click-counting pipeline: synthetic click events -> roster source (a static group member)
-> counts per page per 10-second window, with a watermark -> roster sink.

    python examples/pipeline.py                          # broker at localhost:9092
    python examples/pipeline.py --bootstrap host:9092 --instance pipeline-2 --no-generate

Several instances with the same --group split the `clicks` partitions between them (see
two_instances.py). Clicks are keyed by page, so all clicks of a page are in one partition and
each instance counts its own pages completely. Each instance needs its own --checkpoint.

Needs `pip install 'roster[spark]'` (pyspark >= 4.2, pyarrow) and Java 17+.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import threading
import time

PAGES = ["/", "/pricing", "/docs", "/blog", "/signup", "/login", "/about", "/careers"]


def generate_clicks(bootstrap: str, topic: str, rate: float, stop: threading.Event) -> None:
    """Produce JSON click events keyed by page, about `rate` per second, until stopped."""
    from roster.client.producer import Producer

    async def run():
        producer = Producer(bootstrap, client_id="click-generator")
        try:
            while not stop.is_set():
                page = random.choice(PAGES)
                event = {"user": f"u{random.randrange(1000)}", "page": page,
                         "ts": int(time.time() * 1000)}
                await producer.send(topic, json.dumps(event).encode(), key=page.encode())
                await asyncio.sleep(1 / rate)
        finally:
            await producer.close()
    asyncio.run(run())


def ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from roster.admin.client import AdminClient, AdminError
    from roster.admin.topics import create
    with AdminClient(bootstrap) as admin:
        try:
            create(admin, topic, partitions, {})
        except AdminError as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise


def build_query(spark, args):
    from pyspark.sql import functions as F

    clicks = (spark.readStream.format("roster")
              .option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.input)
              .option("group.id", args.group)
              .option("group.instance.id", args.instance)   # static: restarts cause no rebalance
              .option("startingOffsets", "group")            # a fresh checkpoint resumes the group
              .option("session.timeout.ms", str(args.session_timeout_ms))
              .option("maxOffsetsPerTrigger", "5000")
              .load())
    schema = "user string, page string, ts long"
    events = (clicks.select(F.from_json(F.col("value").cast("string"), schema).alias("e"))
              .select("e.page", (F.col("e.ts") / 1000).cast("timestamp").alias("event_time")))
    counts = (events.withWatermark("event_time", "10 seconds")
              .groupBy(F.window("event_time", "10 seconds"), "page").count())
    out = counts.select(
        F.col("page").alias("key"),
        F.to_json(F.struct(F.col("window.start").alias("start"), F.col("window.end").alias("end"),
                           "page", "count")).alias("value"))
    return (out.writeStream.format("roster")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("topic", args.output)
            .option("checkpointLocation", args.checkpoint)
            .outputMode("append")                       # a window's count once it is final
            .trigger(processingTime="2 seconds")
            .queryName(f"clicks-{args.instance}")
            .start())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="localhost:9092")
    parser.add_argument("--group", default="click-pipeline")
    parser.add_argument("--instance", default="pipeline-1", help="group.instance.id")
    parser.add_argument("--checkpoint", default=None,
                        help="default: /tmp/roster-click-pipeline/<instance>")
    parser.add_argument("--input", default="clicks")
    parser.add_argument("--output", default="click-counts")
    parser.add_argument("--partitions", type=int, default=4, help="of the input topic")
    parser.add_argument("--rate", type=float, default=50, help="clicks per second")
    parser.add_argument("--no-generate", action="store_true", help="do not produce clicks")
    parser.add_argument("--duration", type=float, default=0, help="seconds; 0: until killed")
    parser.add_argument("--session-timeout-ms", type=int, default=120_000,
                        help="how long a stopped static instance keeps its partitions")
    args = parser.parse_args(argv)
    args.checkpoint = args.checkpoint or f"/tmp/roster-click-pipeline/{args.instance}"

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)   # workers need roster installed
    from pyspark.sql import SparkSession

    import roster.spark

    ensure_topic(args.bootstrap, args.input, args.partitions)
    stop = threading.Event()
    if not args.no_generate:
        threading.Thread(target=generate_clicks, daemon=True,
                         args=(args.bootstrap, args.input, args.rate, stop)).start()

    spark = (SparkSession.builder.master("local[2]").appName(f"clicks-{args.instance}")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.streaming.stopTimeout", "10s")
             .config("spark.pyspark.python", sys.executable)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    roster.spark.register(spark)
    query = build_query(spark, args)
    print(f"[{args.instance}] running: {args.input} -> {args.output} "
          f"(group {args.group}, checkpoint {args.checkpoint})", flush=True)

    # SIGTERM (e.g. from rolling_restart.py): stop the query cleanly. Spark then stops the
    # source's runner, whose static member closes without leaving the group.
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    deadline = time.monotonic() + args.duration if args.duration else None
    reported = -1
    try:
        while not stop.is_set() and query.isActive:
            if deadline and time.monotonic() > deadline:
                break
            progress = query.lastProgress
            if progress and progress["batchId"] != reported and progress.get("numInputRows"):
                reported = progress["batchId"]
                print(f"[{args.instance}] batch {reported}: {progress['numInputRows']} clicks",
                      flush=True)
            stop.wait(2)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        query.stop()
        spark.stop()
    print(f"[{args.instance}] stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
