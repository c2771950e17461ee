"""`roster migrate` into the three-node Kafka cluster: the plan is carried to where Kafka keeps
each piece (topic configs through any broker, offsets through the group's coordinator, log
offsets from each partition's leader), given the cluster as Kafka's tools take it, a
comma-separated bootstrap list. (ACLs and SCRAM users, through the cluster's SASL listener,
are test_migrate_users_acls.py's.)"""
from __future__ import annotations

import pytest

from roster.admin import groups as group_wire
from roster.admin import migrate
from roster.admin import offsets as offset_wire
from roster.admin import reset as offset_reset
from roster.admin import topics as topic_wire
from roster.admin.client import AdminClient
from roster.admin.cluster import Cluster
from tests.support.cli import roster
from tests.support.kafka_peer import PEER_SETTINGS, unique_name
from tests.support.process import BrokerProcess

pytestmark = pytest.mark.xdist_group("kafka_cluster")


def _produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for partition, count in counts.items():
        for i in range(count):
            producer.produce(topic, value=f"v{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def test_migrate_into_a_three_node_cluster(cluster, tmp_path):
    mirrored, fresh = unique_name("mig-mirrored"), unique_name("mig-fresh")
    caught_up, idle, configured = (unique_name("mig-caught-up"), unique_name("mig-idle"),
                                   unique_name("mig-configured"))
    counts = {0: 2, 1: 1, 2: 3}
    source = BrokerProcess(tmp_path / "roster", PEER_SETTINGS).start()
    try:
        with AdminClient(source.bootstrap) as client:
            topic_wire.create(client, mirrored, 3, {"retention.ms": "7200000"})
            topic_wire.create(client, fresh, 2, {"min.insync.replicas": "2",
                                                 "cleanup.policy": "compact"})
            group_wire.expect(client, configured, {"consumer.heartbeat.interval.ms": "2000"},
                              [])
        # the same records on both sides, as a caught-up mirror leaves them
        cluster.create_topic(mirrored, partitions=3)
        _produce(source.bootstrap, mirrored, counts)
        _produce(cluster.bootstrap, mirrored, counts)
        offsets = {(mirrored, 0): 2, (mirrored, 1): 0, (mirrored, 2): 3}
        with AdminClient(source.bootstrap) as client:
            offset_reset.execute(client, offset_reset.Plan(caught_up, offsets))
            offset_reset.execute(client, offset_reset.Plan(idle, {(fresh, 0): 0}))

        argv = ("migrate", "--bootstrap-server", source.bootstrap, "--to", cluster.bootstrap)
        dry = roster(*argv)
        assert dry.returncode == 0, dry.stderr
        assert "to the Kafka cluster" in dry.stdout and "(3 broker(s))" in dry.stdout
        assert f"commit {mirrored}-0=2, {mirrored}-1=0, {mirrored}-2=3" in dry.stdout
        assert f"commit {fresh}-0=0" in dry.stdout
        done = roster(*argv, "--execute")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "the target shows nothing left to migrate" in done.stdout
        again = roster(*argv)
        assert again.returncode == 0 and "nothing to migrate" in again.stdout, again.stdout
    finally:
        source.stop()

    with Cluster(cluster.bootstrap) as target:
        assert topic_wire.own_configs(target.main, mirrored)["retention.ms"] == "7200000"
        found = topic_wire.metadata(target.main, [fresh]).topics[0]
        assert len(found.partitions) == 2
        assert len(found.partitions[0].replica_nodes) == 3   # the cluster's default
        assert topic_wire.own_configs(target.main, fresh) == {"min.insync.replicas": "2",
                                                              "cleanup.policy": "compact"}
        assert offset_wire.committed(target.coordinator(caught_up), caught_up) == offsets
        assert offset_wire.committed(target.coordinator(idle), idle) == {(fresh, 0): 0}
        assert migrate.group_configs(target.main, configured) == {
            "consumer.heartbeat.interval.ms": "2000"}
