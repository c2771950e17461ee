"""Issue 17, part 1, with real clients: the coordinator watches what a classic consumer group
subscribes to. KIP-814 leaves a gap — "the leader can not detect metadata changes (e.g. new
partition added) while it is offline" — and a static leader that is SIGKILLed keeps its place
(and the group keeps its assignment) for a whole session timeout. With roster's watch on (the
default), partitions added while it is down reach the other members at once; with
group.coordinator.metadata.watch=false nothing happens until the leader's session ends (Kafka).

The leader is a kafka-python consumer in a child process (so it can be SIGKILLed) because its
max.poll.interval.ms (the rebalance timeout) may be shorter than its session timeout, which
librdkafka refuses: the rebalance started without it must end (after the rebalance timeout)
well before its session expires, or the test could not tell the watch from session expiry.
The followers are confluent-kafka consumers.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tests.support import groups
from tests.support.groups import ConfluentMember, ConfluentProcessMember, Watch

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("groups-metadata-watch")]

BEFORE, AFTER = 3, 9
LEADER_SESSION_MS = 30_000
REBALANCE_MS = 6000          # every member's max.poll.interval.ms (group.min.session.timeout.ms)
HEARTBEAT_MS = 500


class KafkaPythonProcessMember(ConfluentProcessMember):
    """A kafka-python consumer in a child process, reporting its callbacks as JSON lines."""

    client = "kafka-python (process)"

    SCRIPT = textwrap.dedent("""
        import json, sys
        from kafka import ConsumerRebalanceListener, KafkaConsumer
        conf, topic = json.loads(sys.argv[1]), sys.argv[2]
        def report(kind, ps):
            print(json.dumps({"kind": kind, "partitions": [p.partition for p in ps]}), flush=True)
        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                report("revoke", revoked)
            def on_partitions_assigned(self, assigned):
                report("assign", assigned)
        consumer = KafkaConsumer(**conf)
        consumer.subscribe([topic], listener=Listener())
        consumer.topics()
        while True:
            consumer.poll(timeout_ms=100)
    """)

    def start(self):
        conf = {**self._python_client_config(), **self.config}
        self.proc = subprocess.Popen([sys.executable, "-c", self.SCRIPT, json.dumps(conf),
                                      self.topic], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        return self


def broker_with(tmp_path_factory, name, watch):
    from tests.support.process import BrokerProcess
    return BrokerProcess(tmp_path_factory.mktemp(name), {
        "group.initial.rebalance.delay.ms": "0",
        "group.coordinator.metadata.watch": "true" if watch else "false"}).start()


def add_partitions(bootstrap: str, topic: str, total: int) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_partitions([NewPartitions(topic, total)]).values():
        future.result(30)


def group_with_killed_leader(broker, name):
    """A Stable group of a static kafka-python leader and two static confluent-kafka
    followers over BEFORE partitions; the leader then SIGKILLed and the topic grown to AFTER.
    Returns (followers, watch, seconds the kill happened at)."""
    topic = group = name
    groups.create_topic(broker.bootstrap, topic, BEFORE)
    watch = Watch()
    leader = KafkaPythonProcessMember(
        watch, broker.bootstrap, group, topic, f"{name}-leader", f"{name}-leader",
        {"session_timeout_ms": LEADER_SESSION_MS, "max_poll_interval_ms": REBALANCE_MS,
         "heartbeat_interval_ms": HEARTBEAT_MS, "request_timeout_ms": 40_000})
    followers = [ConfluentMember(watch, broker.bootstrap, group, topic, f"{name}-f{i}",
                                 f"{name}-f{i}", {"heartbeat.interval.ms": HEARTBEAT_MS,
                                                  "session.timeout.ms": REBALANCE_MS,
                                                  "max.poll.interval.ms": REBALANCE_MS})
                 for i in (1, 2)]
    leader.start()
    watch.wait_for(lambda: leader.assigned == frozenset(range(BEFORE)), groups.DEADLINE_S,
                   lambda: "the leader to own every partition"
                   + groups.describe_assignment([leader]))
    for follower in followers:
        follower.start()
    everyone = [leader, *followers]
    groups.wait_split(watch, everyone, BEFORE)
    leader.kill9()
    killed_at = time.monotonic()
    add_partitions(broker.bootstrap, topic, AFTER)
    return leader, followers, watch, killed_at


def owned(members) -> frozenset[int]:
    return frozenset().union(*(m.assigned for m in members))


@pytest.mark.parametrize("watching", [True, False], ids=["watch-on", "watch-off-kafka"])
def test_partitions_added_while_the_static_leader_is_down(tmp_path_factory, watching):
    name = f"mw-{'on' if watching else 'off'}"
    broker = broker_with(tmp_path_factory, name, watching)
    members = []
    try:
        leader, followers, watch, killed_at = group_with_killed_leader(broker, name)
        members = [leader, *followers]
        if watching:
            # followers notice on their next heartbeat; the join phase then waits one rebalance
            # timeout for the absent leader (static: it keeps its place) and completes without it
            watch.wait_for(lambda: any(p >= BEFORE for p in owned(followers)),
                           REBALANCE_MS / 1000 + 10,
                           lambda: "the followers to get new partitions"
                           + groups.describe_assignment(followers))
            assert time.monotonic() - killed_at < LEADER_SESSION_MS / 1000, \
                "too late to tell the watch from the leader's session expiry"
            # range over three members (the absent leader's place is kept): two thirds of them
            watch.wait_for(lambda: len(owned(followers)) == AFTER * 2 // 3, 10,
                           lambda: groups.describe_assignment(followers))
            assert "metadata changed" in "\n".join(broker.output)
        else:
            # Kafka: nobody else looks; the group keeps its assignment until the leader's
            # session ends (or it comes back)
            quiet_s = REBALANCE_MS / 1000 + 5
            moved = watch.quiet(lambda: any(p >= BEFORE for p in owned(followers)), quiet_s)
            assert not moved, groups.describe_assignment(followers)
            assert time.monotonic() - killed_at < LEADER_SESSION_MS / 1000
            assert owned(followers) <= frozenset(range(BEFORE))
            assert "metadata changed" not in "\n".join(broker.output)
    finally:
        groups.stop_all(members)
        print("broker output:\n" + "\n".join(broker.output))
        broker.stop()
