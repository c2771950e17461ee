"""One SparkSession for every Spark test (local[2], the fast-test configs), and one roster
broker per test module. Spark's Python workers must run this venv's interpreter, which has
roster installed."""
from __future__ import annotations

import asyncio

import pytest
from packaging.version import Version

from roster.admin.client import AdminClient, AdminError
from roster.admin.groups import describe
from roster.admin.topics import create
from roster.client.producer import Producer
from roster.spark.wire import run_sync
from tests.spark.session import loopback_environment, local_session
from tests.support.process import BrokerProcess

# pyspark and pyarrow are part of the test extra (pyproject.toml), so an import that fails here
# is a broken install, never a reason to skip: the run stops with the import's own error.
try:
    import pyarrow  # noqa: F401
    import pyspark
except ImportError as exc:
    raise ImportError(f"tests/spark needs pyspark and pyarrow, which `pip install -e '.[test]'` "
                      f"installs; importing them failed: {exc}") from exc
# as numbers: compared as strings, "4.10" would be older than "4.2" (a dev or rc build of 4.2
# counts as 4.2)
if Version(pyspark.__version__).release[:2] < (4, 2):
    raise ImportError(f"tests/spark needs pyspark 4.2 or newer (pyproject.toml's spark extra); "
                      f"this environment has {pyspark.__version__}")

loopback_environment()


def pytest_configure(config):
    config.addinivalue_line("markers", "spark: runs Spark (pyspark) against a real roster broker")


@pytest.fixture(scope="session")
def spark():
    session = local_session("roster-spark-tests")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def roster_broker(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("spark-broker"),
                           {"group.initial.rebalance.delay.ms": "0"})
    broker.start()
    yield broker
    broker.stop()


class Kafka:
    """Small blocking helpers over roster.client and roster.admin for the tests."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def create(self, topic: str, partitions: int) -> None:
        with AdminClient(self.bootstrap) as admin:
            create(admin, topic, partitions, {})

    def produce(self, topic: str, records, partition: int | None = None):
        """records: (key, value[, headers]) tuples; returns [(partition, offset)]."""
        async def go():
            producer = Producer(self.bootstrap)
            try:
                return [await producer.send(topic, r[1], key=r[0],
                                            headers=r[2] if len(r) > 2 else (),
                                            partition=partition) for r in records]
            finally:
                await producer.close()
        return asyncio.run(go())

    def committed(self, group: str, topic: str, partitions: int) -> dict[int, int]:
        async def fetch(broker):
            return await broker.committed(group, [(topic, p) for p in range(partitions)])
        answer = run_sync(fetch, bootstrap=self.bootstrap)
        return {p: o for (t, p), (o, _) in answer.items()}

    def describe(self, group: str):
        """DescribeGroups' entry for the group, or None while it does not exist."""
        with AdminClient(self.bootstrap) as admin:
            try:
                return describe(admin, group)
            except AdminError:
                return None


@pytest.fixture(scope="module")
def kafka(roster_broker):
    return Kafka(roster_broker.bootstrap)
