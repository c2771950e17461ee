"""Commit and abort as consumers see them, for every transactional producer: confluent-kafka,
kafka-python, aiokafka and the Java client 4.4 (Transaction Version 2, and the classic protocol
on a broker whose finalized transaction.version is 1). Each producer commits one transaction
and aborts the next, both over three partitions; then confluent-kafka's consumer and the
producing library's own consumer read every partition from the start at both isolation levels.
read_committed sees exactly the committed records and nothing of the aborted ones, and its
position ends past the abort marker (it steps over the markers and the aborted batches);
read_uncommitted sees both. Everything but the classic Java case runs against Apache Kafka
4.4 too, with the same assertions: the judge of what each library does."""
from __future__ import annotations

import pytest

from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import PEER_SETTINGS, unique_name
from tests.support.process import BrokerProcess
from tests.support.transactional_clients import PRODUCERS, READERS
from tests.support.transactions import create_topics, log_entries, wait_for

pytestmark = pytest.mark.interop

PARTITIONS = 3
COMMITTED = [b"committed-%d" % i for i in range(2 * PARTITIONS)]
ABORTED = [b"aborted-%d" % i for i in range(2 * PARTITIONS)]


def per_partition(values: list[bytes]) -> dict[int, list[bytes]]:
    """Where the producers put them: the i-th value of a transaction in partition i % 3."""
    return {p: values[p::PARTITIONS] for p in range(PARTITIONS)}


# every partition: its committed records, the commit marker, its aborted records, the abort marker
ENDS = [len(c) + 1 + len(a) + 1
        for c, a in zip(per_partition(COMMITTED).values(), per_partition(ABORTED).values())]
EXPECTED = {
    "read_committed": per_partition(COMMITTED),
    "read_uncommitted": {p: c + a for (p, c), a in zip(per_partition(COMMITTED).items(),
                                                        per_partition(ABORTED).values())},
}


@pytest.fixture(scope="module")
def classic_broker(tmp_path_factory):
    """roster with the finalized transaction.version at 1: Kafka 4.x clients speak classic."""
    broker = BrokerProcess(tmp_path_factory.mktemp("visibility-classic"),
                           {**PEER_SETTINGS, "transaction.version": "1"}).start()
    yield broker
    broker.stop()


def marker_epochs(broker, topic: str, partition: int) -> tuple[int, int]:
    """The partition's log is the committed data, its marker, the aborted data, its marker:
    the (commit, abort) markers' producer epochs."""
    def both_markers():
        entries = log_entries(broker.bootstrap, topic, partition)
        return entries if [e[0] for e in entries if e[0] != "data"] == ["commit", "abort"] \
            else None
    entries = wait_for(both_markers, f"the markers of {topic}-{partition}")
    kinds = [kind for kind, *_ in entries]
    commit_at = kinds.index("commit")
    assert set(kinds[:commit_at]) == set(kinds[commit_at + 1:-1]) == {"data"}, kinds
    commit, abort = (e[2] for e in entries if e[0] != "data")
    return commit, abort


def check_visibility(broker, producer: str, epoch_step: int) -> None:
    """`producer` commits then aborts; each reader at each level sees what EXPECTED says and
    ends at ENDS; the abort marker's epoch is the commit marker's plus `epoch_step` (1 under
    Transaction Version 2, which bumps the epoch at every EndTxn; 0 under the classic one)."""
    topic = unique_name(f"visible-{producer}")
    create_topics(broker.bootstrap, topic, partitions=PARTITIONS)
    PRODUCERS[producer](broker.bootstrap, topic, topic, PARTITIONS,
                        [(True, COMMITTED), (False, ABORTED)])
    for partition in range(PARTITIONS):
        commit, abort = marker_epochs(broker, topic, partition)
        assert abort - commit == epoch_step, (partition, commit, abort)
    for reader in dict.fromkeys(["confluent-kafka", producer]):
        reads = READERS[reader](broker.bootstrap, topic, list(EXPECTED), ENDS)
        for isolation, expected in EXPECTED.items():
            read = reads[isolation]
            assert read.values == expected, (reader, isolation)
            assert read.positions == dict(enumerate(ENDS)), (reader, isolation)


# the Python clients speak the classic protocol whatever the broker finalizes
EPOCH_STEP = {"confluent-kafka": 0, "kafka-python": 0, "aiokafka": 0, "java": 1}


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
@pytest.mark.parametrize("producer", list(PRODUCERS))
def test_commit_visible_and_abort_invisible_to_read_committed(target, producer):
    check_visibility(target, producer, EPOCH_STEP[producer])


def test_the_java_classic_producer_commit_visible_and_abort_invisible(classic_broker):
    check_visibility(classic_broker, "java", epoch_step=0)
