"""What a Kafka user types first, through the real `roster` command (.venv/bin/roster): Kafka's
spellings and option order, ports out of range, help for every action, and a listener that
wants TLS, SASL, or is no Kafka listener at all."""
from __future__ import annotations

import re
import socket

import pytest

from tests.support.cli import ok, refused, roster, table
from tests.support.process import BrokerProcess
from tests.support.security import SecureBroker, make_pki, secure_settings

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("cli-habits")]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("cli-habits")).start()
    yield broker
    broker.stop()


def test_kafka_spellings_and_options_anywhere(broker):
    b = broker.bootstrap
    # as kafka-topics --bootstrap-server B --create --topic T ...
    created = roster("--bootstrap-server", b, "topics", "--create", "--topic", "habits",
                     "--partitions", "2", "--replication-factor", "1")
    assert ok(created) == "Created topic habits.\n"
    assert ok(roster("--bootstrap-server", b, "topics", "list")).split() == ["habits"]
    assert ok(roster("topics", "list", "--bootstrap-servers", b)).split() == ["habits"]
    assert "PartitionCount: 2" in ok(roster("topics", "--bootstrap-servers", b, "describe",
                                            "--topic", "habits"))
    three = refused(roster("topics", "create", "--topic", "habits-3", "--replication-factor",
                           "3", "--bootstrap-server", b))
    assert "--replication-factor" in three and "single broker" in three
    assert "habits-3" not in ok(roster("topics", "list", "--bootstrap-server", b))

    from confluent_kafka import Consumer, TopicPartition
    committer = Consumer({"bootstrap.servers": b, "group.id": "habits-group"})
    committer.commit(offsets=[TopicPartition("habits", 1, 0)], asynchronous=False)
    committer.close()
    for argv in (["offsets", "describe", "--group", "habits-group", "--bootstrap-server", b],
                 ["--bootstrap-server", b, "offsets", "--group", "habits-group", "describe"],
                 ["groups", "describe", "--offsets", "--group", "habits-group",
                  "--bootstrap-servers", b],
                 # as kafka-consumer-groups --bootstrap-server B --describe --group G
                 ["groups", "--bootstrap-server", b, "--describe", "--group", "habits-group"]):
        rows = table(ok(roster(*argv)))
        assert [(r["GROUP"], r["TOPIC"], r["PARTITION"]) for r in rows] == \
            [("habits-group", "habits", "1")], argv
    which = refused(roster("offsets", "describe", "--bootstrap-server", b))
    assert "--group" in which and "usage: roster offsets describe" in which
    # as kafka-consumer-groups --delete-offsets --group G --topic T:P
    deleted = roster("groups", "--delete-offsets", "--group", "habits-group", "--topic",
                     "habits:1", "--bootstrap-server", b)
    assert ok(deleted).split() == ["habits", "1", "ok"]


@pytest.mark.parametrize("option, value", [
    ("--port", "70000"), ("--port", "65536"), ("--port", "-1"), ("--port", "http"),
    ("--http-port", "99999"), ("--http-port", "65536")])
def test_a_port_out_of_range_is_refused_by_name(option, value, tmp_path):
    extra = [] if option == "--port" else ["--port", "0"]
    result = roster("serve", *extra, option, value, "--data-dir", str(tmp_path / "data"))
    complaint = refused(result)
    assert f"argument {option}: " in complaint and "0-65535" in complaint
    assert "listening" not in result.stdout and not (tmp_path / "data").exists()


@pytest.mark.parametrize("setting, complaint", [
    ("http.port=70000", "http.port=70000: not a port (0-65535)"),
    ("num.partitions=two", "num.partitions='two': expected an integer")])
def test_a_bad_setting_is_named_in_plain_words(setting, complaint, tmp_path):
    result = roster("serve", "--port", "0", "--set", setting, "--data-dir", str(tmp_path / "d"))
    assert complaint in refused(result) and "listening" not in result.stdout


def test_every_action_has_help():
    for command in ("topics", "groups", "offsets", "users", "acls"):
        text = ok(roster(command, "--help"))
        actions = text.split("positional arguments:")[1].split("options:")[0]
        assert re.search(r"^    (describe|list)\s+\S", actions, re.MULTILINE), text
        bare = re.findall(r"^    (\S+)\s*$", actions, re.MULTILINE)   # a name, no text
        assert not bare, f"{command}: actions without help: {bare}\n{text}"
    report = ok(roster("report", "--help"))
    assert "--command-config" in report and "--out" in report


def test_type_errors_name_the_option(broker):
    for argv, option in ((["topics", "create", "t", "--partitions", "two"], "--partitions"),
                         (["topics", "create", "t", "--partitions", "0"], "--partitions"),
                         (["groups", "expect", "g", "--size", "x"], "--size"),
                         (["users", "add", "u", "--password-file", "-", "--iterations", "z"],
                          "--iterations")):
        assert f"argument {option}: " in refused(
            roster(*argv, "--bootstrap-server", broker.bootstrap)), argv


def test_report_out_names_a_directory_or_gains_html(tmp_path):
    from roster.admin.arguments import report_path
    assert report_path(tmp_path, "orders") == tmp_path / "orders.html"
    assert report_path(tmp_path, None) == tmp_path / "rebalance-report.html"
    assert report_path(tmp_path, "a/b c") == tmp_path / "a_b_c.html"
    assert report_path(tmp_path / "report", None) == tmp_path / "report.html"
    assert report_path(tmp_path / "r.HTML", "g") == tmp_path / "r.HTML"
    missing = refused(roster("report", "--out", str(tmp_path / "nowhere" / "r.html")))
    assert "--out" in missing and "does not exist" in missing


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-habits-secured")
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    http_port = probe.getsockname()[1]
    probe.close()
    broker = SecureBroker(root / "data", secure_settings(
        make_pki(root / "pki"), **{"http.port": str(http_port)})).start()
    yield broker, f"127.0.0.1:{http_port}"
    broker.stop()


@pytest.mark.parametrize("listener, expected", [
    ("SSL", "security.protocol=SSL"),
    ("SASL_SSL", "security.protocol=SSL"),
    ("SASL_PLAINTEXT", "security.protocol=SASL_PLAINTEXT"),
    ("HTTP", "HTTP port"),
])
def test_a_listener_that_wants_more_says_what_to_pass(secured, listener, expected):
    broker, http = secured
    address = http if listener == "HTTP" else broker.listener(listener)
    # (the HTTP server waits 10 s for a request head and the client as long for an answer:
    # only an answer at once, a 400 to a head that ends in the first request, says "HTTP")
    result = roster("topics", "list", "--bootstrap-server", address)
    assert result.returncode == 1 and expected in result.stderr, result.stderr
    assert address in result.stderr and ("--command-config" in result.stderr
                                         or listener == "HTTP"), result.stderr


def test_a_console_port_already_taken_is_named(broker):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        answer = roster("console", "--bootstrap-server", broker.bootstrap,
                        "--http-port", str(port))
    assert f"roster console: cannot listen on 127.0.0.1:{port}: " in refused(answer, 1)
