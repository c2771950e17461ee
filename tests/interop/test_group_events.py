"""The flight recorder with real clients (confluent-kafka): a static rolling bounce is recorded
as "saved" events and no generation; a dynamic bounce as generations (the member leaving, then
joining) with the partitions that moved; `roster groups history` prints the timeline; any Kafka
client reads `__roster_group_events`."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from roster.admin.client import AdminClient
from roster.observability import events as ev
from roster.observability import history
from tests.support import groups
from tests.support.groups import ConfluentMember, Watch

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("group-events")]

SETTINGS = {"group.initial.rebalance.delay.ms": "0",
            "group.consumer.heartbeat.interval.ms": "500"}   # KIP-848 hand-overs
HEARTBEAT_MS = 300
SESSION_MS = 6000


@pytest.fixture(scope="module")
def events_broker(tmp_path_factory):
    from tests.support.process import BrokerProcess
    broker = BrokerProcess(tmp_path_factory.mktemp("group-events"), SETTINGS).start()
    yield broker
    broker.stop()


@pytest.fixture
def running(events_broker):
    members: list = []
    mark = len(events_broker.output)
    try:
        yield members
    finally:
        groups.stop_all(members)
    print("broker output:\n" + "\n".join(events_broker.output[mark:]))


def member(watch, broker, group, name, instance_id=None):
    return ConfluentMember(watch, broker.bootstrap, group, group, name, instance_id,
                           {"heartbeat.interval.ms": HEARTBEAT_MS,
                            "session.timeout.ms": SESSION_MS})


def recorded(broker, group, predicate, timeout_s=20.0):
    """The group's events once predicate(events) holds: follows the topic (Fetch long polls),
    no sleeps."""
    seen: list = []
    with AdminClient(broker.bootstrap) as client:
        for event in history.events(client, group, follow=True, wait_ms=500,
                                    timeout_s=timeout_s):
            seen.append(event)
            if predicate(seen):
                return seen
    raise AssertionError(f"events of {group} never satisfied the test: {seen}")


def test_static_rolling_bounce_saves_every_rebalance(events_broker, running):
    group = "events-static"
    groups.create_topic(events_broker.bootstrap, group, 6)
    watch = Watch()
    slots = [member(watch, events_broker, group, f"s-{i}", f"inst-{i}") for i in range(3)]
    running.extend(slots)
    for m in slots:
        m.start()
    groups.wait_split(watch, slots, 6)
    first = recorded(events_broker, group,
                     lambda es: any(e.kind == ev.GENERATION and len(e.members_after) == 3
                                    for e in es))
    generation = max(e.generation for e in first)
    for i in range(3):
        slots[i].stop()           # a static member's close sends no LeaveGroup
        again = member(watch, events_broker, group, f"s-{i}-again", f"inst-{i}")
        running.append(again)
        slots[i] = again
        again.start()
        watch.wait_for(lambda: again.count("assign") >= 1, groups.DEADLINE_S,
                       lambda: f"inst-{i} assigned again")
    every = recorded(events_broker, group,
                     lambda es: sum(e.kind == ev.SAVED for e in es) >= 3)
    saved = [e for e in every if e.kind == ev.SAVED]
    assert [e.trigger.instance_id for e in saved] == ["inst-0", "inst-1", "inst-2"]
    assert all(e.generation == generation and e.trigger.fenced_id for e in saved)
    later = every[every.index(saved[0]):]
    assert [e for e in later if e.kind == ev.GENERATION] == [], later

    # the timeline, as a person reads it
    out = subprocess.run([sys.executable, "-m", "roster", "groups", "--bootstrap-server",
                          events_broker.bootstrap, "history", group],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    assert out.count(f"  saved      gen {generation}") == 3, out
    assert "3 rebalance(s) saved by static membership" in out, out


def test_dynamic_bounce_records_generations_with_partitions_moved(events_broker, running):
    group = "events-dynamic"
    groups.create_topic(events_broker.bootstrap, group, 6)
    watch = Watch()
    slots = [member(watch, events_broker, group, f"d-{i}") for i in range(3)]
    running.extend(slots)
    for m in slots:
        m.start()
    groups.wait_split(watch, slots, 6)
    settled = recorded(events_broker, group,
                       lambda es: any(e.kind == ev.GENERATION and e.outcome == "stable"
                                      and len(e.members_after) == 3 for e in es))
    count = len(settled)
    slots[0].stop()               # LeaveGroup: a rebalance
    others = slots[1:]
    watch.wait_for(lambda: groups.split_evenly(others, 6), groups.DEADLINE_S,
                   lambda: "the others took over" + groups.describe_assignment(others))
    again = member(watch, events_broker, group, "d-0-again")
    running.append(again)
    slots[0] = again
    again.start()
    groups.wait_split(watch, slots, 6)
    every = recorded(events_broker, group,
                     lambda es: len([e for e in es[count:] if e.outcome == "stable"]) >= 2)
    bounce = [e for e in every[count:] if e.kind == ev.GENERATION]
    stable = [e for e in bounce if e.outcome == "stable"]
    assert stable[0].trigger.kind == ev.MEMBER_LEFT
    assert len(stable[0].members_after) == 2 and stable[0].moved
    assert all(m.before is not None and m.after is not None for m in stable[0].moved)
    assert stable[1].trigger.kind == ev.MEMBER_JOINED and len(stable[1].members_after) == 3
    assert stable[1].moved and all(m.after == stable[1].trigger.member_id
                                   for m in stable[1].moved if m.after not in
                                   {s for s, _ in stable[0].members_after})
    assert [e.generation for e in stable] == sorted(e.generation for e in stable)


def test_any_kafka_client_reads_the_events(events_broker, running):
    from confluent_kafka import Consumer, TopicPartition
    group = "events-read"   # a group of its own: the test does not rely on the others' events
    groups.create_topic(events_broker.bootstrap, group, 2)
    watch = Watch()
    running.append(member(watch, events_broker, group, "r-0"))
    running[0].start()
    groups.wait_split(watch, running, 2)
    recorded(events_broker, group,
             lambda es: any(e.kind == ev.GENERATION and e.outcome == "stable" for e in es))
    with AdminClient(events_broker.bootstrap) as client:
        topic = history._topic(client)
    consumer = Consumer({"bootstrap.servers": events_broker.bootstrap, "group.id": "reader",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(ev_topic(), p.partition_index, 0)
                         for p in topic.partitions])
        seen = []
        while not any(e["group_id"] == group and e["kind"] == ev.GENERATION for e in seen):
            message = consumer.poll(10)
            assert message is not None, f"no event of {group} among the {len(seen)} read"
            assert message.error() is None, message.error()
            seen.append(json.loads(message.value()))
        assert all(set(e) >= {"group_id", "kind", "generation", "trigger"} for e in seen)
    finally:
        consumer.close()


def ev_topic():
    from roster.observability.event_log import EVENTS_TOPIC
    return EVENTS_TOPIC


def test_consumer_protocol_epochs_with_hand_overs(events_broker, running):
    """KIP-848 (confluent-kafka, group.protocol=consumer): a member joining a group of one
    is one epoch, with the partitions handed over and how long each had no owner."""
    from tests.interop.test_consumer_protocol import ConsumerProtocolMember
    group = "events-kip848"
    groups.create_topic(events_broker.bootstrap, group, 4)
    watch = Watch()
    first = ConsumerProtocolMember(watch, events_broker.bootstrap, group, group, "k-0")
    running.append(first)
    first.start()
    groups.wait_split(watch, [first], 4)
    second = ConsumerProtocolMember(watch, events_broker.bootstrap, group, group, "k-1")
    running.append(second)
    second.start()
    groups.wait_split(watch, [first, second], 4)
    every = recorded(events_broker, group,
                     lambda es: any(len(e.members_after) == 2 and e.outcome == "stable"
                                    for e in es))
    joined = [e for e in every if len(e.members_after) == 2 and e.outcome == "stable"][0]
    assert joined.protocol == ev.CONSUMER and joined.trigger.kind == ev.MEMBER_JOINED
    assert len(joined.moved) == 2
    assert all(m.before is not None and m.after is not None and m.unowned_ms is not None
               and m.unowned_ms >= 0 for m in joined.moved)
    assert [e.generation for e in every if e.kind == ev.GENERATION] == \
        sorted(e.generation for e in every if e.kind == ev.GENERATION)
