"""The SparkSession every Spark test runs on: local[2], loopback only, the settings that keep a
test's micro-batches quick, and roster's data source registered. Spark's Python workers run
this venv's interpreter, which has roster installed."""
from __future__ import annotations

import os
import sys

# The driver JVM's default thread stack size (see local_session), and C1 only: the tests'
# queries are small, and C2's compiler threads cost the JVM about a third of its CPU
# (56 s -> 36 s over tests/spark/test_stream.py, test_sink.py and test_batch.py) on a
# machine the whole suite keeps busy.
C1_ONLY = "-XX:TieredStopAtLevel=1"
DRIVER_JAVA_OPTIONS = f"-Xss16m {C1_ONLY}"


def c1_environment() -> dict[str, str]:
    """The environment for a child process that starts its own SparkSession (`make run`'s job,
    `roster report`): its driver JVM runs C1 only too, the child's own settings untouched."""
    return {**os.environ, "PYSPARK_SUBMIT_ARGS": f"--driver-java-options {C1_ONLY} pyspark-shell"}


def loopback_environment() -> None:
    """Spark's local host is the external interface unless SPARK_LOCAL_IP says otherwise (the
    driver settings below do not cover it); the tests run on loopback only."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"


def local_session(app_name: str, **configs: str):
    """A new (or the running) local[2] session with the test settings, plus `configs`."""
    from pyspark.sql import SparkSession

    import roster.spark
    loopback_environment()
    builder = (SparkSession.builder.master("local[2]").appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
               .config("spark.sql.adaptive.enabled", "false")
               .config("spark.sql.streaming.stopTimeout", "10s")
               # Spark 4.3 decides whether a stopped foreachBatch query was interrupted by
               # matching the Py4J error text with (.|\r\n|\r|\n)*, which recurses once per
               # character: with the default 1 MB thread stack the stream thread dies with a
               # StackOverflowError (printed, ~1,000 regex frames) out of its stop handling
               # whenever stop() lands inside a Py4J call of the batch function. A larger
               # stack lets the match finish.
               .config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)
               .config("spark.pyspark.python", sys.executable))
    for key, value in configs.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    roster.spark.register(session)
    return session
