"""Streams groups (KIP-1071) in roster's observability and admin views, on a real broker driven by
real StreamsGroupHeartbeat requests (roster's own codec over a socket):

- the flight recorder writes to __roster_group_events one event per group epoch with its cause
  and the tasks that moved (from which member to which), and a static member's -2 leave
  ("away") and return ("saved");
- /metrics has the group's state, epoch, members and tasks, and its rebalances by cause;
- `roster groups list` shows its type, `roster groups describe` its members, their tasks with
  their owners, and the lag of its source partitions (committed vs end offsets);
- the console's pages, in a real browser (chromium, headless), show the group's members and
  tasks, its timeline and the tasks' ownership.

Nothing waits on a clock: the heartbeats are sent when the test decides, and the events are
followed with the long-polling reader of `roster groups history` until they are there."""
from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from prometheus_client.parser import text_string_to_metric_families

from roster.admin import groups as group_commands
from roster.admin.client import AdminClient
from roster.observability import events as ev
from roster.observability import history
from tests.interop.test_console_browser import chromium, distinct_colours, screenshot
from tests.support import groups
from tests.support.cli import ok, roster, table
from tests.support.http import http_get
from tests.support.ports import free_port
from tests.support.streams_thread import StreamThread, settle

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("console-browser")]

GROUP, TOPIC, PARTITIONS = "word-counts", "words", 4


def thread(bootstrap: str, instance_id: str) -> StreamThread:
    return StreamThread(bootstrap, GROUP, TOPIC, instance_id=instance_id)


@dataclass
class Run:
    bootstrap: str
    http: str
    events: list          # the group's recorded events, in order
    committed: dict       # partition -> offset a committed
    owners: dict          # partition -> the instance id running its task
    ends: dict            # partition -> records produced to it


def follow(client, found, what: str) -> list:
    """The group's events, read (long-polling) until one satisfies found(event)."""
    seen = []
    for event in history.events(client, GROUP, follow=True, wait_ms=300, timeout_s=30):
        seen.append(event)
        if found(event):
            return seen
    raise AssertionError(f"no event: {what}; saw {seen}")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from tests.support.process import BrokerProcess
    port = free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("streams-observe"), {
        "http.port": str(port), "group.streams.initial.rebalance.delay.ms": "0",
        "group.streams.assignment.interval.ms": "0"}).start()
    threads = []
    try:
        groups.create_topic(broker.bootstrap, TOPIC, PARTITIONS)
        produced = groups.produce_known(broker.bootstrap, TOPIC, PARTITIONS, 40, "w")
        a = thread(broker.bootstrap, "app-1-1")
        threads.append(a)
        a.beat()
        settle([a])
        assert a.partitions() == list(range(PARTITIONS))
        b = thread(broker.bootstrap, "app-2-1")
        threads.append(b)
        b.beat()
        settle([a, b])
        assert sorted(a.partitions() + b.partitions()) == list(range(PARTITIONS))
        assert a.partitions() and b.partitions()
        committed = {p: 3 + p for p in a.partitions()}
        a.commit(committed)
        # a's instance restarts: it leaves with -2 and comes back under a new member id
        a.beat(epoch=-2)
        back = thread(broker.bootstrap, "app-1-1")
        threads.append(back)
        back.beat()
        settle([back, b])
        owners = {p: "app-1-1" for p in back.partitions()}
        owners.update({p: "app-2-1" for p in b.partitions()})
        with AdminClient(broker.bootstrap) as client:
            events = follow(client, lambda e: e.kind == ev.SAVED, "the instance saved")
        yield Run(broker.bootstrap, f"http://127.0.0.1:{port}/", events, committed, owners,
                  produced.per_partition)
    finally:
        for t in threads:
            t.close()
        broker.stop()


def test_the_flight_recorder_writes_the_epochs_the_moves_and_the_restart(run):
    kinds = [(e.kind, e.generation, e.trigger.kind, e.outcome) for e in run.events]
    assert kinds == [(ev.GENERATION, 1, ev.STATIC_MEMBER_JOINED, "stable"),
                     (ev.GENERATION, 2, ev.STATIC_MEMBER_JOINED, "stable"),
                     (ev.AWAY, 2, ev.STATIC_LEAVE, ""),
                     (ev.SAVED, 2, ev.STATIC_REJOIN, "")], kinds
    first, second, away, saved = run.events
    assert all(e.protocol == "streams" for e in run.events)
    assert first.trigger.instance_id == "app-1-1"
    assert {(m.role, m.topic, m.before, m.after) for m in first.moved} == {
        ("active", "0", None, "app-1-1")} and len(first.moved) == PARTITIONS
    # the second instance's tasks: revoked by the first, then given to it
    assert second.trigger.instance_id == "app-2-1"
    moved = {m.partition for m in second.moved}
    assert moved == {p for p, who in run.owners.items() if who == "app-2-1"}
    assert all((m.role, m.before, m.after) == ("active", "app-1-1", "app-2-1")
               for m in second.moved)
    assert all(m.unowned_ms is not None for m in second.moved)
    assert away.trigger.instance_id == saved.trigger.instance_id == "app-1-1"
    assert saved.trigger.fenced_id == away.trigger.member_id != saved.trigger.member_id
    # as `roster groups history` prints them
    with AdminClient(run.bootstrap) as client:
        text = "\n".join(history.history_lines(client, GROUP))
    assert "static member joined" in text and "task" in text
    assert "away" in text and "static member left, to come back (epoch -2)" in text


