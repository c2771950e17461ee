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
micro-batch once per task even when Spark replays it. With `.option("shareGroup", g)` the
streaming source reads a share group instead (KIP-932; roster.spark.share_source): records are
acquired per micro-batch and acknowledged once Spark has completed it. See docs/spark.md.

pyspark is imported only when the data source itself is needed (`register`,
`RosterDataSource`), so the option and offset helpers work without it.
"""
from __future__ import annotations

__all__ = ["SCHEMA", "DataLossError", "OptionError", "RosterDataSource", "register"]


# Spark 4's default spark.redaction.regex
DEFAULT_REDACTION_REGEX = "(?i)secret|password|token|access[.]?key|credential"
# what must be redacted in a query plan: option keys and values that carry a password
MUST_REDACT = {"the option sasl.password": "kafka.sasl.password",
               "a sasl.jaas.config value": 'username="u" password="p";'}


def redaction_gaps(regex: str) -> list[str]:
    """What of MUST_REDACT a spark.redaction.regex lets through (Spark redacts an option whose
    key or value matches it). Java and Python regexes agree on the usual patterns; one Python
    cannot read counts as matching nothing."""
    import re
    try:
        pattern = re.compile(regex)
    except re.error:
        return list(MUST_REDACT)
    return [what for what, text in MUST_REDACT.items() if not pattern.search(text)]


def register(spark) -> None:
    """Make format("roster") available in this SparkSession, and warn when the session's
    spark.redaction.regex would let a SASL password into query plans and the UI."""
    import logging

    from roster.spark.source import RosterDataSource
    spark.dataSource.register(RosterDataSource)
    regex = spark.sparkContext.getConf().get("spark.redaction.regex", DEFAULT_REDACTION_REGEX)
    gaps = redaction_gaps(regex)
    if gaps:
        logging.getLogger("roster.spark").warning(
            "spark.redaction.regex does not match %s: query plans and the Spark UI would show "
            "SASL passwords given as options; make it match 'password' (Spark's default does)",
            " or ".join(gaps))


def __getattr__(name: str):
    if name in ("SCHEMA", "DataLossError", "RosterDataSource"):
        from roster.spark import source
        return getattr(source, name)
    if name == "OptionError":
        from roster.spark.options import OptionError
        return OptionError
    raise AttributeError(f"module 'roster.spark' has no attribute {name!r}")
