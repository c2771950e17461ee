"""Kafka Streams 4.4 with `group.protocol=streams` (KIP-1071: the broker assigns the tasks, keeps
the topology and creates the internal topics) against roster, and the same against Apache
Kafka 4.4: the word-count application of test_streams_counts (tests/java CountsApp: a
repartition topic, a persistent RocksDB store with a compacted changelog) as three static
instances (group.instance.id, which streams groups take from Kafka 4.4 on).

- the three instances form one streams group, the six tasks spread two each, and the output's
  counts equal the counts of what was produced;
- the internal topics the group coordinator created have their configs (changelog compacted);
- a rolling restart, each instance back within the group's session timeout, gives each its
  tasks back and disturbs no other instance."""
from __future__ import annotations

import re

import pytest
from confluent_kafka import Consumer, TopicPartition

from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from tests.interop.test_kafka_tools import table
from tests.streams.test_streams_counts import (
    BOTH,
    INSTANCES,
    App,
    changes_since,
    produce,
    restored,
    wait_counts,
)
from tests.streams.test_streams_exactly_once import EOS, counts_exactly_through_kills
from tests.support import groups, java_judges
from tests.support.java_judges import JavaProgram
from tests.support.judges import roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import PEER_SETTINGS, unique_name
from tests.support.kafka_tools import kafka_tool
from tests.support.process import BrokerProcess
from tests.support.wire import Wire


class StreamsProtocolApp(App):
    """The instances speak the streams group protocol: the session timeout and heartbeat
    interval are the group's (the broker's group.streams.* settings), not the client's."""

    def start(self, i: int) -> JavaProgram:
        program = JavaProgram(
            "roster.judge.CountsApp", self.target.bootstrap, self.name, f"{self.name}-i{i}",
            str(self.state / f"state-{i}"), self.input, self.output,
            "group.protocol=streams", "repartition.purge.interval.ms=100", *self.settings,
            heap="192m").start()
        self.instances[i] = program
        return program


@pytest.fixture
def streams_app(target, tmp_path):
    java_judges.build()
    name = unique_name("sgcounts")
    for topic in (f"{name}-in", f"{name}-out"):
        groups.create_topic(target.bootstrap, topic, 3)
    application = StreamsProtocolApp(target, tmp_path, name)
    yield application
    application.stop()


@BOTH
def test_three_instances_form_a_streams_group_and_count_exactly(streams_app):
    app = streams_app
    expected = produce(app.target.bootstrap, app.input, 300, 0)
    for i in range(INSTANCES):
        app.start(i)
    tasks = app.wait_balanced()
    wait_counts(app, expected)
    assert sorted(t for ts in tasks.values() for t in ts) == \
        ["0_0", "0_1", "0_2", "1_0", "1_1", "1_2"]
    admin_view(app)
    tool_view(app)


STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"


def streams_groups(app, *args: str):
    done = kafka_tool(STREAMS_GROUPS, "--bootstrap-server", app.target.bootstrap, *args)
    print(f"$ kafka-streams-groups {' '.join(args)} -> {done.returncode}\n"
          f"{done.stdout}{done.stderr}")
    return done


def tool_view(app) -> None:
    """Kafka's kafka-streams-groups tool on the running group, the same on both brokers: listed
    Stable; no lag on the input and repartition partitions; each instance's member with one
    task of each subtopology; the state with the sticky assignor and three members."""
    listed = streams_groups(app, "--list")
    assert listed.returncode == 0 and app.name in listed.stdout.split()
    states = streams_groups(app, "--list", "--state")
    assert states.returncode == 0
    assert [line.split() for line in states.stdout.splitlines() if app.name in line] == \
        [[app.name, "Stable"]]
    offsets = streams_groups(app, "--describe", "--group", app.name, "--offsets")
    assert offsets.returncode == 0
    assert sorted(tuple(row.values()) for row in table(offsets.stdout, "GROUP")) == sorted(
        (app.name, topic, str(p), "0") for topic in (app.input, f"{app.name}-by-word-repartition")
        for p in range(3))
    members = streams_groups(app, "--describe", "--group", app.name, "--members")
    assert members.returncode == 0
    rows = [line.split(None, 4) for line in members.stdout.splitlines()
            if line.startswith(f"{app.name} ")]
    assert sorted(row[3] for row in rows) == [
        f"{app.name}-i{i}-StreamThread-1-consumer" for i in range(INSTANCES)]
    tasks = [re.fullmatch(r"ACTIVE: 0:\[(\d)\]; 1:\[(\d)\];", row[4].strip()) for row in rows]
    assert all(tasks), rows
    for subtopology in (1, 2):
        assert sorted(t.group(subtopology) for t in tasks) == ["0", "1", "2"]
    state = streams_groups(app, "--describe", "--group", app.name, "--state")
    assert state.returncode == 0
    (row,) = [line.split() for line in state.stdout.splitlines() if line.startswith(app.name)]
    assert row[3:] == ["sticky", "Stable", "3"]


