"""Kafka Streams against roster (and the same against Apache Kafka 4.4): a stateful application
(tests/java CountsApp: re-key by word through a repartition topic, count into a persistent
RocksDB store with a compacted changelog) as three static instances (group.instance.id, the
classic protocol), each a JVM with its own state.dir.

- a rolling restart, each instance back within its session timeout, moves no task, takes no
  other instance out of RUNNING and restores nothing from the changelog;
- kill -9 of one instance and a restart within its session timeout moves no task and disturbs
  no other instance; it restores only the changelog's tail written since its last checkpoint
  (at-least-once Streams checkpoints on a clean close), never the whole store, as on Kafka;
- the output topic's final counts equal the counts of what was produced;
- what Streams needs from the broker works: its internal topics are created with their configs
  (the changelog compacted), and it purges the repartition topic with DeleteRecords."""
from __future__ import annotations

import struct
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.support import groups, java_judges
from tests.support.java_judges import JavaProgram
from tests.support.judges import roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name

INSTANCES = 3
PARTITIONS = 3
SESSION_MS = 30000
WORDS = [f"w{i}" for i in range(7)]
BOTH = pytest.mark.parametrize("target", [
    pytest.param("roster", marks=[pytest.mark.interop, pytest.mark.xdist_group("streams")]),
    pytest.param("kafka", marks=[pytest.mark.interop, pytest.mark.xdist_group("kafka")]),
], indirect=True)


class App:
    """The three instances of one application; `instances[i]` is instance i's running JVM.
    `settings`: more Streams settings (key=value) for every instance (e.g. exactly_once_v2)."""

    settings: tuple[str, ...] = ()

    def __init__(self, target, tmp_path, name: str) -> None:
        self.target = target
        self.name = name
        self.input, self.output = f"{name}-in", f"{name}-out"
        self.state = tmp_path
        self.instances: list[JavaProgram] = [None] * INSTANCES    # type: ignore[list-item]
        self.finished: list[JavaProgram] = []

    def start(self, i: int) -> JavaProgram:
        program = JavaProgram(
            "roster.judge.CountsApp", self.target.bootstrap, self.name, f"{self.name}-i{i}",
            str(self.state / f"state-{i}"), self.input, self.output,
            f"consumer.session.timeout.ms={SESSION_MS}", "consumer.heartbeat.interval.ms=500",
            "repartition.purge.interval.ms=100", *self.settings, heap="192m").start()
        self.instances[i] = program
        return program

    def running(self, program: JavaProgram) -> dict | None:
        states = program.select("state")
        return states[-1] if states and states[-1]["state"] == "RUNNING" else None

    def tasks(self) -> dict[int, list[str]]:
        return {i: self.running(p)["active"] for i, p in enumerate(self.instances)}

    def wait_running(self, program: JavaProgram) -> dict:
        return program.wait_for(lambda: self.running(program), "the instance RUNNING")

    def wait_balanced(self) -> dict[int, list[str]]:
        """All instances RUNNING, the 2 x PARTITIONS tasks spread two each."""
        def balanced():
            if not all(self.running(p) for p in self.instances):
                return None
            tasks = self.tasks()
            every = sorted(t for ts in tasks.values() for t in ts)
            wanted = sorted(f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS))
            return tasks if every == wanted and all(len(t) == 2 for t in tasks.values()) \
                else None
        return self.instances[0].wait_for(
            balanced, lambda: f"balanced tasks: {[p.select('state')[-1:] for p in self.instances]}",
            timeout_s=90)

    def stop(self) -> None:
        for program in [*self.instances, *self.finished]:
            if program is not None:
                program.kill9()
                instance = program.command[program.command.index("roster.judge.CountsApp") + 3]
                print(f"{instance} stderr:\n" + "\n".join(program.stderr[-30:]))


@pytest.fixture
def app(target, tmp_path):
    java_judges.build()
    name = unique_name("counts")
    for topic in (f"{name}-in", f"{name}-out"):
        groups.create_topic(target.bootstrap, topic, PARTITIONS)
    application = App(target, tmp_path, name)
    yield application
    application.stop()


