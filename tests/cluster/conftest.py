"""The tests that run roster's client, connector and tools on a three-node Kafka cluster
(tests/support/kafka_cluster.py). Every module here is marked xdist_group("kafka_cluster"), so
one pytest worker starts the three JVMs once and all of these tests share them."""
from __future__ import annotations

import pytest


@pytest.fixture
def cluster(kafka_cluster):
    """The shared cluster with all three nodes up, and up again after the test (a test that
    killed a node and failed before restarting it leaves no hole for the next one)."""
    kafka_cluster.heal()
    yield kafka_cluster
    kafka_cluster.heal()
