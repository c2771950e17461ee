"""roster.spark: a Spark data source (format "roster") for Kafka-protocol brokers, written with
Spark's Python Data Source API (pyspark >= 4.2, pyarrow) — no JVM connector jar.

    import roster.spark
    roster.spark.register(spark)
    clicks = (spark.readStream.format("roster")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "clicks").option("group.id", "dashboards")
              .option("group.instance.id", "dashboards-1").load())

The streaming source is a real member of the consumer group (a static one with
group.instance.id) and commits what each micro-batch processed to it; the sink writes each
micro-batch once per task even when Spark replays it. See docs/spark.md.

pyspark is imported only when the data source itself is needed (`register`,
`RosterDataSource`), so the option and offset helpers work without it.
"""
from __future__ import annotations

__all__ = ["SCHEMA", "DataLossError", "OptionError", "RosterDataSource", "register"]


def register(spark) -> None:
    """Make format("roster") available in this SparkSession."""
    from roster.spark.source import RosterDataSource
    spark.dataSource.register(RosterDataSource)


def __getattr__(name: str):
    if name in ("SCHEMA", "DataLossError", "RosterDataSource"):
        from roster.spark import source
        return getattr(source, name)
    if name == "OptionError":
        from roster.spark.options import OptionError
        return OptionError
    raise AttributeError(f"module 'roster.spark' has no attribute {name!r}")
