"""The Spark connector against a secured broker (SASL_SSL, SCRAM-SHA-512, trustme certificates
made in the test's directory): a streaming read as a static group member and a streaming write,
configured as a Spark user configures Spark's Kafka source (kafka.-prefixed Java names,
sasl.jaas.config), and a batch read through spark.sql. The password must not show in the query
plan, the streaming progress, the SQL plan, the checkpoint, Spark's log (captured at INFO while
the test runs) or the reader's own log (ROSTER_SPARK_LOG); a wrong password fails the query
naming the problem, without the password."""
from __future__ import annotations

import asyncio
import json
import logging
import pickle

import pytest

from roster.admin.client import AdminClient
from roster.admin.groups import describe
from roster.admin.topics import create
from roster.client.producer import Producer
from roster.security.client import ClientSecurity
from roster.spark.options import read_settings, write_settings
from roster.spark.wire import run_sync
from tests.spark.helpers import wait_until
from tests.support.security import PASSWORDS, SecureBroker, add_users_offline, make_pki, secure_settings

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

SECRET = PASSWORDS["alice"]
WRONG = "wrong-password-6403"
COUNT = 6


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark-security")
    pki = make_pki(root / "pki")
    add_users_offline(root / "data", root)
    broker = SecureBroker(root / "data", secure_settings(pki)).start()
    yield broker, pki
    broker.stop()


