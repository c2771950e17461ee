"""The transaction coordinator's answers (classic protocol, request by request), Kafka beside
roster: FindCoordinator for a transactional id, InitProducerId's timeout check, EndTxn with
nothing open, AddPartitionsToTxn with an unknown partition, a transactional batch for a
partition not in the transaction, fencing by a second InitProducerId (the first answer
CONCURRENT_TRANSACTIONS while the open transaction is aborted), and every request of the fenced
producer refused, in the versions before and after KIP-588."""
from __future__ import annotations

import datetime

from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from tests.differential.harness import scenario
from tests.differential.members import (
    ClassicMember,
    Kip848Member,
    form_alone,
    form_pair,
    split,
)
from tests.differential.test_offsets import fetch
from tests.support.transactions import txn_batch

RETRIED = (ErrorCode.concurrent_transactions, ErrorCode.coordinator_not_available,
           ErrorCode.coordinator_load_in_progress, ErrorCode.not_coordinator)


def init(conn, tid: str, timeout_ms: int = 60_000, version: int = 4):
    return conn.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id=tid,
                     transaction_timeout=datetime.timedelta(milliseconds=timeout_ms),
                     producer_id=-1, producer_epoch=-1)


def coordinator_ready(s, tid: str):
    """An untraced connection, once FindCoordinator finds the transactional id's coordinator
    (Kafka creates __transaction_state on the first lookup)."""
    setup = s.conn("setup", traced=False)
    s.wait(lambda: setup.call(ApiKey.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=[tid])
           .coordinators[0].error_code == ErrorCode.none, "the transaction coordinator")
    return setup


def initialized(s, setup, tid: str, timeout_ms: int = 60_000) -> tuple[int, int]:
    """InitProducerId retried (untraced) until answered: the (producer id, epoch)."""
    answers = []
    s.wait(lambda: answers.append(init(setup, tid, timeout_ms)) or
           answers[-1].error_code not in RETRIED, "InitProducerId")
    return answers[-1].producer_id, answers[-1].producer_epoch


def add(conn, tid, producer, topic, partitions, version=3):
    conn.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, keep=("results_by_topic_v3_and_below",),
              v3_and_below_transactional_id=tid, v3_and_below_producer_id=producer[0],
              v3_and_below_producer_epoch=producer[1], v3_and_below_topics=[
                  {"name": topic, "partitions": list(partitions)}])


def produce(conn, tid, producer, topic, sequence=0):
    conn.call(ApiKey.PRODUCE, 9, transactional_id=tid, acks=-1, timeout=10_000, topic_data=[
        {"name": topic, "partition_data": [{"index": 0, "records": txn_batch(
            producer[0], producer[1], sequence, [b"v"])}]}])


def end(conn, tid, producer, commit=True, version=3):
    conn.call(ApiKey.END_TXN, version, transactional_id=tid, producer_id=producer[0],
              producer_epoch=producer[1], committed=commit)


@scenario(outcome="""a transactional id's coordinator is found; InitProducerId refuses a
timeout above transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT); EndTxn with no open
transaction is INVALID_TXN_STATE; AddPartitionsToTxn with a partition that does not exist
answers UNKNOWN_TOPIC_OR_PARTITION for it and OPERATION_NOT_ATTEMPTED for the others; a
second producer's InitProducerId is answered CONCURRENT_TRANSACTIONS while the first one's
transaction is aborted, then succeeds; the first producer's AddPartitionsToTxn and EndTxn are
PRODUCER_FENCED (INVALID_PRODUCER_EPOCH for EndTxn v1) and its batch is refused""")
def test_transactions_fencing_and_errors(s):
    topic = s.topic("t", 1)
    tid = s.name("tx")
    setup = coordinator_ready(s, tid)
    first = s.conn("first")
    first.call(ApiKey.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=[tid])
    init(first, tid, timeout_ms=900_001)
    producer = initialized(s, setup, tid)
    s.note("first producer", epoch=producer[1])
    end(first, tid, producer)
    add(first, tid, producer, topic, (0, 7))
    produce(first, tid, producer, topic)
    add(first, tid, producer, topic, (0,))
    produce(first, tid, producer, topic)
    second = s.conn("second")
    init(second, tid)
    s.wait(lambda: init(setup, tid).error_code not in RETRIED, "the fencing abort")
    produce(first, tid, producer, topic, sequence=1)
    add(first, tid, producer, topic, (0,))
    end(first, tid, producer)
    end(first, tid, producer, version=1)


def described(conn, tid):
    return conn.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[tid]) \
        .transaction_states[0]


