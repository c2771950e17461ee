"""End-to-end throughput of a pass-through Spark streaming query through roster, next to Spark's
own ceiling on this machine, and micro-batch latency at a low rate.

1. roster: N records of 100 bytes in a 2-partition topic; a streaming query reads them with the
   `roster` source (a group member) and writes them with the `roster` sink to another topic,
   Trigger.AvailableNow; records/s = N / query wall time.
2. Parquet: the same N records written once to local Parquet; the same pass-through query reads
   them with Spark's file source and writes to the `noop` sink. roster's rate is printed as a
   ratio of this one (target >= 0.5).
3. The same two queries once more (a new group, new checkpoints, another output topic; the same
   N input records). The first roster query is the session's first use of Python workers and
   pays for starting them (seconds on 2 CPUs); the Parquet query needs none. The second round
   is what a session that already runs a Python data source sees. For both rounds the table
   also gives the rate inside the micro-batches (N / the sum of `triggerExecution`), which
   leaves out starting the query (for roster: the runner process and joining the group).
4. Latency: 5 records/s for ~15 s into a query with the default trigger (micro-batches as fast
   as possible); the median `triggerExecution` of batches that carried rows.

    .venv/bin/python bench/spark_pipeline.py [--records 200000] [--detail]

Everything stays on 127.0.0.1; the broker and Spark are stopped at the end.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_broker(data_dir: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "roster", "serve", "--host", "127.0.0.1", "--port", "0",
         "--data-dir", str(data_dir), "--set", "group.initial.rebalance.delay.ms=0",
         "--set", "offsets.topic.num.partitions=5"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in process.stdout:
        if line.startswith("roster listening on "):
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
            return process, line.split(" on ", 1)[1].strip()
    raise SystemExit("roster did not start")


def produce(bootstrap: str, topic: str, count: int, size: int = 100) -> None:
    from roster.client.producer import Producer
    from roster.client.records import OutgoingRecord

    async def run():
        producer = Producer(bootstrap, acks=1)
        value = b"v" * size
        for start in range(0, count, 5000):
            for partition in (0, 1):
                await producer.send_many(topic, [OutgoingRecord(value)] *
                                         (min(5000, count - start) // 2), partition=partition)
        await producer.close()
    asyncio.run(run())


def session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("roster-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    import roster.spark
    roster.spark.register(spark)
    return spark


class Run:
    """One AvailableNow query: wall time from start() to its end, and its progress reports."""

    def __init__(self, name: str, start_query, records: int) -> None:
        query = start_query()
        started = time.perf_counter()   # from start()'s return, as this benchmark always did
        query.awaitTermination()
        self.wall_s = time.perf_counter() - started
        self.name = name
        self.records = records
        self.progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
        read = sum(p["numInputRows"] for p in self.progress)
        if read != records:
            raise SystemExit(f"{name}: read {read} records, expected {records}")
        self.batch_s = sum(p["durationMs"]["triggerExecution"] for p in self.progress) / 1000

    @property
    def rate(self) -> float:
        return self.records / self.wall_s

    @property
    def batch_rate(self) -> float:
        return self.records / self.batch_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--detail", action="store_true",
                        help="print each query's micro-batches and their phases")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="roster-spark-bench-"))
    broker, bootstrap = start_broker(work / "data")
    spark = None
    try:
        from roster.admin.client import AdminClient
        from roster.admin.topics import create
        with AdminClient(bootstrap) as admin:
            for name in ("bench-in", "bench-out", "bench-out-2", "latency-in", "latency-out"):
                create(admin, name, 2, {})
        produce(bootstrap, "bench-in", args.records)
        spark = session()

        # warm-up: the first query of a session pays for worker start-up
        spark.range(10).count()

        def roster_query(group: str, out: str, checkpoint: str):
            return lambda: (
                spark.readStream.format("roster").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", "bench-in").option("startingOffsets", "earliest")
                .option("group.id", group).load()
                .select("key", "value").writeStream.format("roster")
                .option("kafka.bootstrap.servers", bootstrap).option("topic", out)
                .option("checkpointLocation", str(work / checkpoint))
                .trigger(availableNow=True).start())

        def parquet_query(checkpoint: str):
            return lambda: (
                spark.readStream.schema(schema).parquet(str(parquet_dir))
                .writeStream.format("noop")
                .option("checkpointLocation", str(work / checkpoint))
                .trigger(availableNow=True).start())

        load_before = os.getloadavg()
        roster_first = Run("roster, first Python query of the session",
                           roster_query("bench", "bench-out", "ck-roster"), args.records)

        parquet_dir = work / "parquet"
        (spark.read.format("roster").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", "bench-in").option("startingOffsets", "earliest").load()
         .select("key", "value").write.parquet(str(parquet_dir)))
        schema = spark.read.parquet(str(parquet_dir)).schema
        parquet_first = Run("parquet", parquet_query("ck-parquet"), args.records)
        roster_again = Run("roster, again", roster_query("bench-2", "bench-out-2", "ck-roster-2"),
                           args.records)
        parquet_again = Run("parquet, again", parquet_query("ck-parquet-2"), args.records)
        load_after = os.getloadavg()

        latency = (spark.readStream.format("roster")
                   .option("kafka.bootstrap.servers", bootstrap)
                   .option("subscribe", "latency-in").option("startingOffsets", "latest")
                   .option("group.id", "latency").load()
                   .select("key", "value").writeStream.format("roster")
                   .option("kafka.bootstrap.servers", bootstrap).option("topic", "latency-out")
                   .option("checkpointLocation", str(work / "ck-latency")).start())
        stop = threading.Event()

        def trickle():
            while not stop.is_set():
                produce(bootstrap, "latency-in", 2)
                stop.wait(0.4)
        time.sleep(8)  # let the query start before the trickle: a wall-clock run, by design
        feeder = threading.Thread(target=trickle, daemon=True)
        feeder.start()
        time.sleep(15)
        stop.set()
        feeder.join()
        batches = [p["durationMs"]["triggerExecution"] for p in latency.recentProgress
                   if p["numInputRows"] > 0]
        latency.stop()

        print(f"\n{args.records:,} records of 100 bytes, local[2], one run; load average "
              f"{load_before[0]:.2f} before, {load_after[0]:.2f} after\n")
        print("| query | wall s | records/s | in micro-batches s | records/s |")
        print("|---|---:|---:|---:|---:|")
        for run in (roster_first, parquet_first, roster_again, parquet_again):
            print(f"| {run.name} | {run.wall_s:.2f} | {run.rate:,.0f} | {run.batch_s:.2f} | "
                  f"{run.batch_rate:,.0f} |")
        print(f"\nratio roster / parquet, end to end: first round "
              f"{roster_first.rate / parquet_first.rate:.2f}, second round "
              f"{roster_again.rate / parquet_again.rate:.2f} (target >= 0.5)")
        print(f"ratio roster / parquet, in micro-batches: first round "
              f"{roster_first.batch_rate / parquet_first.batch_rate:.2f}, second round "
              f"{roster_again.batch_rate / parquet_again.batch_rate:.2f}")
        if args.detail:
            for run in (roster_first, parquet_first, roster_again, parquet_again):
                for p in run.progress:
                    print(f"  {run.name}: batch {p['batchId']}, {p['numInputRows']} rows, "
                          f"durationMs {p['durationMs']}")
        if batches:
            print(f"micro-batch latency at ~5 records/s: median triggerExecution "
                  f"{statistics.median(batches):.0f} ms over {len(batches)} batches "
                  f"(min {min(batches)} ms, max {max(batches)} ms)")
    finally:
        if spark is not None:
            spark.stop()
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(work, ignore_errors=True)   # ~65 MB of logs, checkpoints and Parquet
    return 0


if __name__ == "__main__":
    sys.exit(main())
