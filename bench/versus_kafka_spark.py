#!/usr/bin/env python3
"""bench/versus_kafka.py's Spark rows: roster's connector (format "roster") against Spark's own
Kafka source (format "kafka", org.apache.spark:spark-sql-kafka-0-10 resolved from Maven Central
by Spark's --packages mechanism into .cache/ivy), reading the same topic from roster and from
Apache Kafka 4.4 in one SparkSession (local[2]).

A topic of --partitions partitions holds --records records of --value-bytes on each broker
(confluent-kafka writes them). Then, in --rounds interleaved rounds, every (connector, broker)
pair reads all of it:

  batch      spark.read ... .load() written to Spark's "noop" sink (every row materialised);
  streaming  spark.readStream ... with trigger(availableNow=True) into the noop sink with a
             checkpoint; roster's connector also commits the group's offsets to the broker
             (group.id), Spark's source keeps them only in its checkpoint (it never commits
             to Kafka) -- each connector's own way of recording progress.

rows/s = records / wall seconds of the action, after one untimed warm-up read per connector;
medians of the rounds; the 1-minute load average
before each read is printed beside it. A streaming read's progress line also gives its
micro-batches and the seconds spent outside them (query start: for a Python source, Spark's
runner process; the end).

The limit of the streaming ratio: in each round the same query also runs over
bench/spark_ceiling.py, a Python streaming source that serves the same number of records (in
roster's row schema, 100-byte values) as pre-built Arrow batches from memory: no network, no
decoding, no group. What it costs is what any source written with Spark's Python Data Source
API pays (the runner process each query starts, Python workers, Arrow to rows in the JVM, the
micro-batch protocol), so roster's connector cannot stream faster than it does here.

    .venv/bin/python bench/versus_kafka_spark.py
    .venv/bin/python bench/versus_kafka_spark.py --records 100000 --rounds 1

Maven serves spark-sql-kafka-0-10_2.13 up to 4.2.0 here while PySpark is 4.3.0: --spark-kafka
picks the version (default: PySpark's own if Maven has it, else 4.2.0).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import versus_kafka as vk  # noqa: E402

TOPIC = "spark-read"


def as_installed(work: Path) -> None:
    """Spark's Python processes (each query's runner, planner and reader workers) as a user's
    install has them. The test extra installs hypothesis, and kio registers strategies with it
    whenever it is importable: 0.16-0.3 s in every fresh Python process Spark starts, which no
    user pays. `roster serve` hides it the same way (roster/launch.py); here a sitecustomize on
    the PYTHONPATH Spark hands its workers does, before kio is imported. --test-extras keeps it."""
    site = work / "as-installed"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(
        'import sys\nsys.modules.setdefault("hypothesis", None)\n')
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(site), os.environ.get("PYTHONPATH")) if p)


def session(spark_kafka: str):
    # Spark's Python workers import bench/spark_ceiling.py by name: they inherit PYTHONPATH
    # from the JVM, which inherits it from this process
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO / "bench"), os.environ.get("PYTHONPATH")]))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    import roster.spark
    spark = (SparkSession.builder.master("local[2]").appName("versus-kafka-spark")
             .config("spark.jars.packages",
                     f"org.apache.spark:spark-sql-kafka-0-10_2.13:{spark_kafka}")
             .config("spark.jars.ivy", str(REPO / ".cache" / "ivy"))
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.adaptive.enabled", "false")
             .config("spark.pyspark.python", sys.executable)
             # a Python worker that takes more than Spark's 15 s to connect back fails the
             # query; on a loaded machine starting one can take that long
             .config("spark.python.authenticate.socketTimeout", "300s")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    roster.spark.register(spark)
    from spark_pipeline import register_ceiling   # checks it has roster's row schema
    register_ceiling(spark)
    return spark


def fill(broker, args) -> None:
    from confluent_kafka import Producer
    vk.make_topics(broker, {TOPIC: args.partitions})
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 20,
                         "batch.size": 1 << 20, "acks": "1"})
    value = b"v" * args.value_bytes
    for i in range(args.records):
        while True:
            try:
                producer.produce(TOPIC, value, key=b"%d" % i, partition=i % args.partitions)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(300):
        raise RuntimeError(f"{broker.kind}: records left unsent")


def reader(spark, connector: str, broker, stream: bool, group: str):
    if connector == "ceiling":
        import spark_ceiling
        return (spark.readStream.format(spark_ceiling.NAME).option("records", args_records)
                .load().select("key", "value"))
    source = spark.readStream if stream else spark.read
    frame = (source.format(connector).option("kafka.bootstrap.servers", broker.address)
             .option("subscribe", TOPIC).option("startingOffsets", "earliest"))
    if connector == "roster" and stream:
        frame = frame.option("group.id", group)
    return frame.load().select("key", "value")


def timed_read(spark, connector: str, broker, stream: bool, n: int, work: Path) -> float:
    """Seconds to read every record; a streaming read also leaves its micro-batch count and
    the seconds inside them in `last_stream`."""
    group = f"spark-{connector}-{broker.kind}-{n}"
    started = time.perf_counter()
    if stream:
        query = (reader(spark, connector, broker, True, group).writeStream.format("noop")
                 .option("checkpointLocation", str(work / f"ck-{group}"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        progress = [p for p in query.recentProgress if p["numInputRows"]]
        rows = sum(p["numInputRows"] for p in progress)
        last_stream.update(batches=len(progress), inside=sum(
            p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000)
    else:
        frame = reader(spark, connector, broker, False, group)
        frame.write.format("noop").mode("overwrite").save()
        rows = None
    seconds = time.perf_counter() - started
    if rows is not None and rows != args_records:
        raise RuntimeError(f"{connector} from {broker.kind}: streamed {rows} rows, expected "
                           f"{args_records}")
    return seconds


args_records = 0
last_stream: dict = {}


def main(argv=None) -> int:
    global args_records
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=400_000)
    p.add_argument("--value-bytes", type=int, default=100)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--spark-kafka", default="4.2.0")
    p.add_argument("--markdown")
    p.add_argument("--test-extras", action="store_true",
                   help="leave hypothesis importable in Spark's Python processes (this venv's "
                        "test extra; a user's install has none)")
    args = p.parse_args(argv)
    args_records = args.records
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        vk.BROKER_CPUS = {cpus[0]}
    work = Path(tempfile.mkdtemp(prefix="versus-spark-"))
    brokers = vk.Brokers(work)
    results: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    load_start = vk.loadavg()
    try:
        roster = brokers.new("roster", "spark").start()
        kafka = brokers.new("kafka", "spark").start()
        for broker in (roster, kafka):
            vk.progress(f"spark: writing {args.records:,} records to {broker.kind}")
            fill(broker, args)
        if not args.test_extras:
            as_installed(work)
        spark = session(args.spark_kafka)
        import pyspark
        # untimed: a session's first query of each connector pays for Python workers, class
        # loading and (Spark's source) the consumer pool
        for connector in ("roster", "kafka"):
            vk.progress(f"spark: warm-up read with the {connector} connector")
            timed_read(spark, connector, roster, False, -1, work)
        vk.progress("spark: warm-up read of the Python source ceiling")
        timed_read(spark, "ceiling", roster, True, -1, work)
        for n in range(args.rounds):
            load = vk.loadavg()
            seconds = timed_read(spark, "ceiling", roster, True, n, work)
            results.setdefault(("ceiling", "-", "streaming"), []).append((seconds, load))
            vk.progress(f"spark round {n + 1}: the Python source ceiling, streaming: "
                        f"{seconds:.2f} s, {args.records / seconds:,.0f} rows/s, "
                        f"{last_stream['batches']} micro-batch(es), "
                        f"{seconds - last_stream['inside']:.2f} s outside them (load {load:.1f})")
            for connector in vk.order(["roster", "kafka"], n):
                for broker in vk.order([roster, kafka], n):
                    for stream in (False, True):
                        load = vk.loadavg()
                        seconds = timed_read(spark, connector, broker, stream, n, work)
                        kind = "streaming" if stream else "batch"
                        results.setdefault((connector, broker.kind, kind), []).append(
                            (seconds, load))
                        batches = (f", {last_stream['batches']} micro-batch(es), "
                                   f"{seconds - last_stream['inside']:.2f} s outside them"
                                   if stream else "")
                        vk.progress(f"spark round {n + 1}: {connector} connector, {kind}, from "
                                    f"{broker.kind}: {seconds:.2f} s, "
                                    f"{args.records / seconds:,.0f} rows/s{batches} "
                                    f"(load {load:.1f})")
        spark.stop()
    finally:
        brokers.stop_all()
        shutil.rmtree(work, ignore_errors=True)
    lines = [f"Spark {pyspark.__version__} local[2], spark-sql-kafka-0-10_2.13:{args.spark_kafka}"
             f"; {args.records:,} records of {args.value_bytes} B in {args.partitions} "
             f"partitions; median of {args.rounds} rounds; Spark's Python processes "
             f"{'with' if args.test_extras else 'without'} the test extra (hypothesis); "
             f"roster {vk.git_tree()}; load "
             f"{load_start:.1f} at the start, {vk.loadavg():.1f} at the end", "",
             "| read | from | roster's connector rows/s | Spark's Kafka source rows/s | "
             "roster ÷ Spark | load (1-min) |", "|---|---|---:|---:|---:|---|"]
    for kind in ("batch", "streaming"):
        for broker in ("roster", "kafka"):
            mine = statistics.median(s for s, _ in results[("roster", broker, kind)])
            theirs = statistics.median(s for s, _ in results[("kafka", broker, kind)])
            loads = [f"{x:.1f}" for _, x in results[("roster", broker, kind)]]
            lines.append(f"| {kind} | {broker} | {args.records / mine:,.0f} | "
                         f"{args.records / theirs:,.0f} | **{theirs / mine:.2f}×** | "
                         f"{', '.join(loads)} |")
    ceiling = statistics.median(s for s, _ in results[("ceiling", "-", "streaming")])
    spark_kafka = {broker: statistics.median(s for s, _ in results[("kafka", broker, "streaming")])
                   for broker in ("roster", "kafka")}
    versus = ", ".join(f"from {broker} **{seconds / ceiling:.2f}×**"
                       for broker, seconds in spark_kafka.items())
    lines += ["", f"Limit of the streaming rows: a Python source doing no I/O "
              f"(bench/spark_ceiling.py, pre-built Arrow batches) streams "
              f"{args.records / ceiling:,.0f} rows/s the same way; ÷ Spark's Kafka source: "
              f"{versus}. roster's connector cannot beat that ratio."]
    report = "\n".join(lines)
    print(report)
    if args.markdown:
        Path(args.markdown).write_text(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
