"""The SparkSession every Spark test runs on: local[2], loopback only, the settings that keep a
test's micro-batches quick, and roster's data source registered. Spark's Python workers run
this venv's interpreter, which has roster installed."""
from __future__ import annotations

import os
import sys


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
               .config("spark.pyspark.python", sys.executable))
    for key, value in configs.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    roster.spark.register(session)
    return session