def open_transaction(conn, tid, producer, topic, kind: str) -> None:
    """A transaction with one batch in partition 0: a classic client adds the partition first
    (AddPartitionsToTxn), a TV2 client's Produce v12 has the broker add it."""
    if kind == "classic":
        add(conn, tid, producer, topic, (0,))
        produce(conn, tid, producer, topic)
    else:
        produce_v12(conn, tid, producer, producer[1], topic)


@scenario(outcome="""an open transaction aborted by the coordinator, because a second
InitProducerId fences its producer or because it timed out, with a classic client's transaction
(AddPartitionsToTxn) and a TV2 client's (Produce v12), transaction.version 2 finalized: the
abort completes at the epoch bumped once (Kafka 4.4 does not bump again for a TV2 abort here),
the successor gets the next one, and the fenced producer's EndTxn is PRODUCER_FENCED""")
def test_transactions_fence_epochs(s):
    topic = s.topic("t", 1)
    for kind in ("classic", "tv2"):
        tid = s.name(f"tx-{kind}")
        setup = coordinator_ready(s, tid)
        producer = initialized(s, setup, tid)
        open_transaction(setup, tid, producer, topic, kind)
        successor = s.conn(f"successor-{kind}")
        init(successor, tid)
        s.wait(lambda: described(setup, tid).transaction_state == "CompleteAbort", "the abort")
        s.note(f"{kind} aborted", epoch_bump=described(setup, tid).producer_epoch - producer[1])
        answer = init(successor, tid)
        s.note(f"{kind} successor", epoch_bump=answer.producer_epoch - producer[1])
        end(successor, tid, producer)
    for kind in ("classic", "tv2"):
        tid = s.name(f"tx-timeout-{kind}")
        setup = coordinator_ready(s, tid)
        producer = initialized(s, setup, tid, timeout_ms=1000)
        open_transaction(setup, tid, producer, topic, kind)
        s.wait(lambda: described(setup, tid).transaction_state == "CompleteAbort",
               "the timeout abort")
        s.note(f"{kind} timed out", epoch_bump=described(setup, tid).producer_epoch - producer[1])


def end_v5(conn, tid, producer, epoch, commit=True):
    return conn.call(ApiKey.END_TXN, 5, transactional_id=tid, producer_id=producer[0],
                     producer_epoch=epoch, committed=commit)


def produce_v12(conn, tid, producer, epoch, topic, sequence=0):
    conn.call(ApiKey.PRODUCE, 12, transactional_id=tid, acks=-1, timeout=10_000, topic_data=[
        {"name": topic, "partition_data": [{"index": 0, "records": txn_batch(
            producer[0], epoch, sequence, [b"v"])}]}])


@scenario(outcome="""Transaction Version 2 (KIP-890): a Produce v12 and a TxnOffsetCommit v5
need no AddPartitionsToTxn/AddOffsetsToTxn; EndTxn v5 answers the epoch bumped by one; its
retry with the old epoch is answered the same; the old epoch's batch is refused
(INVALID_PRODUCER_EPOCH); a commit with nothing open is INVALID_TXN_STATE, an abort with
nothing open bumps the epoch again""")
def test_transactions_version_2(s):
    topic = s.topic("t", 1)
    tid = s.name("tx")
    setup = coordinator_ready(s, tid)
    producer = initialized(s, setup, tid)
    first = producer[1]
    client = s.conn("client")
    produce_v12(client, tid, producer, first, topic)
    client.call(ApiKey.TXN_OFFSET_COMMIT, 5, transactional_id=tid, group_id=s.name("g"),
                producer_id=producer[0], producer_epoch=first, generation_id=-1, member_id="",
                group_instance_id=None, topics=[{"name": topic, "partitions": [
                    {"partition_index": 0, "committed_offset": 1,
                     "committed_leader_epoch": -1, "committed_metadata": ""}]}])
    ended = end_v5(client, tid, producer, first)
    s.note("committed", epoch_bump=ended.producer_epoch - first)
    s.wait(lambda: end_v5(setup, tid, producer, first).error_code
           != ErrorCode.concurrent_transactions, "the commit to complete")
    retried = end_v5(client, tid, producer, first)
    s.note("retried", epoch_bump=retried.producer_epoch - first)
    produce_v12(client, tid, producer, first, topic, sequence=1)
    end_v5(client, tid, producer, first + 1)
    bumped = end_v5(client, tid, producer, first + 1, commit=False)
    s.note("aborted with nothing open", epoch_bump=bumped.producer_epoch - first)