def admin_view(app) -> None:
    """What the admin APIs answer for the streams group, the same on both brokers: ListGroups
    lists it as a streams group, the classic DescribeGroups says it is not a classic one,
    StreamsGroupDescribe shows the three members with two active tasks each, and OffsetFetch
    returns what the application committed on its input topic."""
    with Wire(app.target.bootstrap) as wire:
        coordinator = wire.call(ApiKey.FIND_COORDINATOR, 4, key_type=0,
                                coordinator_keys=(app.name,)).coordinators[0]
    with Wire(f"{coordinator.host}:{coordinator.port}") as wire:
        listed = wire.call(ApiKey.LIST_GROUPS, 5, states_filter=(), types_filter=("streams",))
        described = wire.call(ApiKey.DESCRIBE_GROUPS, 6, groups=(app.name,),
                              include_authorized_operations=False).groups[0]
        streams = wire.call(ApiKey.STREAMS_GROUP_DESCRIBE, 0, group_ids=(app.name,),
                            include_authorized_operations=False).groups[0]
    print("admin view:", [g for g in listed.groups if g.group_id == app.name], described,
          streams.group_state, streams.error_code)
    assert [(g.group_type, g.protocol_type, g.group_state) for g in listed.groups
            if g.group_id == app.name] == [("streams", "streams", "Stable")]
    assert (described.error_code, described.error_message) == \
        (ErrorCode.group_id_not_found, f"Group {app.name} is not a classic group.")
    assert (streams.error_code, streams.group_state) == (ErrorCode.none, "Stable")
    assert streams.group_epoch == streams.assignment_epoch
    assert sorted(len(t.partitions) for m in streams.members
                  for t in m.assignment.active_tasks) == [1] * 6
    # Streams gives each thread's member "<group.instance.id>-<thread number>"
    assert len(streams.members) == 3 and {m.instance_id for m in streams.members} == \
        {f"{app.name}-i{i}-1" for i in range(INSTANCES)}
    assert [s.subtopology_id for s in streams.topology.subtopologies] == ["0", "1"]
    consumer = Consumer({"bootstrap.servers": app.target.bootstrap, "group.id": app.name,
                         "enable.auto.commit": False})
    try:
        wanted = [TopicPartition(app.input, p) for p in range(3)]
        app.instances[0].wait_for(
            lambda: sum(c.offset for c in consumer.committed(wanted, timeout=10)) == 300,
            "the application's commits of its 300 input records")
    finally:
        consumer.close()


@BOTH
def test_a_rolling_restart_of_static_instances_moves_no_task(streams_app):
    """Each instance closed (a static member leaves with epoch -2) and started again with its
    instance id within the group's session timeout: it gets its own tasks back, restores
    nothing from the changelog, and no other instance leaves RUNNING."""
    app = streams_app
    expected = produce(app.target.bootstrap, app.input, 300, 0)
    for i in range(INSTANCES):
        app.start(i)
    tasks = app.wait_balanced()
    wait_counts(app, expected)
    for i in range(INSTANCES):
        others = [p for n, p in enumerate(app.instances) if n != i]
        marks = [p.mark() for p in others]
        old = app.instances[i]
        old.send("close")
        old.wait_for(lambda: old.select("closed"), f"instance {i} closed")
        app.finished.append(old)
        new = app.start(i)
        assert app.wait_running(new)["active"] == tasks[i], f"instance {i} came back moved"
        assert restored(new) == [], f"instance {i} restored from the changelog"
        for program, mark in zip(others, marks):
            assert changes_since(program, mark) == [], "a restart disturbed another instance"
    expected += produce(app.target.bootstrap, app.input, 150, 300)
    wait_counts(app, expected)


@pytest.fixture
def own_roster(tmp_path):
    """A roster broker of this test's own, to kill -9 (the module's is shared)."""
    broker = BrokerProcess(tmp_path / "broker", PEER_SETTINGS).start()
    yield broker
    broker.kill9()