def produce(bootstrap: str, topic: str, count: int, start: int) -> Counter:
    """`count` records (user key, word value); the counts by word they add."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    added = Counter()
    for n in range(start, start + count):
        word = WORDS[(n * 5) % len(WORDS)]
        added[word] += 1
        producer.produce(topic, key=f"user-{n}".encode(), value=word.encode())
    assert producer.flush(30) == 0
    return added


def latest_counts(bootstrap: str, topic: str) -> dict[str, int]:
    """The last count written for each word: the output read from the start to its end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("reader"),
                         "enable.auto.commit": False})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(PARTITIONS)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        counts: dict[str, int] = {}
        position = {p: 0 for p in range(PARTITIONS)}
        while any(position[p] < ends[p] for p in position):
            message = consumer.poll(5)
            assert message is not None, f"output {topic} stopped before {ends}: {position}"
            assert message.error() is None, message.error()
            counts[message.key().decode()] = struct.unpack(">q", message.value())[0]
            position[message.partition()] = message.offset() + 1
        return counts
    finally:
        consumer.close()


def wait_counts(app: App, expected: Counter) -> None:
    app.instances[0].wait_for(lambda: latest_counts(app.target.bootstrap, app.output)
                              == dict(expected),
                              lambda: f"counts {dict(expected)}, output has "
                              f"{latest_counts(app.target.bootstrap, app.output)}", timeout_s=60)


def wait_committed(app: App) -> None:
    """Until the application has committed everything it read (input and repartition topic):
    a kill -9 then loses no progress and an at-least-once count is counted once."""
    repartition = f"{app.name}-by-word-repartition"
    consumer = Consumer({"bootstrap.servers": app.target.bootstrap, "group.id": app.name,
                         "enable.auto.commit": False})
    try:
        def caught_up():
            wanted = [TopicPartition(t, p) for t in (app.input, repartition)
                      for p in range(PARTITIONS)]
            committed = consumer.committed(wanted, timeout=10)
            return all(c.offset == consumer.get_watermark_offsets(c, timeout=10)[1]
                       for c in committed)
        app.instances[0].wait_for(caught_up, "the application's commits caught up")
    finally:
        consumer.close()


def restored(program: JavaProgram, mark: int = 0) -> list[dict]:
    """Restorations that read records: Streams also reports one with start == end for a store
    whose checkpoint is current (Kafka as roster), which restores nothing."""
    return [e for e in program.since(mark, "restore-start") if e["start"] != e["end"]]


def changes_since(program: JavaProgram, mark: int) -> list[dict]:
    return program.since(mark, "state") + restored(program, mark)


@BOTH
def test_three_static_streams_instances_bounce_and_survive_kill9_without_moving_a_task(app):
    expected = produce(app.target.bootstrap, app.input, 300, 0)
    for i in range(INSTANCES):
        app.start(i)
    tasks = app.wait_balanced()
    wait_counts(app, expected)

    # -- rolling restart, each back within its session timeout -----------------------------
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

    # -- kill -9 and back within the session timeout ---------------------------------------
    wait_committed(app)
    others = [app.instances[0], app.instances[2]]
    marks = [p.mark() for p in others]
    app.instances[1].kill9()
    app.finished.append(app.instances[1])
    back = app.start(1)
    assert app.wait_running(back)["active"] == tasks[1]
    for program, mark in zip(others, marks):
        assert changes_since(program, mark) == [], "the kill -9 disturbed another instance"
    expected += produce(app.target.bootstrap, app.input, 150, 450)
    wait_counts(app, expected)
    # The local RocksDB store stood: Streams (at-least-once) read back only the changelog's tail
    # after its last checkpoint (written on a clean close, or every 10,000 records), never the
    # whole changelog. Kafka does exactly this too.
    assert all(e["start"] > 0 for e in restored(back)), restored(back)


@BOTH
def test_streams_internal_topics_have_their_configs_and_the_repartition_topic_is_purged(app):
    expected = produce(app.target.bootstrap, app.input, 200, 0)
    app.start(0)
    app.wait_running(app.instances[0])
    wait_counts(app, expected)
    changelog = f"{app.name}-counts-changelog"
    repartition = f"{app.name}-by-word-repartition"
    admin = AdminClient({"bootstrap.servers": app.target.bootstrap})
    resources = [ConfigResource("topic", t) for t in (changelog, repartition)]
    configs = {r.name: {k: v.value for k, v in f.result(10).items()}
               for r, f in admin.describe_configs(resources).items()}
    assert configs[changelog]["cleanup.policy"] == "compact"
    assert configs[repartition]["cleanup.policy"] == "delete"
    assert configs[repartition]["retention.ms"] == "-1"
    # Streams deletes the repartition records it has committed (DeleteRecords)
    consumer = Consumer({"bootstrap.servers": app.target.bootstrap, "group.id": "unused"})
    try:
        app.instances[0].wait_for(
            lambda: sum(consumer.get_watermark_offsets(TopicPartition(repartition, p),
                                                       timeout=10)[0]
                        for p in range(PARTITIONS)) == 200,
            "the repartition topic purged up to what was processed")
    finally:
        consumer.close()