@scenario(outcome="""Transaction Version 2: a client's next EndTxn, sent as soon as its commit
was answered (an abort at the epoch the commit handed out), is told to retry while the commit's
markers are written; once they are, the abort is taken and bumps the epoch again: the client is
not fenced""")
def test_transactions_version_2_next_end_while_markers_are_written(s):
    topic = s.topic("t", 1)
    for i in range(3):
        tid = s.name(f"tx{i}")
        setup = coordinator_ready(s, tid)
        producer = initialized(s, setup, tid)
        first = producer[1]
        client = s.conn(f"client{i}")
        produce_v12(client, tid, producer, first, topic)
        end_v5(client, tid, producer, first)
        # as a client retries it: whether the markers are still being written when it
        # arrives is a race on either broker, so only the answer it ends with is compared
        answers = []
        quiet = s.conn(f"client{i}", traced=False)
        s.wait(lambda: answers.append(end_v5(quiet, tid, producer, first + 1, commit=False))
               or answers[-1].error_code != ErrorCode.concurrent_transactions, "the abort")
        s.note(f"abort {i}", error=ErrorCode(answers[-1].error_code).name,
               epoch_bump=answers[-1].producer_epoch - first)


def txn_commit(conn, tid, producer, group, topic, offsets, generation=-1, member_id="",
               instance_id=None):
    conn.call(ApiKey.TXN_OFFSET_COMMIT, 3, keep=("topics",), transactional_id=tid,
              group_id=group, producer_id=producer[0], producer_epoch=producer[1],
              generation_id=generation, member_id=member_id, group_instance_id=instance_id,
              topics=[{"name": topic, "partitions": [
                  {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                   "committed_metadata": ""} for p, o in sorted(offsets.items())]}])


def producer_with_offsets_of(s, group: str) -> tuple:
    """A transactional producer whose open transaction holds the group's offsets partition
    (AddOffsetsToTxn): (its connection, its transactional id, (producer id, epoch), the
    untraced setup connection)."""
    tid = s.name("tx")
    setup = coordinator_ready(s, tid)
    producer = initialized(s, setup, tid)
    client = s.conn("producer")
    client.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id=tid, producer_id=producer[0],
                producer_epoch=producer[1], group_id=group)
    return client, tid, producer, setup


def wait_committed(s, setup, group: str, topic: str) -> None:
    s.wait(lambda: setup.call(ApiKey.OFFSET_FETCH, 7, group_id=group, require_stable=True,
                              topics=[{"name": topic, "partition_indexes": [0]}])
           .topics[0].partitions[0].error_code == ErrorCode.none, "the committed offsets")