@pytest.mark.interop
@pytest.mark.xdist_group("streams")
def test_the_application_carries_on_through_a_kill9_of_roster_with_no_task_moved(own_roster,
                                                                                 tmp_path):
    """kill -9 of the broker under the running group and a restart on the same data
    directory: the group's records in __consumer_offsets are replayed, every member's heartbeat
    at its epoch is answered as before, no task moves, no instance restores anything, and the
    counts stay exact. (Roster only: the Kafka peer is shared by the whole run.)"""
    java_judges.build()
    name = unique_name("sgkill")
    for topic in (f"{name}-in", f"{name}-out"):
        groups.create_topic(own_roster.bootstrap, topic, 3)
    app = StreamsProtocolApp(own_roster, tmp_path, name)
    try:
        expected = produce(own_roster.bootstrap, app.input, 300, 0)
        for i in range(INSTANCES):
            app.start(i)
        tasks = app.wait_balanced()
        wait_counts(app, expected)
        marks = [p.mark() for p in app.instances]
        own_roster.kill9()
        own_roster.start()
        expected += produce(own_roster.bootstrap, app.input, 150, 300)
        wait_counts(app, expected)
        assert app.tasks() == tasks
        for program, mark in zip(app.instances, marks):
            assert program.since(mark, "state") == [], "an instance left RUNNING"
            assert restored(program, mark) == [], "an instance restored from its changelog"
    finally:
        app.stop()


CONFIGS = "org.apache.kafka.tools.ConfigCommand"


@BOTH
def test_scaling_one_to_three_instances_with_a_standby_replica(streams_app):
    """The group has one standby replica (its streams.num.standby.replicas, set as an operator
    sets it: in this protocol the client's num.standby.replicas is ignored). One instance runs
    every task; two more join: the tasks spread two each, each stateful task gets a standby on
    an instance that does not run it, and the counts stay exact."""
    app = streams_app
    done = kafka_tool(CONFIGS, "--bootstrap-server", app.target.bootstrap, "--alter",
                      "--entity-type", "groups", "--entity-name", app.name,
                      "--add-config", "streams.num.standby.replicas=1")
    assert done.returncode == 0, done.stdout + done.stderr
    expected = produce(app.target.bootstrap, app.input, 300, 0)
    first = app.start(0)
    alone = first.wait_for(
        lambda: (r := app.running(first)) and len(r["active"]) == 6 and r,
        "one instance running all six tasks")
    assert alone["standby"] == []          # no other instance to keep a standby on
    wait_counts(app, expected)
    for i in (1, 2):
        app.start(i)

    def spread():
        running = [app.running(p) for p in app.instances]
        if not all(running) or any(len(r["active"]) != 2 for r in running):
            return None
        standby = {t: i for i, r in enumerate(running) for t in r["standby"]}
        return running if sorted(standby) == ["1_0", "1_1", "1_2"] else None
    running = first.wait_for(spread, lambda: "two active tasks each and a standby of each "
                             f"stateful task: {[p.select('state')[-1:] for p in app.instances]}",
                             timeout_s=90)
    print("after scaling:", [(r["active"], r["standby"]) for r in running])
    for i, r in enumerate(running):
        assert not set(r["standby"]) & set(r["active"]), f"instance {i} stands by for itself"
    assert sorted(t for r in running for t in r["active"]) == \
        ["0_0", "0_1", "0_2", "1_0", "1_1", "1_2"]
    expected += produce(app.target.bootstrap, app.input, 150, 300)
    wait_counts(app, expected)


@BOTH
def test_exactly_once_v2_in_the_streams_protocol_counts_exactly_through_kill9s(streams_app):
    """test_streams_exactly_once's story with group.protocol=streams: three instances in
    exactly_once_v2, killed -9 three times at seeded points while input flows and restarted; a
    read_committed reader sees every word's counts 1, 2, ..., N.

    The instances are dynamic members here. In this protocol a static member that did not
    leave holds its instance id until its session expires: started again before that, the
    instance is refused UNRELEASED_INSTANCE_ID, which Streams treats as fatal (Kafka 4.4 and
    roster alike; a static member must be closed, leaving with epoch -2, to come back at
    once). A killed dynamic member's tasks go to the others once its session expires: the
    group's session is 6 s (streams.session.timeout.ms), not Kafka's 45 s."""
    app = streams_app
    for name, value in (("streams.session.timeout.ms", "6000"),
                        ("streams.heartbeat.interval.ms", "1000")):
        done = kafka_tool(CONFIGS, "--bootstrap-server", app.target.bootstrap, "--alter",
                          "--entity-type", "groups", "--entity-name", app.name,
                          "--add-config", f"{name}={value}")
        assert done.returncode == 0, done.stdout + done.stderr
    app.settings = (*EOS, "main.consumer.group.instance.id=")
    counts_exactly_through_kills(app)
