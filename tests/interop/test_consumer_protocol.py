"""confluent-kafka 2.16 (librdkafka 2.16) with `group.protocol=consumer` against roster: the
KIP-848 consumer group protocol end to end (ConsumerGroupHeartbeat, server-side assignment)."""
from __future__ import annotations

from collections import Counter

import pytest

from tests.support import groups
from tests.support.groups import ConfluentMember, Watch

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("consumer-protocol")]

PARTITIONS = 6
COUNT = 60
SETTINGS = {"group.consumer.heartbeat.interval.ms": "500"}


class ConsumerProtocolMember(ConfluentMember):
    """A confluent-kafka member speaking the consumer group protocol. Its callbacks name only
    the partitions that move (incremental), and the broker owns session and heartbeat
    timing (the client refuses session.timeout.ms / heartbeat.interval.ms with it)."""

    @property
    def incremental(self) -> bool:
        return True

    def conf(self) -> dict:
        conf = {"bootstrap.servers": self.bootstrap, "group.id": self.group,
                "group.protocol": "consumer", "auto.offset.reset": "earliest",
                "enable.auto.commit": False, "enable.partition.eof": False,
                "client.id": self.name}
        if self.instance_id is not None:
            conf["group.instance.id"] = self.instance_id
        conf.update(self.config)
        return conf


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from tests.support.process import BrokerProcess
    broker = BrokerProcess(tmp_path_factory.mktemp("consumer-protocol"), SETTINGS).start()
    yield broker
    broker.stop()


def members_of(broker, watch, group, topic, n, **kw):
    return [ConsumerProtocolMember(watch, broker.bootstrap, group, topic, f"{group}-m{i}", **kw)
            for i in range(n)]


def test_three_members_split_six_partitions_and_consume_everything(broker):
    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-split", PARTITIONS)
    members = members_of(broker, watch, "cp-split-g", "cp-split", 3)
    try:
        for m in members:
            m.start()
        groups.wait_split(watch, members, PARTITIONS)
        owner = {p: m for m in members for p in m.assigned}
        produced = groups.produce_known(broker.bootstrap, "cp-split", PARTITIONS, COUNT, "cp")
        watch.wait_for(lambda: sum(len(m.records) for m in members) >= COUNT, groups.DEADLINE_S,
                       lambda: f"{COUNT} records consumed; got "
                       f"{[len(m.records) for m in members]}" + groups.describe_assignment(members))
        counts = Counter(r.value for m in members for r in m.records)
        assert sorted(counts) == sorted(produced.values)
        assert [v for v, n in counts.items() if n > 1] == []
        for m in members:
            assert all(owner[r.partition] is m for r in m.records)
    except BaseException:
        print("broker output:\n" + "\n".join(broker.output[-80:]))
        raise
    finally:
        for m in members:
            m.stop()
