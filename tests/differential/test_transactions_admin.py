"""The transaction admin APIs, Kafka beside roster, request by request: DescribeTransactions,
ListTransactions (its filters and refusals) and WriteTxnMarkers as Admin.abortTransaction sends
it."""
from __future__ import annotations

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.differential.test_transactions import add, coordinator_ready, initialized, produce


def listed(conn, **filters) -> list[tuple[str, str]]:
    answer = conn.call(ApiKey.LIST_TRANSACTIONS, 2, keep=("unknown_state_filters",), **{
        "state_filters": [], "producer_id_filters": [], "duration_filter": -1,
        "transactional_id_pattern": None, **filters})
    return sorted((s.transactional_id, s.transaction_state) for s in answer.transaction_states)


@scenario(outcome="""DescribeTransactions answers TRANSACTIONAL_ID_NOT_FOUND for an unknown id
and INVALID_REQUEST for an empty one, and an open transaction as Ongoing with its partition;
ListTransactions reports an unknown state filter back, filters by state, producer id, duration
and a pattern that must match the whole id, and refuses a pattern that is no regular expression
(INVALID_REGULAR_EXPRESSION); WriteTxnMarkers answers UNKNOWN_TOPIC_OR_PARTITION for a partition
that does not exist and aborts the open transaction on the partition, which then still shows in
the coordinator as Ongoing""")
def test_transaction_admin_answers(s):
    topic = s.topic("t", 1)
    tid = s.name("tx")
    setup = coordinator_ready(s, tid)
    producer = initialized(s, setup, tid)
    add(setup, tid, producer, topic, (0,))
    produce(setup, tid, producer, topic)
    admin = s.conn("admin")
    described = admin.call(ApiKey.DESCRIBE_TRANSACTIONS, 0,
                           transactional_ids=[s.name("never"), "", tid])
    mine = described.transaction_states[2]
    s.note("described", state=mine.transaction_state, epoch=mine.producer_epoch,
           partitions=[(t.topic == topic, list(t.partitions)) for t in mine.topics])
    prefix = s.name("")
    s.note("listed", ongoing=[i for i, _ in listed(admin, state_filters=["Ongoing", "Nope"])
                              if i.startswith(prefix)],
           by_producer=listed(admin, producer_id_filters=[producer[0]]),
           whole_id=listed(admin, transactional_id_pattern=tid),
           part_of_id=listed(admin, transactional_id_pattern=tid[:-1]),
           older_than_an_hour=[i for i, _ in listed(admin, duration_filter=3_600_000)
                               if i.startswith(prefix)])
    admin.call(ApiKey.LIST_TRANSACTIONS, 2, state_filters=[], producer_id_filters=[],
               duration_filter=-1, transactional_id_pattern="(")
    for partition in (5, 0):     # one call each: Kafka answers partitions in hash order
        admin.call(ApiKey.WRITE_TXN_MARKERS, 1, markers=[{
            "producer_id": producer[0], "producer_epoch": producer[1],
            "transaction_result": False, "coordinator_epoch": 0,
            "topics": [{"name": topic, "partition_indexes": [partition]}]}])
    after = admin.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[tid])
    s.note("after the abort marker", state=after.transaction_states[0].transaction_state)
