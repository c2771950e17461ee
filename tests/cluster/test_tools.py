"""The `roster topics|groups|offsets|users|acls|transactions` tools on a three-node Kafka
cluster, given all three brokers as Kafka's tools are: group requests go to the group's
coordinator, offsets to the partitions' leaders, lists to every broker; and the same answers
once the coordinator's node is killed. Where a command needs what only roster has, it says so
in one line."""
from __future__ import annotations

import asyncio
import html
import re
import threading
import time

import pytest

from roster.cli import main
from roster.client.consumer import Consumer
from roster.client.producer import Producer
from roster.client.transactional_producer import TransactionalProducer
from tests.support.cli import table
from tests.support.kafka_peer import unique_name

pytestmark = pytest.mark.xdist_group("kafka_cluster")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """`roster ARGV` in this process (a child interpreter per command would cost seconds)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys, *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    return out


def _fill(bootstrap: str, topic: str, group: str) -> None:
    """30 records over the three partitions; the group reads 20 and commits them."""
    async def scenario():
        producer = Producer(bootstrap)
        for i in range(30):
            await producer.send(topic, f"v{i}".encode(), partition=i % 3)
        await producer.close()
        # a short session: were its LeaveGroup lost to a loaded machine, the member still
        # goes soon, and the group is Empty for the reset below
        consumer = Consumer(bootstrap, group, session_timeout_ms=6_000,
                            heartbeat_interval_ms=1_000)
        await consumer.subscribe([topic])
        read = 0
        while read < 20:
            read += len(await consumer.poll(timeout_ms=500, max_records=20 - read))
        await consumer.commit()
        await consumer.leave()

    asyncio.run(scenario())


def test_topics_groups_and_offsets_follow_coordinator_and_leaders(cluster, capsys):
    topic, group = unique_name("tools"), unique_name("tools-group")
    boot = ("--bootstrap-server", cluster.bootstrap)
    ok(capsys, "topics", "create", topic, "--partitions", "3", *boot)
    cluster.wait_topic(topic, 3)   # until every broker knows it, as Kafka's tools need too
    described = ok(capsys, "topics", "describe", topic, *boot)
    leaders = {p: cluster.leader_of(topic, p) for p in range(3)}
    for p, leader in leaders.items():
        assert f"Partition: {p}\tLeader: {leader}\t" in described, described
    _fill(cluster.bootstrap, topic, group)

    def offsets():
        rows = table(ok(capsys, "offsets", "describe", "--group", group, *boot))
        return {int(r["PARTITION"]): (int(r["CURRENT-OFFSET"]), int(r["LOG-END-OFFSET"]))
                for r in rows}

    before = offsets()
    assert sum(c for c, _ in before.values()) == 20
    assert all(end == 10 for _, end in before.values())
    assert group in ok(capsys, "groups", "list", *boot)   # ListGroups asks every broker

    coordinator = cluster.coordinator_of(group)
    cluster.kill9(coordinator)
    cluster.wait_fenced(coordinator)
    # the same answers from the two left, whichever node is first in the bootstrap list
    assert offsets() == before
    state = ok(capsys, "groups", "describe", group, "--state", *boot).splitlines()[1]
    moved_to = cluster.coordinator_of(group)
    port = cluster.node(moved_to).port
    assert moved_to != coordinator and f"127.0.0.1:{port}  ({moved_to})" in state, state
    deadline = time.monotonic() + 60   # Kafka resets the offsets of an Empty group only
    while "  Empty  " not in ok(capsys, "groups", "describe", group, "--state", *boot):
        assert time.monotonic() < deadline, "the group never became Empty"
        threading.Event().wait(0.5)
    ok(capsys, "offsets", "reset", "--group", group, "--topic", topic, "--to-earliest",
       "--execute", *boot)
    assert offsets() == {p: (0, 10) for p in range(3)}
    cluster.restart(coordinator)
    ok(capsys, "offsets", "delete", "--group", group, "--topic", topic, *boot)
    ok(capsys, "groups", "delete", group, *boot)
    assert group not in ok(capsys, "groups", "list", *boot)


def test_users_acls_and_transactions(cluster, capsys, tmp_path):
    boot = ("--bootstrap-server", cluster.bootstrap)
    user, topic, txn_id = unique_name("user"), unique_name("txn-tools"), unique_name("tid")
    password = tmp_path / "password"
    password.write_text("a-secret\n")
    ok(capsys, "users", "add", user, "--password-file", str(password), *boot)
    assert user in ok(capsys, "users", "list", *boot)
    ok(capsys, "acls", "add", "--allow-principal", f"User:{user}", "--operation", "Read",
       "--topic", topic, *boot)
    listed = ok(capsys, "acls", "list", "--topic", topic, *boot)
    assert f"User:{user}" in listed and "READ" in listed.upper()
    ok(capsys, "acls", "remove", "--allow-principal", f"User:{user}", "--operation", "Read",
       "--topic", topic, *boot)
    assert f"User:{user}" not in ok(capsys, "acls", "list", "--topic", topic, *boot)
    ok(capsys, "users", "delete", user, *boot)
    assert user not in ok(capsys, "users", "list", *boot)

    # an open transaction: described by its own coordinator, listed from every broker,
    # aborted on the partition's leader
    cluster.create_topic(topic, partitions=3)

    async def open_transaction():
        producer = TransactionalProducer(cluster.bootstrap, txn_id)
        await producer.init_transactions()
        producer.begin_transaction()
        partition, offset = await producer.send(topic, b"hanging", partition=1)
        await producer.close()   # never committed
        return offset

    start = asyncio.run(open_transaction())
    row = table(ok(capsys, "transactions", "describe", txn_id, *boot))[0]
    assert row["CoordinatorId"] == str(cluster.transaction_coordinator_of(txn_id)), row
    assert row["TransactionState"] == "Ongoing"
    listed = {r["TransactionalId"]: r for r in table(ok(capsys, "transactions", "list", *boot))}
    assert listed[txn_id]["Coordinator"] == row["CoordinatorId"], listed
    out = ok(capsys, "transactions", "abort", "--topic", topic, "--partition", "1",
             "--start-offset", str(start), *boot)
    assert "Aborted the transaction" in out


def test_what_only_roster_has_is_said_in_one_line(cluster, capsys):
    boot = ("--bootstrap-server", cluster.bootstrap)
    group = unique_name("not-roster")
    for argv, line in (
            (("groups", "history", group),
             "group history needs roster's flight recorder (__roster_group_events)"),
            (("groups", "expect", group),
             "pre-registered static members are roster's own group configs"),
            (("groups", "expect", group, "--instance-ids", "a,b"),
             "pre-registered static members are roster's own group configs")):
        code, out, err = run(capsys, *argv, *boot)
        assert code == 1 and not out, (argv, out, err)
        assert err.startswith("roster: this cluster is not roster: ") and line in err, err
        assert len(err.strip().splitlines()) == 1, err


def test_report_on_kafka_writes_the_groups_tables(cluster, capsys, tmp_path):
    """No flight recorder on Kafka, so no rebalance history: the report still writes each
    group's committed offsets and lag as the brokers give them (here with the group's
    coordinator killed -9), under the line that says why the rest is absent, and that line
    goes to stderr too."""
    topic, group = unique_name("report"), unique_name("report-group")
    cluster.create_topic(topic, partitions=3)
    _fill(cluster.bootstrap, topic, group)
    out_file = tmp_path / "report.html"
    with cluster.down(cluster.coordinator_of(group)):   # the report asks the nodes left
        code, out, err = run(capsys, "report", "--group", group, "--out", str(out_file),
                             "--bootstrap-server", cluster.bootstrap)
    line = ("roster report: this cluster is not roster: the rebalance history needs roster's "
            "flight recorder (__roster_group_events)")
    assert code == 0 and err.startswith(line) and len(err.strip().splitlines()) == 1, err
    assert f"wrote {out_file}: 1 group(s)" in out, out
    page = out_file.read_text(encoding="utf-8")
    assert html.escape("the rebalance history needs roster's flight recorder") in page
    rows = {int(m["partition"]): (int(m["committed"]), int(m["end"]), int(m["lag"]))
            for m in re.finditer(
                rf'class="offset-row" data-topic="{re.escape(topic)}" '
                r'data-partition="(?P<partition>\d+)" data-committed="(?P<committed>\d+)" '
                r'data-end="(?P<end>\d+)" data-lag="(?P<lag>\d+)"', page)}
    # what the brokers hold: 10 records a partition, 20 of them read and committed
    assert rows and set(rows) <= {0, 1, 2}, page
    assert all(end == 10 for _, end, _ in rows.values()), rows
    assert sum(c for c, _, _ in rows.values()) == 20, rows
    assert all(lag == end - c for c, end, lag in rows.values()), rows
    assert f'<b data-lag="{sum(lag for _, _, lag in rows.values())}">' in page   # lag now
