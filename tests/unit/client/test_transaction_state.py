"""The transactional producer's pure parts: allowed calls, partitions and sequences, what each
coordinator error means (retry within max_block_ms on a manual clock, fenced, abortable), and
read_committed's dropping of aborted batches."""
from __future__ import annotations

import pytest

from roster.client.records import OutgoingRecord, decode_fetched, encode_batch
from roster.client.transaction_state import (
    OffsetsFencedError,
    ProducerFencedError,
    Retry,
    State,
    TransactionAbortableError,
    TransactionError,
    TransactionState,
)
from roster.log.control import marker_batch
from roster.protocol.errors import ErrorCode as E


def ready(**kw) -> TransactionState:
    t = TransactionState("tx", **kw)
    t.initializing()
    t.initialized(7, 3)
    return t


def test_calls_follow_the_state_machine():
    t = TransactionState("tx")
    with pytest.raises(TransactionError, match="begin_transaction"):
        t.begin()
    t.initializing()
    t.initialized(7, 0)
    with pytest.raises(TransactionError, match="sending"):
        t.check_sending()
    t.begin()
    t.check_sending()
    with pytest.raises(TransactionError):
        t.begin()                               # one transaction at a time
    assert t.ending(True) is False              # nothing added: nothing for EndTxn
    t.ended()
    assert t.state is State.READY
    with pytest.raises(ValueError):
        TransactionState("")


def test_partitions_are_added_once_per_transaction_and_sequences_run_per_partition():
    t = ready()
    t.begin()
    assert t.to_add([("a", 0), ("a", 1)]) == [("a", 0), ("a", 1)]
    t.added([("a", 0)])
    assert t.to_add([("a", 0), ("a", 1)]) == [("a", 1)]
    assert t.next_sequence(("a", 0), 5) == 0
    assert t.next_sequence(("a", 0), 2) == 5
    assert t.next_sequence(("a", 1), 1) == 0
    assert t.ending(True) is True
    t.ended()
    t.begin()
    assert t.to_add([("a", 0)]) == [("a", 0)]   # a new transaction adds again
    assert t.next_sequence(("a", 0), 1) == 7    # sequences go on within the epoch
    t.initialized(7, 4)                          # a new epoch starts them at 0
    assert t.next_sequence(("a", 0), 1) == 0


def test_retriable_errors_are_retried_until_max_block_ms_with_growing_backoff():
    t = ready(max_block_ms=1000, retry_backoff_ms=20, retry_backoff_max_ms=100)
    t.begin()
    assert t.on_error(E.concurrent_transactions, "EndTxn", 0, 10, 1) == Retry(40)
    assert t.on_error(E.coordinator_load_in_progress, "EndTxn", 0, 500, 3) == Retry(100)
    with pytest.raises(TransactionAbortableError, match="max_block_ms"):
        t.on_error(E.concurrent_transactions, "EndTxn", 0, 1000, 9)
    assert t.state is State.ABORTABLE_ERROR
    with pytest.raises(TransactionError, match="abort it"):
        t.ending(True)
    t.ending(False)                                 # abort is the way on


def test_init_retries_concurrent_transactions_and_a_timeout_there_spoils_nothing():
    t = TransactionState("tx", max_block_ms=100)
    t.initializing()
    assert isinstance(t.on_error(E.concurrent_transactions, "InitProducerId", 0, 50, 1), Retry)
    with pytest.raises(TransactionError) as raised:
        t.on_error(E.concurrent_transactions, "InitProducerId", 0, 100, 2)
    assert not isinstance(raised.value, TransactionAbortableError)
    t.initializing()                                # may be called again


@pytest.mark.parametrize("error", [E.producer_fenced, E.invalid_producer_epoch])
def test_fencing_is_final(error):
    t = ready()
    t.begin()
    with pytest.raises(ProducerFencedError, match="taken over"):
        t.on_error(error, "EndTxn(commit)", 0, 0, 1)
    assert t.state is State.FATAL
    for call in (t.begin, t.check_sending, lambda: t.ending(False), t.initializing):
        with pytest.raises(ProducerFencedError):
            call()


def test_other_errors_spoil_only_the_transaction():
    t = ready()
    t.begin()
    with pytest.raises(TransactionAbortableError) as raised:
        t.on_error(E.invalid_txn_state, "Produce to a-0", 0, 0, 1)
    assert raised.value.error is E.invalid_txn_state
    t.ending(False)
    t.ended()
    t.begin()                                       # the producer goes on


def test_a_fenced_group_member_spoils_the_transaction():
    t = ready()
    t.begin()
    error = t.member_refused({("in", 0): E.illegal_generation})
    assert isinstance(error, OffsetsFencedError) and "ILLEGAL_GENERATION" in str(error)
    assert t.state is State.ABORTABLE_ERROR


def _txn_batch(producer_id: int, base_offset: int, values) -> bytes:
    data = bytearray(encode_batch([OutgoingRecord(v) for v in values], "none", 1,
                                  producer_id=producer_id, producer_epoch=0, base_sequence=0,
                                  transactional=True))
    data[0:8] = base_offset.to_bytes(8, "big")
    return bytes(data)


def _marker(producer_id: int, offset: int, commit: bool) -> bytes:
    data = bytearray(marker_batch(producer_id, 0, commit, 0, 1))
    data[0:8] = offset.to_bytes(8, "big")
    return bytes(data)


def test_read_committed_drops_aborted_batches_up_to_their_abort_marker():
    # producer 1 aborts [0, 2) then commits [3, 4); producer 2 commits [2] in between
    data = (_txn_batch(1, 0, [b"a0", b"a1"]) + _txn_batch(2, 2, [b"b"]) + _marker(1, 3, False)
            + _txn_batch(1, 4, [b"c"]) + _marker(2, 5, True) + _marker(1, 6, True))
    records, following = decode_fetched("t", 0, data, [(1, 0)])
    assert [r.value for r in records] == [b"b", b"c"]
    assert following == 7
    everything, _ = decode_fetched("t", 0, data)       # read_uncommitted
    assert [r.value for r in everything] == [b"a0", b"a1", b"b", b"c"]
