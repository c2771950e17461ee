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
5. With --ceiling, each round also runs, over the same N records and in the same row schema,
   pass-through queries that use `bench/spark_ceiling.py`, a trivial Python streaming source
   serving pre-built Arrow batches from memory and a trivial Arrow writer dropping them: the
   ceiling of Spark's Python Data Source API (synthetic → synthetic), and the read and write
   halves of roster's cost (roster → noop, synthetic → roster). Each is reported as a ratio of
   the Parquet query of its round. --ceiling-first makes synthetic → synthetic the session's
   first Python query (it then pays for starting the Python workers instead of roster).

    .venv/bin/python bench/spark_pipeline.py [--records 200000] [--detail]
        [--ceiling [--ceiling-first]] [--no-latency]

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
        self.load = os.getloadavg()[0]
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
    parser.add_argument("--ceiling", action="store_true",
                        help="also run the synthetic Python source/sink queries "
                             "(bench/spark_ceiling.py) in each round")
    parser.add_argument("--ceiling-first", action="store_true",
                        help="with --ceiling: synthetic → synthetic is the first Python query")
    parser.add_argument("--no-latency", action="store_true",
                        help="skip the ~25 s low-rate latency measurement")
    args = parser.parse_args()
    if args.ceiling:
        # Spark's Python workers import the synthetic source by module name (its classes are
        # pickled by reference, so a worker keeps its built batches between queries); they
        # inherit PYTHONPATH from the JVM, which inherits it from this process.
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT / "bench"), os.environ.get("PYTHONPATH")]))
    work = Path(tempfile.mkdtemp(prefix="roster-spark-bench-"))
    broker, bootstrap = start_broker(work / "data")
    spark = None
    try:
        from roster.admin.client import AdminClient
        from roster.admin.topics import create
        with AdminClient(bootstrap) as admin:
            for name in ("bench-in", "bench-out", "bench-out-2", "latency-in", "latency-out"):
                create(admin, name, 2, {})
            if args.ceiling:
                for name in ("ceiling-out", "ceiling-out-2"):
                    create(admin, name, 2, {})
        produce(bootstrap, "bench-in", args.records)
        spark = session()
        if args.ceiling:
            register_ceiling(spark)

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

        ceiling = Ceiling(spark, bootstrap, work, args.records) if args.ceiling else None
        ceiling_runs: list[tuple[int, Run]] = []
        load_before = os.getloadavg()
        if ceiling is not None and args.ceiling_first:
            ceiling_runs.append((1, ceiling.synthetic_to_synthetic(
                "synthetic → synthetic, first Python query of the session", "ck-s-s-1")))
        roster_first = Run("roster, first Python query of the session"
                           if ceiling is None or not args.ceiling_first else
                           "roster, first roster query (after synthetic)",
                           roster_query("bench", "bench-out", "ck-roster"), args.records)

        parquet_dir = work / "parquet"
        (spark.read.format("roster").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", "bench-in").option("startingOffsets", "earliest").load()
         .select("key", "value").write.parquet(str(parquet_dir)))
        schema = spark.read.parquet(str(parquet_dir)).schema
        parquet_first = Run("parquet", parquet_query("ck-parquet"), args.records)
        if ceiling is not None:
            ceiling_runs += [(1, r) for r in ceiling.round(1, not args.ceiling_first)]
        roster_again = Run("roster, again", roster_query("bench-2", "bench-out-2", "ck-roster-2"),
                           args.records)
        parquet_again = Run("parquet, again", parquet_query("ck-parquet-2"), args.records)
        if ceiling is not None:
            ceiling_runs += [(2, r) for r in ceiling.round(2, True)]
        load_after = os.getloadavg()
        if args.no_latency:
            report(args, load_before, load_after, roster_first, parquet_first, roster_again,
                   parquet_again, ceiling_runs, [])
            return 0

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
        report(args, load_before, load_after, roster_first, parquet_first, roster_again,
               parquet_again, ceiling_runs, batches)
    finally:
        if spark is not None:
            spark.stop()
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(work, ignore_errors=True)   # ~65 MB of logs, checkpoints and Parquet
    return 0


def report(args, load_before, load_after, roster_first, parquet_first, roster_again,
           parquet_again, ceiling_runs, batches) -> None:
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
    if ceiling_runs:
        report_ceiling(args, {1: parquet_first, 2: parquet_again},
                       [(1, roster_first), (2, roster_again)] + ceiling_runs)