def jaas(user: str, password: str) -> str:
    return ("org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{password}";')


def java_options(broker, pki, password=SECRET) -> dict[str, str]:
    """What a Spark job reading Apache Kafka over SASL_SSL already carries."""
    return {"kafka.bootstrap.servers": broker.listener("SASL_SSL"),
            "kafka.security.protocol": "SASL_SSL",
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": str(pki.ca),
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": jaas("alice", password)}


def rdkafka_options(broker, pki) -> dict[str, str]:
    """librdkafka's names, without the prefix."""
    return {"bootstrap.servers": broker.listener("SASL_SSL"), "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(pki.ca), "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice", "sasl.password": SECRET}


def lower(options):
    return {k.lower(): v for k, v in options.items()}


def test_security_options_both_spellings(secured):
    broker, pki = secured
    java = read_settings(lower({**java_options(broker, pki), "subscribe": "t"}), streaming=True)
    assert (java.security.protocol, java.security.mechanism, java.security.username,
            java.security.password, java.security.ca_location) == \
        ("SASL_SSL", "SCRAM-SHA-512", "alice", SECRET, str(pki.ca))
    rdkafka = write_settings(lower({**rdkafka_options(broker, pki), "topic": "t"}))
    assert (rdkafka.security.mechanism, rdkafka.security.password) == ("SCRAM-SHA-256", SECRET)
    for settings in (java, rdkafka):
        assert SECRET not in repr(settings)  # executors get it pickled, logs never see it
        assert pickle.loads(pickle.dumps(settings)) == settings
    assert read_settings(lower({"kafka.bootstrap.servers": "h:1", "subscribe": "t"}),
                         streaming=True).security is None


class JvmLog:
    """Spark's log4j output at INFO while the test runs, through an appender of its own."""

    def __init__(self, spark) -> None:
        self.spark = spark
        jvm = spark._jvm
        self.writer = jvm.java.io.StringWriter()
        layout = jvm.org.apache.logging.log4j.core.layout.PatternLayout.createDefaultLayout()
        self.appender = jvm.org.apache.logging.log4j.core.appender.WriterAppender \
            .createAppender(layout, None, self.writer, "roster-security-test", False, True)
        self.appender.start()
        self.context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
        self.root = self.context.getConfiguration().getRootLogger()
        self.root.addAppender(self.appender, jvm.org.apache.logging.log4j.Level.INFO, None)
        spark.sparkContext.setLogLevel("INFO")
        self.context.updateLoggers()

    def stop(self) -> str:
        self.spark.sparkContext.setLogLevel("ERROR")
        self.root.removeAppender("roster-security-test")
        self.context.updateLoggers()
        self.appender.stop()
        return self.writer.toString()


class CapturedLogs:
    """Spark's log, this process's log and the streaming reader's own log
    (ROSTER_SPARK_LOG=DEBUG in its runner process: the data source is registered again with
    that environment, and once more without it when done)."""

    def __init__(self, spark, directory, caplog) -> None:
        import roster.spark
        self.spark, self.caplog = spark, caplog
        caplog.set_level(logging.DEBUG, logger="roster")  # (py4j's DEBUG log shows every call)
        self.reader_log = directory / "reader.log"
        self.environment = spark.sparkContext.environment
        self.environment.update({"ROSTER_SPARK_LOG": "DEBUG",
                                 "ROSTER_SPARK_LOG_FILE": str(self.reader_log)})
        roster.spark.register(spark)
        self.jvm = JvmLog(spark)
        self.texts: dict[str, str] | None = None

    def finish(self) -> dict[str, str]:
        import roster.spark
        if self.texts is None:
            self.texts = {"spark": self.jvm.stop()}
            self.environment.pop("ROSTER_SPARK_LOG", None)
            self.environment.pop("ROSTER_SPARK_LOG_FILE", None)
            roster.spark.register(self.spark)
            self.texts["driver"] = self.caplog.text
            self.texts["reader"] = (self.reader_log.read_text() if self.reader_log.exists()
                                    else "")
        return self.texts


@pytest.fixture
def captured_logs(spark, tmp_path, caplog):
    captured = CapturedLogs(spark, tmp_path, caplog)
    yield captured
    captured.finish()


def produce_over_sasl_ssl(broker, pki, topic: str) -> None:
    security = ClientSecurity.from_config({
        "security.protocol": "SASL_SSL", "ssl.ca.location": str(pki.ca),
        "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "bob",
        "sasl.password": PASSWORDS["bob"]})

    async def produce():
        producer = Producer(broker.listener("SASL_SSL"), security=security)
        try:
            for i in range(COUNT):
                await producer.send(topic, f"click-{i}".encode(), key=f"k{i}".encode(),
                                    partition=i % 2)
        finally:
            await producer.close()
    asyncio.run(produce())


def log_end(broker, topic: str, partitions: int) -> int:
    async def ends(b):
        return await b.list_offsets([(topic, p) for p in range(partitions)], -1)
    return sum(run_sync(ends, bootstrap=broker.listener("PLAINTEXT")).values())


def committed_sum(broker) -> int:
    """The sum of sec-pipeline's committed offsets on sec-clicks (-1 for each partition without
    one)."""
    async def committed(b):
        return await b.committed("sec-pipeline", [("sec-clicks", 0), ("sec-clicks", 1)])
    offsets = run_sync(committed, bootstrap=broker.listener("PLAINTEXT"))
    return sum(o for o, _ in offsets.values())


def test_stream_as_static_member_and_write_over_sasl_ssl(spark, secured, tmp_path,
                                                         captured_logs):
    broker, pki = secured
    with AdminClient(broker.listener("PLAINTEXT")) as admin:
        create(admin, "sec-clicks", 2, {})
        create(admin, "sec-copied", 1, {})
    produce_over_sasl_ssl(broker, pki, "sec-clicks")

    reader = spark.readStream.format("roster").options(**java_options(broker, pki)) \
        .option("subscribe", "sec-clicks").option("group.id", "sec-pipeline") \
        .option("group.instance.id", "sec-pipeline-1").option("startingOffsets", "group") \
        .option("session.timeout.ms", "30000")
    source = reader.load()
    writer = source.select("key", "value").writeStream.format("roster") \
        .options(**rdkafka_options(broker, pki)).option("topic", "sec-copied") \
        .option("checkpointLocation", str(tmp_path / "checkpoint")) \
        .trigger(processingTime="300 milliseconds")
    query = writer.queryName("sec_copy").start()
    try:
        wait_until(lambda: log_end(broker, "sec-copied", 1) >= COUNT, 120,
                   "the copied records", queries=[query])
        with AdminClient(broker.listener("PLAINTEXT")) as admin:
            group = describe(admin, "sec-pipeline")
        assert [m.group_instance_id for m in group.members] == ["sec-pipeline-1"]
        wait_until(lambda: query.lastProgress is not None, 30, "a progress report",
                   queries=[query])
        # the source commits a batch to the group when Spark plans the next one: wait for it
        # before stopping (a loaded machine stopped the query first, and nothing was committed)
        wait_until(lambda: committed_sum(broker) == COUNT, 60,
                   "the group's commit of every record read", queries=[query])
        shown = {
            "df.explain": source._jdf.queryExecution().toString(),
            "query.explain": query._jsq.explainInternal(True),
            "progress": json.dumps(query.recentProgress, default=str),
            "status": json.dumps(query.status, default=str),
        }
    finally:
        query.stop()

    # the group's committed offsets: every record the member read
    assert committed_sum(broker) == COUNT
    # the copies and, after them, one commit marker per write task's transaction: the read
    # below finds each record once
    assert log_end(broker, "sec-copied", 1) > COUNT

    # a batch read through spark.sql, the password in the view's OPTIONS
    options = ", ".join(f"`{k}` '{v}'" for k, v in {**java_options(broker, pki),
                                                     "subscribe": "sec-copied"}.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW sec_copied USING roster OPTIONS ({options})")
    try:
        rows = spark.sql("SELECT CAST(value AS STRING) AS v FROM sec_copied").collect()
        assert sorted(r.v for r in rows) == [f"click-{i}" for i in range(COUNT)]
        shown["sql explain"] = "\n".join(
            r.plan for r in spark.sql("EXPLAIN EXTENDED SELECT * FROM sec_copied").collect())
        shown["sql describe"] = "\n".join(
            str(r) for r in spark.sql("DESCRIBE EXTENDED sec_copied").collect())
    finally:
        spark.catalog.dropTempView("sec_copied")

    # the plans show the options, the secrets redacted (spark.redaction.regex)
    assert "kafka.security.protocol=SASL_SSL" in shown["df.explain"], shown["df.explain"]
    assert "kafka.sasl.jaas.config=*********(redacted)" in shown["df.explain"]
    for where, text in shown.items():
        assert SECRET not in text, f"the password shows in {where}"
    checkpoint = [p for p in (tmp_path / "checkpoint").rglob("*") if p.is_file()]
    assert any(p.parent.name == "offsets" for p in checkpoint)
    for path in checkpoint:
        assert SECRET.encode() not in path.read_bytes(), f"the password is in {path}"
    logs = captured_logs.finish()
    assert "sec-pipeline" in logs["reader"], "the reader's log was not captured"
    assert "sec_copy" in logs["spark"], "Spark's log was not captured"
    for where, text in logs.items():
        assert SECRET not in text, f"the password shows in the {where} log"


def test_wrong_password_fails_the_query_clearly(spark, secured, tmp_path):
    broker, pki = secured
    options = java_options(broker, pki, password=WRONG)
    with pytest.raises(Exception) as caught:
        spark.read.format("roster").options(**options).option("subscribe", "sec-clicks") \
            .load().count()
    message = str(caught.value)
    assert "SASL SCRAM-SHA-512 authentication as user 'alice'" in message, message[-2000:]
    assert WRONG not in message

    query = spark.readStream.format("roster").options(**options) \
        .option("subscribe", "sec-clicks").option("group.id", "sec-refused").load() \
        .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "cp")).start()
    try:
        with pytest.raises(Exception) as failed:
            query.awaitTermination(60)
        error = str(failed.value)
    finally:
        if query.isActive:
            query.stop()
    assert "authentication as user 'alice'" in error and WRONG not in error, error[-2000:]


def test_redaction_regex_check():
    from roster.spark import DEFAULT_REDACTION_REGEX, redaction_gaps
    assert redaction_gaps(DEFAULT_REDACTION_REGEX) == []
    assert redaction_gaps("(?i)password") == []
    assert redaction_gaps("(?i)token|secret") == ["the option sasl.password",
                                                  "a sasl.jaas.config value"]
    assert redaction_gaps("(?i)sasl\\.password") == ["a sasl.jaas.config value"]
    assert redaction_gaps("(unclosed") == ["the option sasl.password", "a sasl.jaas.config value"]
