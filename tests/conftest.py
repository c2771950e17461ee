import pytest

from tests.support.process import BrokerProcess

# librdkafka's log lines into the test's captured log, clients a test leaves open closed; and
# the Kafka-backed suites spread over both workers by module; the Kafka cluster held only
# while a worker's tests use it
pytest_plugins = ["tests.support.client_tracking", "tests.support.xdist_groups",
                  "tests.support.held_resources"]


@pytest.fixture
def broker_factory(tmp_path):
    """Start brokers on fresh data directories; all are stopped at the end of the test."""
    started: list[BrokerProcess] = []

    def start(settings: dict[str, str] | None = None, data_dir=None) -> BrokerProcess:
        broker = BrokerProcess(data_dir or tmp_path / f"data{len(started)}", settings)
        started.append(broker)
        return broker.start()

    yield start
    for broker in started:
        broker.stop()


@pytest.fixture
def broker(broker_factory):
    return broker_factory()


@pytest.fixture(scope="session")
def kafka_peer():
    """Apache Kafka 4.4 on loopback, one per pytest worker (tests/support/kafka_peer.py), started
    when a test there first asks for it; tests that use it are marked xdist_group("kafka"),
    which tests/support/xdist_groups.py turns into one group per module."""
    from tests.support.kafka_peer import KafkaPeer

    peer = KafkaPeer().start()
    yield peer
    peer.stop()


@pytest.fixture(scope="session")
def kafka_peer_secure():
    """Kafka with SASL (SCRAM, PLAIN) and its StandardAuthorizer, started only when asked for."""
    from tests.support.kafka_peer import KafkaPeer

    peer = KafkaPeer(secure=True).start()
    yield peer
    peer.stop()


@pytest.fixture(scope="module")
def kafka_cluster():
    """Three Kafka 4.4 KRaft nodes (replication factor 3, min.insync.replicas 2), started only
    when a test asks for it (tests/support/kafka_cluster.py); those tests are marked
    xdist_group("kafka_cluster") so one worker owns the three JVMs, and stops them when it
    moves on to other tests (tests/support/held_resources.py)."""
    from tests.support.held_resources import held
    from tests.support.kafka_cluster import KafkaCluster

    return held("kafka_cluster", lambda: KafkaCluster().start(), KafkaCluster.stop)