def test_metrics_cover_the_streams_group(run):
    status, _, body = http_get(run.http + "metrics")
    assert status == 200
    values = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    labels = (("group", GROUP), ("protocol", "streams"))
    assert values[("roster_groups", (("protocol", "streams"), ("state", "Stable")))] == 1
    assert values[("roster_group_members", labels)] == 2
    assert values[("roster_group_epoch", labels)] == 2
    assert values[("roster_group_tasks", (*labels, ("role", "active")))] == PARTITIONS
    assert values[("roster_group_tasks", (*labels, ("role", "standby")))] == 0
    assert values[("roster_rebalances_total", (("group", GROUP), ("protocol", "streams"),
                                               ("reason", ev.STATIC_MEMBER_JOINED)))] == 2
    assert values[("roster_rebalances_saved_total", (("group", GROUP),))] == 1
    assert values[("roster_partitions_moved_total", (("group", GROUP),))] == \
        PARTITIONS + sum(who == "app-2-1" for who in run.owners.values())
    for p, offset in run.committed.items():
        assert values[("roster_consumer_lag", (("group", GROUP), ("partition", str(p)),
                                               ("topic", TOPIC)))] == run.ends[p] - offset


def test_groups_list_shows_the_type_and_describe_the_tasks_owners_and_lag(run):
    listed = ok(roster("--bootstrap-server", run.bootstrap, "groups", "list"))
    assert f"{GROUP}\tStable\tstreams" in listed.splitlines()
    out = ok(roster("--bootstrap-server", run.bootstrap, "groups", "describe", GROUP))
    assert f"Group: {GROUP}\tState: Stable\tType: streams (KIP-1071)\tMembers: 2" in out
    assert "GroupEpoch: 2\tAssignmentEpoch: 2\tTopologyEpoch: 0" in out
    sections = out.split("\n\n")
    members = table(sections[1])
    assert sorted(m["INSTANCE-ID"] for m in members) == ["app-1-1", "app-2-1"]
    for m in members:
        mine = [p for p, who in run.owners.items() if who == m["INSTANCE-ID"]]
        assert m["ACTIVE"] == ",".join(f"0_{p}" for p in mine)
        assert m["STANDBY"] == m["WARMUP"] == "-" and m["EPOCH"] == "2"
    tasks = table(sections[2])
    assert [(t["TASK"], t["ROLE"], t["OWNER"], t["TARGET"]) for t in tasks] == [
        (f"0_{p}", "active", run.owners[p], run.owners[p]) for p in range(PARTITIONS)]
    lag = table(sections[3])
    assert len(lag) == PARTITIONS
    for row in lag:
        p = int(row["PARTITION"])
        assert (row["TOPIC"], row["TASK"], row["OWNER"]) == (TOPIC, f"0_{p}", run.owners[p])
        assert row["LOG-END-OFFSET"] == str(run.ends[p])
        if p in run.committed:
            assert row["CURRENT-OFFSET"] == str(run.committed[p])
            assert row["LAG"] == str(run.ends[p] - run.committed[p])
        else:
            assert row["CURRENT-OFFSET"] == row["LAG"] == "-"
    # kafka-consumer-groups' offsets view reads the same: the source partitions and owners
    offsets = table(ok(roster("--bootstrap-server", run.bootstrap, "groups", "describe", GROUP, "--offsets")))
    assert sorted(int(r["PARTITION"]) for r in offsets) == list(range(PARTITIONS))
    with AdminClient(run.bootstrap) as client:
        described = group_commands.describe(client, GROUP)
    ids = {m.instance_id: m.member_id for m in described.members}
    assert {r["PARTITION"]: r["CONSUMER-ID"] for r in offsets} == {
        str(p): ids[who] for p, who in run.owners.items()}


def test_console_in_chromium_shows_the_streams_group(run, tmp_path):
    page = run.http + f"group/{GROUP}"
    dom = chromium(page, tmp_path, "--dump-dom").stdout
    assert "streams protocol" in dom and 'class="pill Stable"' in dom
    assert dom.count('class="member"') == 2
    assert f'data-count="active">{PARTITIONS}<' in dom
    assert 'data-count="generations">2<' in dom and 'data-count="saved">1<' in dom
    assert dom.count('data-kind="away"') == 1 and "left with epoch -2" in dom
    # every task of the members' rows, by role and subtopology
    assert len(re.findall(r"active 0 \[", dom)) == 2
    # the tasks' ownership: one row per task, named as Kafka Streams names tasks
    assert 'data-plot="ownership"' in dom
    rows = set(re.findall(r"<title>(active 0_\d)</title>", dom))
    assert rows == {f"active 0_{p}" for p in range(PARTITIONS)}
    assert dom.count('class="lag"') == len(run.committed)
    png = screenshot(page, tmp_path / "streams.png", tmp_path)
    assert len(png) > 20_000 and distinct_colours(png) > 20, "the page looks blank"
    index = chromium(run.http, tmp_path, "--dump-dom").stdout
    assert f'href="/group/{GROUP}"' in index and "<td>streams</td>" in index