@scenario(outcome="""KIP-447 (classic protocol): offsets committed in a transaction by a group
member are checked against the group: an old generation is ILLEGAL_GENERATION, an unknown
member UNKNOWN_MEMBER_ID, a static instance with another member id FENCED_INSTANCE_ID; the
current member's offsets are pending (OffsetFetch require_stable: UNSTABLE_OFFSET_COMMIT,
without it the old offset) until the commit, then fetched""")
def test_transactions_offsets_and_zombie_members(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = ClassicMember(s, "a", group, (topic,), instance_id="static-a")
    b = ClassicMember(s, "b", group, (topic,))
    form_alone(a, topic, 2)
    old_generation = a.generation
    form_pair(a, b, topic, 2)
    client, tid, producer, setup = producer_with_offsets_of(s, group)
    txn_commit(client, tid, producer, group, topic, {0: 5}, old_generation, a.member_id,
               "static-a")
    txn_commit(client, tid, producer, group, topic, {0: 5}, a.generation, "nobody")
    txn_commit(client, tid, producer, group, topic, {0: 5}, a.generation, "nobody",
               "static-a")
    txn_commit(client, tid, producer, group, topic, {0: 5, 1: 6}, a.generation, a.member_id,
               "static-a")
    fetch(s, group, [(topic, (0, 1))], require_stable=True)
    fetch(s, group, [(topic, (0, 1))])
    end(client, tid, producer)
    wait_committed(s, setup, group, topic)
    fetch(s, group, [(topic, (0, 1))], require_stable=True)


@scenario(outcome="""KIP-447 with the consumer group protocol (KIP-848): TxnOffsetCommit v3
carries the member's epoch in its generation field, so unlike OffsetCommit before v9 (refused
UNSUPPORTED_VERSION) it is taken from a member of a consumer group: its current epoch commits
(pending until the marker, then fetched), a newer epoch is ILLEGAL_GENERATION (the consumer
protocol's own error for it is kept for v6 on), an unknown member UNKNOWN_MEMBER_ID""")
def test_transactions_offsets_of_a_consumer_protocol_member(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    member = Kip848Member(s, "m", group, (topic,))
    member.converge(2)
    client, tid, producer, setup = producer_with_offsets_of(s, group)
    txn_commit(client, tid, producer, group, topic, {0: 5}, member.epoch + 1, member.member_id)
    txn_commit(client, tid, producer, group, topic, {0: 5}, member.epoch, "nobody")
    member.conn.call(ApiKey.OFFSET_COMMIT, 8, keep=("topics",), group_id=group,
                     generation_id_or_member_epoch=member.epoch, member_id=member.member_id,
                     topics=[{"name": topic, "partitions": [
                         {"partition_index": 0, "committed_offset": 3,
                          "committed_leader_epoch": -1, "committed_metadata": ""}]}])
    txn_commit(client, tid, producer, group, topic, {0: 5, 1: 6}, member.epoch,
               member.member_id)
    fetch(s, group, [(topic, (0, 1))], require_stable=True)
    end(client, tid, producer)
    wait_committed(s, setup, group, topic)
    fetch(s, group, [(topic, (0, 1))], require_stable=True)


@scenario(outcome="""a classic group's member commits in a transaction while the group hands out
its new generation's assignment (CompletingRebalance): OffsetCommit is told
REBALANCE_IN_PROGRESS, TxnOffsetCommit of the same generation is taken (pending, then committed
by the marker)""")
def test_transactions_offsets_while_an_assignment_is_handed_out(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    member = ClassicMember(s, "a", group, (topic,))
    form_alone(member, topic, 2)
    client, tid, producer, setup = producer_with_offsets_of(s, group)
    member.join()                       # alone, its rejoin completes the join phase at once
    s.wait_state(group, "CompletingRebalance")
    member.commit(topic, {0: 3})
    txn_commit(client, tid, producer, group, topic, {0: 5, 1: 6}, member.generation,
               member.member_id)
    end(client, tid, producer)
    wait_committed(s, setup, group, topic)
    fetch(s, group, [(topic, (0, 1))], require_stable=True)
    member.sync(split([member], topic, 2))


@scenario(outcome="""pending transactional offsets do not stop DeleteGroups or OffsetDelete:
DeleteGroups of an empty group with offsets pending in an open transaction deletes it, and its
tombstones drop the pending offsets too, so the transaction's commit brings none back (the
group stays unknown); OffsetDelete of a partition whose offset is only pending drops it the
same way, the other pending partition is committed""")
def test_transactions_pending_offsets_and_deletion(s):
    topic = s.topic("t", 2)
    admin = s.conn("admin")
    for how in ("delete-group", "delete-offset"):
        group = s.name(f"g-{how}")
        ClassicMember(s, f"admin-{how}", group, (topic,)).commit(topic, {0: 5})
        tid = s.name(f"tx-{how}")
        setup = coordinator_ready(s, tid)
        producer = initialized(s, setup, tid)
        client = s.conn(f"producer-{how}")
        client.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id=tid, producer_id=producer[0],
                    producer_epoch=producer[1], group_id=group)
        txn_commit(client, tid, producer, group, topic, {0: 10, 1: 11})
        if how == "delete-group":
            admin.call(ApiKey.DELETE_GROUPS, keep=("results",), groups_names=[group])
        else:
            admin.call(ApiKey.OFFSET_DELETE, keep=("topics",), group_id=group, topics=[
                {"name": topic, "partitions": [{"partition_index": 1}]}])
        end(client, tid, producer)
        s.wait(lambda: described(setup, tid).transaction_state == "CompleteCommit",
               "the commit marker")
        fetch(s, group, [(topic, (0, 1))], require_stable=True)
        admin.call(ApiKey.DESCRIBE_GROUPS, keep=("groups",), groups=[group])


@scenario(outcome="""KIP-360 recovery: a producer presenting its current epoch gets it bumped,
and its retry presenting the same epoch again gets the bumped one; once a new producer has
initialised the id (presenting nothing), the old producer presenting its epoch is
PRODUCER_FENCED""")
def test_transactions_kip360_recovery_and_zombie(s):
    tid = s.name("tx")
    setup = coordinator_ready(s, tid)
    producer = initialized(s, setup, tid)
    client = s.conn("client")

    def recover(epoch: int):
        answer = client.call(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=tid,
                             transaction_timeout=datetime.timedelta(milliseconds=60_000),
                             producer_id=producer[0], producer_epoch=epoch)
        s.note("recovered", epoch_bump=answer.producer_epoch - producer[1])

    recover(producer[1])
    recover(producer[1])                       # the retry of the same bump
    newcomer = initialized(s, setup, tid)
    s.note("newcomer", epoch_bump=newcomer[1] - producer[1])
    recover(producer[1] + 1)                   # the epoch it had: a zombie now
