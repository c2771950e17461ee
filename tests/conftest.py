import pytest

from tests.support.process import BrokerProcess


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
