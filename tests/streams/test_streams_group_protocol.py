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

import pytest

from tests.streams.test_streams_counts import BOTH, INSTANCES, App, changes_since, produce, \
    restored, wait_counts
from tests.support import groups, java_judges
from tests.support.java_judges import JavaProgram
from tests.support.judges import roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name


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
