"""`roster offsets reset` and the describe views as a Kafka user runs them (.venv/bin/roster
against a real broker): a reset is a dry run unless --execute, as kafka-consumer-groups
--reset-offsets; offsets describe shows the partition's owner beside its lag."""
from __future__ import annotations

import pytest

from tests.support import groups
from tests.support.cli import ok, refused, roster, table
from tests.support.process import BrokerProcess

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("cli-offsets")]

TOPIC, OTHER = "reset-me", "reset-other"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("cli-offsets"),
                           {"group.initial.rebalance.delay.ms": "0"}).start()
    groups.create_topic(broker.bootstrap, TOPIC, 3)
    groups.create_topic(broker.bootstrap, OTHER, 1)
    broker.produced = groups.produce_known(broker.bootstrap, TOPIC, 3, 30, "reset")  # 10 each
    groups.produce_known(broker.bootstrap, OTHER, 1, 4, "other")
    yield broker
    broker.stop()


def commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                        asynchronous=False)
    finally:
        consumer.close()


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """As a real client reads them (confluent-kafka's AdminClient)."""
    return {(TOPIC, p): o for p, o in
            groups.committed_offsets_confluent(bootstrap, group, TOPIC).items()} | \
        {(OTHER, p): o for p, o in
         groups.committed_offsets_confluent(bootstrap, group, OTHER).items()}


def plan(stdout: str) -> dict[tuple[str, int], int]:
    rows = table(stdout)
    assert rows and list(rows[0]) == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], stdout
    return {(r["TOPIC"], int(r["PARTITION"])): int(r["NEW-OFFSET"]) for r in rows}


def test_reset_without_execute_changes_nothing_and_shows_the_plan(broker):
    group = "dry-group"
    before = {(TOPIC, 0): 7, (TOPIC, 1): 8, (OTHER, 0): 3}
    commit(broker.bootstrap, group, before)
    b = broker.bootstrap
    default = roster("offsets", "reset", group, "--topic", TOPIC, "--to-earliest",
                     "--bootstrap-server", b)
    assert plan(ok(default)) == {(TOPIC, 0): 0, (TOPIC, 1): 0, (TOPIC, 2): 0}
    assert "--execute" in default.stderr and "nothing was changed" in default.stderr
    explicit = roster("offsets", "reset", "--group", group, "--all-topics", "--to-latest",
                      "--dry-run", "--bootstrap-server", b)
    assert plan(ok(explicit)) == {(TOPIC, 0): 10, (TOPIC, 1): 10, (OTHER, 0): 4}
    assert "WARN" not in explicit.stderr     # asked for a dry run: nothing to warn about
    assert committed(b, group) == before

    executed = roster("offsets", "reset", "--group", group, "--topic", f"{TOPIC}:0,2",
                      "--to-earliest", "--execute", "--bootstrap-server", b)
    assert plan(ok(executed)) == {(TOPIC, 0): 0, (TOPIC, 2): 0}
    assert committed(b, group) == {**before, (TOPIC, 0): 0, (TOPIC, 2): 0}


def test_every_target_of_kafka(broker):
    group, b = "targets-group", broker.bootstrap
    commit(b, group, {(TOPIC, 0): 5, (TOPIC, 1): 2})

    def planned(*target: str) -> tuple[dict, str]:
        result = roster("offsets", "reset", group, "--topic", TOPIC, *target, "--dry-run",
                        "--bootstrap-server", b)
        return plan(ok(result)), result.stderr

    offsets, warned = planned("--to-offset", "40")    # beyond the log end: moved to it
    assert offsets == {(TOPIC, p): 10 for p in range(3)} and "higher than latest" in warned
    assert planned("--to-offset", "4")[0] == {(TOPIC, p): 4 for p in range(3)}
    shifted = roster("offsets", "reset", group, "--topic", f"{TOPIC}:0,1", "--shift-by", "-3",
                     "--bootstrap-server", b)
    assert plan(ok(shifted)) == {(TOPIC, 0): 2, (TOPIC, 1): 0}   # 2-3 stops at the log start
    no_base = roster("offsets", "reset", group, "--topic", TOPIC, "--shift-by", "1",
                     "--bootstrap-server", b)
    assert no_base.returncode == 1 and f"{TOPIC}-2" in no_base.stderr
    assert planned("--to-current")[0] == {(TOPIC, 0): 5, (TOPIC, 1): 2, (TOPIC, 2): 10}
    assert planned("--to-datetime", "2000-01-01T00:00:00.000")[0] == \
        {(TOPIC, p): 0 for p in range(3)}
    offsets, warned = planned("--to-datetime", "2999-01-01T00:00:00Z")
    assert offsets == {(TOPIC, p): 10 for p in range(3)} and "no record at or after" in warned
    # the records carry times from 2023-11-14T22:13:20Z on, one second apart, round-robin
    # over the partitions: the 16th record, at +15 s, is offset 5 of partition 0
    assert planned("--to-datetime", "2023-11-14T22:13:35.000Z")[0] == \
        {(TOPIC, p): 5 for p in range(3)}
    assert planned("--to-datetime", "2023-11-14T23:13:35+01:00")[0] == \
        {(TOPIC, p): 5 for p in range(3)}
    assert planned("--by-duration", "P1D")[0] == {(TOPIC, p): 10 for p in range(3)}
    assert planned("--by-duration", "P36500D")[0] == {(TOPIC, p): 0 for p in range(3)}
    assert committed(b, group) == {(TOPIC, 0): 5, (TOPIC, 1): 2}


