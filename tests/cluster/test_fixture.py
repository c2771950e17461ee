"""The cluster fixture itself: three brokers, replication factor 3 and min.insync.replicas 2
for the internal topics and the test topics, and a leader that moves when its node is killed."""
from __future__ import annotations

import pytest

from roster.admin.client import AdminClient
from roster.admin.topics import own_configs
from tests.support.kafka_peer import unique_name

pytestmark = pytest.mark.xdist_group("kafka_cluster")


def test_three_brokers_replicate_internal_and_test_topics(cluster):
    answer = cluster.metadata()
    assert sorted(b.node_id for b in answer.brokers) == [1, 2, 3]
    internal = {t.name: t for t in answer.topics if t.name.startswith("__")}
    for name in ("__consumer_offsets", "__transaction_state"):
        assert name in internal, sorted(internal)
        for p in internal[name].partitions:
            assert sorted(p.replica_nodes) == [1, 2, 3] and sorted(p.isr_nodes) == [1, 2, 3]
    topic = unique_name("fixture")
    cluster.create_topic(topic, partitions=3)
    assert {cluster.leader_of(topic, p) for p in range(3)} <= {1, 2, 3}
    assert all(cluster.isr_of(topic, p) == {1, 2, 3} for p in range(3))
    with AdminClient(cluster.node(1).bootstrap) as admin:
        assert own_configs(admin, topic)["min.insync.replicas"] == "2"
    # the coordinator of a group is one of the three, as every node says
    assert cluster.coordinator_of(unique_name("g")) in (1, 2, 3)


def test_kill9_moves_the_leader_and_restart_rejoins_the_isr(cluster):
    topic = unique_name("fixture-kill")
    cluster.create_topic(topic, partitions=1)
    victim = cluster.leader_of(topic, 0)
    cluster.kill9(victim)
    assert not cluster.node(victim).alive()
    cluster.wait_fenced(victim)
    assert cluster.leader_of(topic, 0) not in (victim, -1)
    assert victim not in cluster.isr_of(topic, 0)
    cluster.restart(victim)
    assert cluster.isr_of(topic, 0) == {1, 2, 3}
