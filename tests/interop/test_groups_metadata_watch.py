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

import time

import pytest

from tests.support import groups
from tests.support.groups import (
    ConfluentMember,
    ConfluentProcessMember,
    KafkaPythonProcessMember,
    Watch,
)

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("groups-metadata-watch")]

BEFORE, AFTER = 3, 9
LEADER_SESSION_MS = 30_000
REBALANCE_MS = 6000          # every member's max.poll.interval.ms (group.min.session.timeout.ms)
HEARTBEAT_MS = 500


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
    form_with_leader(watch, leader, followers)
    leader.kill9()
    killed_at = time.monotonic()
    add_partitions(broker.bootstrap, topic, AFTER)
    return leader, followers, watch, killed_at


def form_with_leader(watch, leader, followers) -> None:
    """Start `leader` alone (so it leads), then the followers; wait until the BEFORE
    partitions are split between all of them."""
    leader.start()
    watch.wait_for(lambda: leader.assigned == frozenset(range(BEFORE)), groups.DEADLINE_S,
                   lambda: "the leader to own every partition"
                   + groups.describe_assignment([leader]))
    for follower in followers:
        follower.start()
    groups.wait_split(watch, [leader, *followers], BEFORE)


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


# -- issue 22: the watch's rebalance does not wait for the dead static leader ---------------------
#
# As a user meets it: three static members with the range assignor, session.timeout.ms=20000 and
# the default max.poll.interval.ms (5 minutes: the rebalance timeout). The leader is SIGKILLed and
# the topic grows from 3 to 6 partitions. Kafka would keep the survivors on their partitions until
# the leader's session ends; the watch rebalances at once, and must not then hold the survivors in
# the join phase for five minutes waiting for the dead leader (coordinator/classic/away.py).

SESSION_MS = 20_000
GROWN = 6
LEADERS = {"confluent-kafka": ConfluentProcessMember, "kafka-python": KafkaPythonProcessMember}
LEADER_CONFIGS = {  # each client's own spelling; everything else its defaults
    "confluent-kafka": {"session.timeout.ms": SESSION_MS,
                        "partition.assignment.strategy": "range"},
    "kafka-python": {"session_timeout_ms": SESSION_MS, "heartbeat_interval_ms": 3000},
}


@pytest.fixture(scope="module")
def watching_broker(tmp_path_factory):
    broker = broker_with(tmp_path_factory, "mw-away", True)
    yield broker
    broker.stop()


@pytest.mark.parametrize("leader_client", sorted(LEADERS))
def test_a_dead_static_leader_does_not_hold_the_survivors_when_the_topic_grows(
        watching_broker, leader_client):
    broker = watching_broker
    name = f"mw-away-{leader_client}"
    groups.create_topic(broker.bootstrap, name, BEFORE)
    watch = Watch()
    leader = LEADERS[leader_client](watch, broker.bootstrap, name, name, f"{name}-leader",
                                    f"{name}-leader", LEADER_CONFIGS[leader_client])
    survivors = [ConfluentMember(watch, broker.bootstrap, name, name, f"{name}-s{i}",
                                 f"{name}-s{i}", {"session.timeout.ms": SESSION_MS,
                                                  "heartbeat.interval.ms": 1000,
                                                  "partition.assignment.strategy": "range"})
                 for i in (1, 2)]
    members = [leader, *survivors]
    try:
        with groups.broker_output_on_failure(broker):
            form_with_leader(watch, leader, survivors)
            leader.kill9()
            killed_at = time.monotonic()
            add_partitions(broker.bootstrap, name, GROWN)
            groups.produce_known(broker.bootstrap, name, GROWN, 60, name)

            # the survivors consume from the new partitions well before the leader's session
            # ends (and far before the 5-minute rebalance timeout)
            watch.wait_for(lambda: any(r.partition >= BEFORE
                                       for s in survivors for r in s.records),
                           SESSION_MS / 1000, lambda: "the survivors to consume new partitions"
                           + groups.describe_assignment(survivors))
            took = time.monotonic() - killed_at
            assert took < SESSION_MS / 1000 * 0.75, took
            # range over the three members: the dead leader's share is kept for it
            owned = frozenset().union(*(s.assigned for s in survivors))
            assert len(owned) == GROWN * 2 // 3 and max(owned) >= BEFORE, \
                groups.describe_assignment(survivors)
            log = "\n".join(broker.output)
            assert f"preparing to rebalance group {name}" in log and "metadata changed" in log

            # restarted within its session, it gets what was kept for it, and nobody rebalances
            callbacks = [s.callbacks() for s in survivors]
            back = LEADERS[leader_client](watch, broker.bootstrap, name, name, f"{name}-leader",
                                          f"{name}-leader", LEADER_CONFIGS[leader_client])
            members.append(back)
            back.start()
            kept = frozenset(range(GROWN)) - owned
            watch.wait_for(lambda: back.assigned == kept, groups.DEADLINE_S,
                           lambda: "the restarted leader to get its kept partitions"
                           + groups.describe_assignment([back, *survivors]))
            assert time.monotonic() - killed_at < SESSION_MS / 1000   # still within its session
            assert [s.callbacks() for s in survivors] == callbacks, \
                groups.describe_assignment(survivors)
    finally:
        groups.stop_all(members)