def test_reset_refused_while_the_group_has_members_and_views_show_owners(broker):
    group, b = "live-group", broker.bootstrap
    watch = groups.Watch()
    member = groups.ConfluentMember(watch, b, group, TOPIC, "cli-view-member", "view-1", {})
    with groups.running(broker, [member]):
        groups.wait_split(watch, [member], 3)
        groups.wait_consumed(watch, [member], broker.produced.values)
        member.commit()
        refusal = roster("offsets", "reset", group, "--all-topics", "--to-earliest",
                         "--execute", "--bootstrap-server", b)
        assert refusal.returncode == 1
        assert "inactive" in refusal.stderr and "Stable" in refusal.stderr

        rows = table(ok(roster("offsets", "describe", "--group", group, "--bootstrap-server",
                               b)))
        assert {int(r["PARTITION"]) for r in rows} == {0, 1, 2}
        for row in rows:
            assert row["GROUP"] == group and row["TOPIC"] == TOPIC
            assert row["CURRENT-OFFSET"] == row["LOG-END-OFFSET"] == "10" and row["LAG"] == "0"
            assert row["CONSUMER-ID"] != "-" and row["HOST"] != "-"
            assert row["CLIENT-ID"] == "cli-view-member", row
        assert table(ok(roster("groups", "describe", group, "--offsets",
                               "--bootstrap-server", b))) == rows
        members = table(ok(roster("groups", "describe", group, "--members",
                                  "--bootstrap-server", b)))
        assert [(m["GROUP-INSTANCE-ID"], m["CLIENT-ID"], m["#PARTITIONS"]) for m in members] \
            == [("view-1", "cli-view-member", "3")]
        state = ok(roster("groups", "describe", group, "--state", "--bootstrap-server", b))
        assert "ASSIGNMENT-STRATEGY" in state and "Stable" in state and "range" in state
    # the refused reset left the member's commits
    assert committed(b, group) == {(TOPIC, p): 10 for p in range(3)}


def test_a_group_without_members_is_said_on_stderr(broker):
    commit(broker.bootstrap, "quiet-group", {(TOPIC, 1): 6})
    described = roster("offsets", "describe", "quiet-group", "--bootstrap-server",
                       broker.bootstrap)
    rows = table(ok(described))
    assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"],
             r["CONSUMER-ID"]) for r in rows] == [("1", "6", "10", "4", "-")]
    assert "has no active members" in described.stderr


def test_a_closed_pipe_is_no_traceback(broker):
    """`roster offsets describe G | head -1`: the reader is gone before roster writes."""
    import subprocess

    from tests.support.cli import ROSTER
    commit(broker.bootstrap, "piped-group", {(TOPIC, 0): 1})
    proc = subprocess.Popen([ROSTER, "offsets", "describe", "piped-group",
                             "--bootstrap-server", broker.bootstrap],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.wait(60)
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    assert proc.returncode == 141


def test_refusals_name_the_option(broker):
    b = broker.bootstrap
    for args, option in (
            (["offsets", "reset", "g", "--topic", TOPIC, "--to-offset", "x"], "--to-offset"),
            (["offsets", "reset", "g", "--topic", TOPIC, "--to-datetime", "yesterday"],
             "--to-datetime"),
            (["offsets", "reset", "g", "--topic", "t:1,x", "--to-latest"], "--topic"),
            (["offsets", "reset", "g", "--topic", TOPIC, "--to-latest", "--execute",
              "--dry-run"], "--dry-run"),
            (["offsets", "reset", "g", "--to-latest"], "--all-topics"),
            (["offsets", "delete", "g", "--topic", TOPIC, "--partitions", "1,x"],
             "--partitions"),
            (["offsets", "describe"], "--group")):
        assert option in refused(roster(*args, "--bootstrap-server", b)), args
    unknown = roster("offsets", "reset", "g", "--topic", "no-such-topic", "--to-latest",
                     "--bootstrap-server", b)
    assert unknown.returncode == 1 and "no-such-topic" in unknown.stderr


def test_views_and_refusal_for_a_consumer_protocol_group(broker):
    """The same views for a KIP-848 group (ConsumerGroupDescribe rather than DescribeGroups)."""
    import time

    from confluent_kafka import Consumer
    b = broker.bootstrap
    consumer = Consumer({"bootstrap.servers": b, "group.id": "kip848-group",
                         "group.protocol": "consumer", "client.id": "kip848-client"})
    try:
        consumer.subscribe([OTHER])
        deadline = time.monotonic() + groups.DEADLINE_S
        while not consumer.assignment():     # each poll waits for the broker's answer
            assert time.monotonic() < deadline, "no assignment"
            consumer.poll(0.2)
        rows = table(ok(roster("offsets", "describe", "kip848-group", "--bootstrap-server",
                               b)))
        assert [(r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"],
                 r["CLIENT-ID"]) for r in rows] == [(OTHER, "0", "-", "4", "kip848-client")]
        assert rows[0]["CONSUMER-ID"] != "-"
        state = ok(roster("groups", "describe", "--state", "--group", "kip848-group",
                          "--bootstrap-server", b))
        assert "Stable" in state and "#MEMBERS" in state
        refusal = roster("offsets", "reset", "kip848-group", "--all-topics", "--to-latest",
                         "--execute", "--bootstrap-server", b)
        assert refusal.returncode == 1 and "inactive" in refusal.stderr
    finally:
        consumer.close()
