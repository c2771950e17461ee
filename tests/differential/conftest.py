import pytest

from tests.support.kafka_peer import PEER_SETTINGS
from tests.support.process import BrokerProcess


@pytest.fixture(scope="session")
def roster_peer(tmp_path_factory):
    """The roster broker every differential scenario runs against, with Kafka's peer settings."""
    broker = BrokerProcess(tmp_path_factory.mktemp("roster-peer"), PEER_SETTINGS).start()
    yield broker
    broker.stop()
