"""The online upgrade of KIP-848 with confluent-kafka 2.16: a classic static group whose members
restart one at a time with group.protocol=consumer (same group.instance.id) becomes a consumer
group without stopping. Each restarted member takes its partitions back at once; the members
not yet restarted are served inside the consumer group as classic members and see no rebalance;
offsets they commit meanwhile are where the restarted members resume. And back: a consumer
group rolled to group.protocol=classic the same way becomes a classic group again."""
from __future__ import annotations

import pytest

from tests.interop.test_consumer_protocol import ConsumerProtocolMember
from tests.support import groups
from tests.support.groups import ConfluentMember, Watch

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("consumer-protocol-upgrade")]

PARTITIONS = 6
COUNT = 60
SETTINGS = {"group.consumer.heartbeat.interval.ms": "500",
            "group.consumer.min.heartbeat.interval.ms": "100",
            "group.initial.rebalance.delay.ms": "0"}
TOPIC, GROUP = "up", "up-g"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from tests.support.process import BrokerProcess
    broker = BrokerProcess(tmp_path_factory.mktemp("consumer-protocol-upgrade"), SETTINGS).start()
    yield broker
    broker.stop()


def group_type(bootstrap: str, group: str):
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group])[group].result(20).type


def split_and_consume(watch, broker, members, topic, tag):
    """The members split the topic and consume COUNT records produced to it; returns the
    partitions each instance holds and what was produced."""
    groups.wait_split(watch, members, PARTITIONS)
    held = {m.instance_id: m.assigned for m in members}
    produced = groups.produce_known(broker.bootstrap, topic, PARTITIONS, COUNT, tag)
    groups.wait_consumed(watch, members, produced.values, f"{COUNT} records consumed")
    return held, produced


def roll(watch, members, held, make, how_many=None):
    """Restart each member (or the first `how_many`) in turn as make(i, instance id): every
    restarted member gets its partitions back and the others see no rebalance. Returns the
    members stopped."""
    retired = []
    for i in range(len(members) if how_many is None else how_many):
        old = members[i]
        old.commit()
        others = [m for m in members if m is not old]
        calls = {m.name: m.callbacks() for m in others}
        old.stop()
        retired.append(old)
        new = members[i] = make(i, old.instance_id)
        new.start()
        watch.wait_for(lambda: new.assigned == held[new.instance_id] or new.failure,
                       groups.DEADLINE_S,
                       lambda: f"{new.name} gets {sorted(held[new.instance_id])} back"
                       + groups.describe_assignment(members))
        assert new.failure is None
        for m in others:
            assert m.callbacks() == calls[m.name], \
                f"{m.name} saw a rebalance" + groups.describe_assignment(members)
            assert m.assigned == held[m.instance_id]
        # nothing the old member consumed and committed is read again
        seen = {(r.partition, r.offset) for r in old.records}
        assert not [r for r in new.records if (r.partition, r.offset) in seen]
    return retired


def test_rolling_upgrade_of_a_classic_static_group_moves_no_partition(broker):
    from confluent_kafka import ConsumerGroupType
    watch = Watch()
    groups.create_topic(broker.bootstrap, TOPIC, PARTITIONS)
    members = [ConfluentMember(watch, broker.bootstrap, GROUP, TOPIC, f"classic-{i}",
                               instance_id=f"inst-{i}",
                               config={"group.protocol": "classic"}) for i in range(3)]
    with groups.running(broker, members):
        held, produced = split_and_consume(watch, broker, members, TOPIC, "before")
        assert group_type(broker.bootstrap, GROUP) == ConsumerGroupType.CLASSIC

        def consumer(i, instance_id):
            return ConsumerProtocolMember(watch, broker.bootstrap, GROUP, TOPIC,
                                          f"consumer-{i}", instance_id=instance_id)
        # a static member leaves no LeaveGroup behind: it restarts; commits from the second
        # one on are a classic member's inside the consumer group
        retired = roll(watch, members, held, consumer)
        assert group_type(broker.bootstrap, GROUP) == ConsumerGroupType.CONSUMER
        # every partition kept its instance from start to end, and consumption goes on
        assert {m.instance_id: m.assigned for m in members} == held
        for m in members:
            assert all(e.partitions <= held[m.instance_id] for e in m.events)
        more = groups.produce_known(broker.bootstrap, TOPIC, PARTITIONS, COUNT, "after")
        everything = sorted(produced.values + more.values)
        groups.wait_consumed(watch, members + retired, everything)
        assert sorted(set(groups.consumed_values(members + retired))) == sorted(set(everything))
        assert group_type(broker.bootstrap, GROUP) == ConsumerGroupType.CONSUMER


def test_rolling_downgrade_of_a_consumer_static_group_moves_no_partition(broker):
    from confluent_kafka import ConsumerGroupType
    watch = Watch()
    topic, group = "down", "down-g"
    groups.create_topic(broker.bootstrap, topic, PARTITIONS)
    members = [ConsumerProtocolMember(watch, broker.bootstrap, group, topic, f"consumer-{i}",
                                      instance_id=f"inst-{i}") for i in range(3)]
    with groups.running(broker, members):
        held, produced = split_and_consume(watch, broker, members, topic, "before")

        def classic(i, instance_id):
            return ConfluentMember(watch, broker.bootstrap, group, topic, f"classic-{i}",
                                   instance_id=instance_id, config={"group.protocol": "classic"})
        retired = roll(watch, members, held, classic)
        # the last consumer-protocol member replaced: a classic group again, nothing moved
        assert group_type(broker.bootstrap, group) == ConsumerGroupType.CLASSIC
        assert {m.instance_id: m.assigned for m in members} == held
        more = groups.produce_known(broker.bootstrap, topic, PARTITIONS, COUNT, "after")
        groups.wait_consumed(watch, members + retired, produced.values + more.values)


def test_a_group_half_way_through_its_upgrade_survives_kill_9(tmp_path):
    """Classic members inside a consumer group are durable too (ClassicMemberMetadata): after
    kill -9 and a restart both kinds of member carry on with their partitions, no rebalance."""
    from tests.support.process import BrokerProcess
    broker = BrokerProcess(tmp_path / "data", SETTINGS).start()
    watch = Watch()
    members = [ConfluentMember(watch, broker.bootstrap, "half-g", "half", f"classic-{i}",
                               instance_id=f"inst-{i}", config={"group.protocol": "classic"})
               for i in range(3)]
    try:
        groups.create_topic(broker.bootstrap, "half", PARTITIONS)
        with groups.running(broker, members):
            held, _ = split_and_consume(watch, broker, members, "half", "first")
            roll(watch, members, held, lambda i, instance_id: ConsumerProtocolMember(
                watch, broker.bootstrap, "half-g", "half", "consumer-0", instance_id=instance_id),
                 how_many=1)
            calls = {m.name: m.callbacks() for m in members}

            broker.kill9()
            broker.start()

            produced = groups.produce_known(broker.bootstrap, "half", PARTITIONS, COUNT, "k9")
            groups.wait_consumed(watch, members, produced.values,
                                 "every record consumed after the restart")
            for m in members:
                assert m.assigned == held[m.instance_id]
                assert m.callbacks() == calls[m.name], groups.describe_assignment(members)
                assert all(r.partition in held[m.instance_id] for r in m.records)
    finally:
        broker.stop()
