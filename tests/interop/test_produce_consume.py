"""Real clients produce with their own compression codecs; every client reads everything back."""
from __future__ import annotations

from collections import defaultdict

import pytest

from tests.support import clients
from tests.support.process import BrokerProcess

PARTITIONS = 3
COUNT = 60

PRODUCERS = {
    "confluent-lz4": lambda b, t, r: clients.produce_confluent(b, t, r, "lz4"),
    "confluent-zstd": lambda b, t, r: clients.produce_confluent(b, t, r, "zstd"),
    "kafka-python-gzip": lambda b, t, r: clients.produce_kafka_python(b, t, r, "gzip"),
    "aiokafka-snappy": lambda b, t, r: clients.produce_aiokafka(b, t, r, "snappy"),
}

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("produce-consume")]


@pytest.fixture(scope="module")
def loaded_broker(tmp_path_factory):
    """One broker with one topic per producer, each filled by that producer."""
    broker = BrokerProcess(tmp_path_factory.mktemp("produce-consume"),
                           {"auto.create.topics.enable": "false"}).start()
    from roster.admin.client import AdminClient
    from roster.admin.topics import create
    expected = {}
    with AdminClient(broker.bootstrap) as admin:
        for name, produce in PRODUCERS.items():
            create(admin, name, PARTITIONS, {})
            records = clients.sample_records(COUNT, PARTITIONS, name)
            produce(broker.bootstrap, name, records)
            expected[name] = records
    yield broker, expected
    broker.stop()


def by_partition(records):
    grouped = defaultdict(list)
    for r in records:
        grouped[r.partition].append(r)
    return grouped


@pytest.mark.parametrize("consumer", sorted(clients.CONSUMERS))
@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_every_client_reads_what_every_client_wrote(loaded_broker, producer, consumer):
    broker, expected = loaded_broker
    seen = clients.CONSUMERS[consumer](broker.bootstrap, producer, PARTITIONS, COUNT)
    assert len(seen) == COUNT
    want, got = by_partition(expected[producer]), by_partition(seen)
    for partition in range(PARTITIONS):
        # order within a partition is the production order, and offsets are dense from 0
        assert [r.content() for r in got[partition]] == [r.content() for r in want[partition]]
        assert [r.offset for r in got[partition]] == list(range(len(want[partition])))