# -- the Python Data Source API's own ceiling (--ceiling) -----------------------------------------

def register_ceiling(spark) -> None:
    """Register the synthetic source/sink, after checking it has exactly roster's row schema
    (the JVM's Arrow → rows work depends on the columns, so the comparison needs the same)."""
    import spark_ceiling

    from roster.spark.arrow_records import ARROW_SCHEMA
    from roster.spark.source import SCHEMA
    if spark_ceiling.SCHEMA != SCHEMA or not spark_ceiling.ARROW_SCHEMA.equals(ARROW_SCHEMA):
        raise SystemExit("bench/spark_ceiling.py's schema differs from roster's source schema")
    spark.dataSource.register(spark_ceiling.SyntheticDataSource)


class Ceiling:
    """The pass-through queries of --ceiling, each an AvailableNow query over the same N
    records with the same projection (key, value) as roster → roster."""

    def __init__(self, spark, bootstrap: str, work: Path, records: int) -> None:
        self.spark, self.bootstrap, self.work, self.records = spark, bootstrap, work, records

    def _synthetic(self):
        return (self.spark.readStream.format("roster_ceiling")
                .option("records", str(self.records)).load().select("key", "value"))

    def _roster(self, group: str):
        return (self.spark.readStream.format("roster")
                .option("kafka.bootstrap.servers", self.bootstrap).option("subscribe", "bench-in")
                .option("startingOffsets", "earliest").option("group.id", group).load()
                .select("key", "value"))

    def _run(self, name: str, frame, sink: str, checkpoint: str, **options) -> Run:
        def start():
            writer = frame().writeStream.format(sink)
            for key, value in options.items():
                writer = writer.option(key, value)
            return (writer.option("checkpointLocation", str(self.work / checkpoint))
                    .trigger(availableNow=True).start())
        return Run(name, start, self.records)

    def synthetic_to_synthetic(self, name: str, checkpoint: str) -> Run:
        return self._run(name, self._synthetic, "roster_ceiling", checkpoint)

    def round(self, number: int, with_synthetic: bool) -> list[Run]:
        suffix = "" if number == 1 else ", again"
        runs = []
        if with_synthetic:
            runs.append(self.synthetic_to_synthetic(f"synthetic → synthetic{suffix}",
                                                    f"ck-s-s-{number}"))
        runs.append(self._run(f"roster → noop{suffix}",
                              lambda: self._roster(f"ceiling-{number}"), "noop",
                              f"ck-r-n-{number}"))
        runs.append(self._run(f"synthetic → roster{suffix}", self._synthetic, "roster",
                              f"ck-s-r-{number}", **{
                                  "kafka.bootstrap.servers": self.bootstrap,
                                  "topic": "ceiling-out" if number == 1 else "ceiling-out-2"}))
        runs.append(self._run(f"synthetic → noop{suffix}", self._synthetic, "noop",
                              f"ck-s-n-{number}"))
        return runs


def report_ceiling(args, parquet: dict[int, Run], runs: list[tuple[int, Run]]) -> None:
    print("\nEvery Python query as a ratio of the Parquet → noop query of its round "
          "(load average: 1-minute figure when the query started)\n")
    print("| query | round | wall s | records/s | ratio end to end | in micro-batches s | "
          "records/s | ratio in micro-batches | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for number, run in sorted(runs, key=lambda r: r[0]):
        base = parquet[number]
        print(f"| {run.name} | {number} | {run.wall_s:.2f} | {run.rate:,.0f} | "
              f"{run.rate / base.rate:.2f} | {run.batch_s:.2f} | {run.batch_rate:,.0f} | "
              f"{run.batch_rate / base.batch_rate:.2f} | {run.load:.2f} |")
    for number in (1, 2):
        base = parquet[number]
        print(f"| {base.name} | {number} | {base.wall_s:.2f} | {base.rate:,.0f} | 1.00 | "
              f"{base.batch_s:.2f} | {base.batch_rate:,.0f} | 1.00 | {base.load:.2f} |")
    if args.detail:
        for number, run in runs[2:]:
            for p in run.progress:
                print(f"  {run.name} (round {number}): batch {p['batchId']}, "
                      f"{p['numInputRows']} rows, durationMs {p['durationMs']}")


if __name__ == "__main__":
    sys.exit(main())
