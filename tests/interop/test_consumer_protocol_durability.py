"""Consumer groups (KIP-848) survive a broker kill -9: their records in __consumer_offsets
(Kafka's types 3-8) are replayed at start, and librdkafka members (group.protocol=consumer)
heartbeat on with the epochs they had and keep their partitions: no revoke or assign."""
from __future__ import annotations

import pytest

from tests.interop.test_consumer_protocol import ConsumerProtocolMember
from tests.support import groups
from tests.support.groups import Watch

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("consumer-protocol-durability")]

PARTITIONS = 6
SETTINGS = {"group.consumer.heartbeat.interval.ms": "500"}


def describe(bootstrap: str, group: str):
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_consumer_groups([group])[group].result(20)
    return {m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions)
            for m in described.members}


def test_kill_9_and_members_keep_their_partitions(tmp_path):
    from tests.support.process import BrokerProcess
    broker = BrokerProcess(tmp_path / "data", SETTINGS).start()
    watch = Watch()
    members = [ConsumerProtocolMember(watch, broker.bootstrap, "cpd-g", "cpd", f"m{i}",
                                      instance_id=f"inst-{i}" if i < 2 else None)
               for i in range(3)]
    try:
        groups.create_topic(broker.bootstrap, "cpd", PARTITIONS)
        with groups.running(broker, members):
            groups.wait_split(watch, members, PARTITIONS)
            before = describe(broker.bootstrap, "cpd-g")
            calls = {m.name: m.callbacks() for m in members}
            owner = {p: m for m in members for p in m.assigned}

            broker.kill9()
            broker.start()

            # the group came back as it was, members and assignments alike
            assert describe(broker.bootstrap, "cpd-g") == before
            produced = groups.produce_known(broker.bootstrap, "cpd", PARTITIONS, 30, "k9")
            watch.wait_for(lambda: sum(len(m.records) for m in members) >= 30, groups.DEADLINE_S,
                           lambda: "every record consumed after the restart"
                           + groups.describe_assignment(members))
            assert sorted(groups.consumed_values(members)) == sorted(produced.values)
            for m in members:
                assert all(owner[r.partition] is m for r in m.records)
                assert m.callbacks() == calls[m.name], groups.describe_assignment(members)
            assert describe(broker.bootstrap, "cpd-g") == before
    finally:
        broker.stop()
