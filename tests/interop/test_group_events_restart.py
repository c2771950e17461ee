"""The flight recorder across a broker restart (kill -9, real clients): the first generation
after the restart is compared with the last one before it (the groups replayed from
__consumer_offsets), so it names the members that were there and only the partitions that
really changed owner — classic groups (confluent-kafka, protocol type consumer) and consumer
groups (KIP-848) alike."""
from __future__ import annotations

import pytest

from roster.observability import events as ev
from tests.interop.test_consumer_protocol import ConsumerProtocolMember
from tests.interop.test_group_events import HEARTBEAT_MS, SETTINGS, recorded
from tests.support import groups
from tests.support.groups import ConfluentMember, Watch

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("group-events-restart")]

PARTITIONS = 4
# The classic members must outlive the restart: a loaded machine may take several seconds to
# bring the broker back, and librdkafka's reconnect backoff grows to 10 s by default. A member
# whose session ran out meanwhile rejoins under a new id, and every partition then "moves".
CLASSIC_MEMBER = {"heartbeat.interval.ms": HEARTBEAT_MS, "session.timeout.ms": 30_000,
                  "reconnect.backoff.max.ms": 200}


def stable_with(count: int):
    def holds(events) -> bool:
        return any(e.kind == ev.GENERATION and e.outcome == "stable"
                   and len(e.members_after) == count for e in events)
    return holds


def last_stable_with(events, count: int):
    return [e for e in events if e.kind == ev.GENERATION and e.outcome == "stable"
            and len(e.members_after) == count][-1]


def bounce_then_join(broker, make_member, group: str, before: int):
    """`before` members settle; kill -9 and restart; one more member joins. Returns the last
    generation before the restart and the first with the newcomer after it."""
    watch = Watch()
    members = [make_member(watch, f"{group}-{i}") for i in range(before)]
    try:
        groups.create_topic(broker.bootstrap, group, PARTITIONS)
        for m in members:
            m.start()
        groups.wait_split(watch, members, PARTITIONS)
        settled = last_stable_with(recorded(broker, group, stable_with(before)), before)

        broker.kill9()
        broker.start()   # same port: the members carry on with the replayed group

        newcomer = make_member(watch, f"{group}-new")
        members.append(newcomer)
        newcomer.start()
        groups.wait_split(watch, members, PARTITIONS)
        return settled, last_stable_with(recorded(broker, group, stable_with(before + 1)),
                                         before + 1)
    except BaseException:
        print("broker output:\n" + "\n".join(broker.output[-80:]))
        raise
    finally:
        groups.stop_all(members)


def assert_compared_with_before_the_restart(settled, joined) -> None:
    assert joined.generation > settled.generation
    assert joined.trigger.kind == ev.MEMBER_JOINED
    # the members the group had when the broker died, not nobody (nor the newcomer too)
    assert joined.members_before == settled.members_after
    # only the partitions the newcomer took (or that shifted to make room), each from the
    # owner it had before the restart
    assert 0 < len(joined.moved) < PARTITIONS, joined.moved
    assert all(m.before is not None and m.after is not None for m in joined.moved), joined.moved


def test_classic_group_after_a_restart(broker_factory):
    broker = broker_factory(SETTINGS)

    def member(watch, name):
        return ConfluentMember(watch, broker.bootstrap, "restart-classic", "restart-classic",
                               name, None, CLASSIC_MEMBER)
    settled, joined = bounce_then_join(broker, member, "restart-classic", 2)
    assert joined.protocol == ev.CLASSIC
    assert_compared_with_before_the_restart(settled, joined)


def test_consumer_group_after_a_restart(broker_factory):
    broker = broker_factory(SETTINGS)

    def member(watch, name):
        return ConsumerProtocolMember(watch, broker.bootstrap, "restart-kip848",
                                      "restart-kip848", name)
    settled, joined = bounce_then_join(broker, member, "restart-kip848", 1)
    assert joined.protocol == ev.CONSUMER
    assert_compared_with_before_the_restart(settled, joined)
    assert len(joined.moved) == PARTITIONS // 2
