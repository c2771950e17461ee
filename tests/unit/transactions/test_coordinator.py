"""The pure transaction coordinator, with a manual clock: every transition of Kafka's state
machine that the classic protocol reaches, durable-before-visible, fencing, timeouts, expiry,
and replay of its own records (what a restart reads back)."""
from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from roster.protocol.errors import ErrorCode as E
from roster.transactions.coordinator import Markers, TransactionCoordinator, TxnConfig, TxnSettled
from roster.transactions.log_records import TxnRecord, decode
from roster.transactions.state import TxnState

TP = ("orders", 0)
TOKEN = "request"   # the reply token of every request the harness sends


class Harness:
    """The coordinator plus an edge that makes every write durable at once (or fails it)."""

    def __init__(self, **config) -> None:
        self.ids = itertools.count(1000)
        self.coordinator = TransactionCoordinator(TxnConfig(**config), lambda: next(self.ids))
        self.log = []          # every durable record, encoded as __transaction_state holds it
        self.markers = []      # marker jobs handed out
        self.settled = []      # ids whose pending write settled (TxnSettled effects)
        self.now = 0

    def run(self, result, durable: bool = True):
        """Carry out a Result as the runtime does (broker/coordinator_runtime.py): its records
        written (or not), then its continuations; the request's answer."""
        answer = self.answer(result)
        if durable:
            self.log += [record.encode() for record in result.records]
        for step in result.after_write:
            done = self.coordinator.write_completed(
                step, None if durable else E.not_coordinator, self.now)
            self.markers += [e for e in done.effects if isinstance(e, Markers)]
            self.settled += [e.transactional_id for e in done.effects
                             if isinstance(e, TxnSettled)]
            answer = self.answer(done) or answer
        return answer

    @staticmethod
    def answer(result):
        """The reply a result holds for the request (before any write), or None."""
        bodies = [reply.body for reply in result.replies if reply.token == TOKEN]
        return bodies[-1] if bodies else None

    def init(self, tid="t", timeout_ms=60_000, expected=None):
        return self.run(self.coordinator.init_producer_id(tid, timeout_ms, expected, self.now,
                                                         TOKEN))

    def add(self, tid, pid, epoch, *partitions):
        return self.run(self.coordinator.add_partitions(tid, pid, epoch, partitions or [TP],
                                                        self.now, TOKEN))

    def end(self, tid, pid, epoch, commit=True):
        return self.run(self.coordinator.end_txn(tid, pid, epoch, commit, self.now, TOKEN))

    def finish_markers(self):
        jobs, self.markers = self.markers, []
        for job in jobs:
            self.run(self.coordinator.markers_written(job, self.now))
        return jobs

    def state(self, tid="t"):
        return self.coordinator.get(tid).state


@pytest.fixture
def h():
    return Harness()


def test_commit_runs_prepare_markers_complete(h):
    first = h.init()
    assert (first.error, first.producer_id, first.producer_epoch) == (E.none, 1000, 0)
    assert h.add("t", 1000, 0, TP, ("orders", 1)).error is E.none
    assert h.state() is TxnState.ONGOING
    assert h.end("t", 1000, 0).error is E.none
    assert h.state() is TxnState.PREPARE_COMMIT
    # a retry while the markers are written, and any other request, waits
    assert h.end("t", 1000, 0).error is E.concurrent_transactions
    assert h.init().error is E.concurrent_transactions
    assert h.add("t", 1000, 0).error is E.concurrent_transactions
    [job] = h.finish_markers()
    assert (job.commit, job.partitions, job.producer_epoch) == (True, {TP, ("orders", 1)}, 0)
    assert h.state() is TxnState.COMPLETE_COMMIT
    assert h.coordinator.get("t").partitions == frozenset()
    # a retried EndTxn that completed is answered again; the other outcome is refused
    assert h.end("t", 1000, 0).error is E.none
    assert h.end("t", 1000, 0, commit=False).error is E.invalid_txn_state
    # the epoch stays across transactions in the classic protocol
    assert h.add("t", 1000, 0).error is E.none and h.state() is TxnState.ONGOING


def test_abort_and_end_without_a_transaction(h):
    h.init()
    assert h.end("t", 1000, 0).error is E.invalid_txn_state   # Empty
    h.add("t", 1000, 0)
    assert h.end("t", 1000, 0, commit=False).error is E.none
    # PrepareAbort: its markers are being written, so any EndTxn waits (Kafka's pending
    # transition) ...
    assert h.end("t", 1000, 0, commit=True).error is E.concurrent_transactions
    [job] = h.finish_markers()
    assert not job.commit and h.state() is TxnState.COMPLETE_ABORT
    # ... and is then answered as the finished transaction asks
    assert h.end("t", 1000, 0, commit=True).error is E.invalid_txn_state


def test_nothing_is_visible_before_it_is_durable(h):
    h.init()
    h.settled.clear()
    failed = h.run(h.coordinator.add_partitions("t", 1000, 0, [TP], h.now, TOKEN),
                   durable=False)
    assert failed.error is E.not_coordinator     # as Kafka answers a failed append
    assert h.settled == ["t"]                     # a waiting add may try again
    assert h.state() is TxnState.EMPTY            # the failed write left nothing behind
    assert h.add("t", 1000, 0).error is E.none      # and the next request is not blocked
    pending = h.coordinator.end_txn("t", 1000, 0, True, h.now, TOKEN)
    assert h.answer(pending) is None               # the answer waits for the write
    assert h.state() is TxnState.ONGOING           # written but not yet durable
    assert h.answer(h.coordinator.add_partitions("t", 1000, 0, [TP], h.now, TOKEN)).error \
        is E.concurrent_transactions
    h.run(pending)
    assert h.state() is TxnState.PREPARE_COMMIT


def test_a_new_producer_fences_the_old_one_and_aborts_its_transaction(h):
    h.init()
    h.add("t", 1000, 0)
    # the new instance: the open transaction is aborted with the epoch bumped first
    assert h.init().error is E.concurrent_transactions
    assert h.state() is TxnState.PREPARE_ABORT and h.coordinator.get("t").producer_epoch == 1
    [job] = h.finish_markers()
    assert (job.commit, job.producer_epoch) == (False, 1)
    again = h.init()
    assert (again.error, again.producer_id, again.producer_epoch) == (E.none, 1000, 2)
    # the zombie (epoch 0) is fenced everywhere
    assert h.add("t", 1000, 0).error is E.producer_fenced
    assert h.end("t", 1000, 0).error is E.producer_fenced
    assert h.coordinator.check_produce("t", 1000, 0, TP) is E.invalid_producer_epoch
    assert h.add("t", 999, 2).error is E.invalid_producer_id_mapping
    assert h.end("unknown", 1000, 2).error is E.invalid_producer_id_mapping


def test_produce_is_checked_against_the_open_transaction(h):
    h.init()
    assert h.coordinator.check_produce("t", 1000, 0, TP) is E.invalid_txn_state   # not added
    h.add("t", 1000, 0)
    assert h.coordinator.check_produce("t", 1000, 0, TP) is E.none
    assert h.coordinator.check_produce("t", 1000, 0, ("other", 0)) is E.invalid_txn_state
    assert h.coordinator.check_produce("t", 7, 0, TP) is E.invalid_producer_id_mapping
    assert h.coordinator.check_produce(None, 1000, 0, TP) is E.invalid_producer_id_mapping
    # while more partitions are being added, the ones already in still take batches
    adding = h.coordinator.add_partitions("t", 1000, 0, [("other", 0)], h.now, TOKEN)
    assert h.coordinator.check_produce("t", 1000, 0, TP) is E.none
    h.run(adding)
    # once EndTxn is under way, none does
    ending = h.coordinator.end_txn("t", 1000, 0, True, h.now, TOKEN)
    assert h.coordinator.check_produce("t", 1000, 0, TP) is E.invalid_txn_state
    h.run(ending)


def test_init_producer_id_checks_the_timeout(h):
    assert h.init(timeout_ms=0).error is E.invalid_transaction_timeout
    assert h.init(timeout_ms=900_001).error is E.invalid_transaction_timeout
    assert h.init(tid="").error is E.invalid_request
    assert h.init(timeout_ms=900_000).error is E.none


def test_kip360_epoch_recovery(h):
    h.init()
    bumped = h.init(expected=(1000, 0))
    assert (bumped.error, bumped.producer_epoch) == (E.none, 1)
    retried = h.init(expected=(1000, 0))          # the answer to the bump was lost: same epoch
    assert (retried.error, retried.producer_id, retried.producer_epoch) == (E.none, 1000, 1)
    assert retried.write is None
    assert h.init(expected=(1000, 5)).error is E.producer_fenced
    assert h.init(expected=(77, 1)).error is E.producer_fenced


def test_a_zombie_presenting_its_old_epoch_after_a_new_producer_is_fenced(h):
    """A new producer's InitProducerId (no epoch presented) forgets the previous epoch, so the
    old producer's KIP-360 recovery with it is PRODUCER_FENCED, not handed the new epoch."""
    h.init()
    assert h.init().producer_epoch == 1                 # a new instance, nothing presented
    assert h.init(expected=(1000, 0)).error is E.producer_fenced
    assert h.coordinator.get("t").producer_epoch == 1


def test_an_exhausted_epoch_gets_a_new_producer_id(h):
    h.init()
    h.coordinator.replay(TxnRecord("t", replace(h.coordinator.get("t"), producer_epoch=32766)))
    fresh = h.init()
    assert (fresh.producer_id, fresh.producer_epoch) == (1001, 0)
    assert h.coordinator.get("t").previous_producer_id == 1000


def test_timeout_aborts_and_fences(h):
    h.init(timeout_ms=1000)
    h.now = 500
    h.add("t", 1000, 0)
    h.now = 1499
    assert [o for o in h.coordinator.timed_out(h.now)] == []
    h.now = 1500
    [abort] = h.coordinator.timed_out(h.now)
    h.run(abort)
    assert h.state() is TxnState.PREPARE_ABORT
    [job] = h.finish_markers()
    assert (job.commit, job.producer_epoch) == (False, 1)
    # the timed-out producer learns it was fenced
    assert h.end("t", 1000, 0).error is E.producer_fenced
    # one bump only, with TV2 finalized too, as Kafka 4.4 (differential transactions_fence_epochs)
    assert h.init().producer_epoch == 2


def test_a_fence_at_the_last_epochs_does_not_overflow(h):
    """Kafka's fence bumps MAX - 1 to MAX (never beyond); the next InitProducerId then moves to
    a new producer id."""
    h.init()
    h.add("t", 1000, 0)
    h.coordinator.replay(TxnRecord("t", replace(h.coordinator.get("t"), producer_epoch=32766)))
    assert h.init().error is E.concurrent_transactions
    [job] = h.finish_markers()
    assert job.producer_epoch == 32767
    fresh = h.init()
    assert (fresh.producer_id, fresh.producer_epoch) == (1001, 0)


def test_idle_transactional_ids_expire(h):
    h = Harness(id_expiration_ms=10_000)
    h.init()
    h.now = 9_999
    assert h.coordinator.expired(h.now) == []
    h.now = 10_000
    [tombstone] = h.coordinator.expired(h.now)
    [record] = tombstone.records
    assert record.metadata is None
    h.run(tombstone)
    assert h.coordinator.get("t") is None
    assert h.log[-1] == (h.log[0][0], None)


def test_replay_restores_the_state_and_hands_out_stalled_markers(h):
    h.init()
    h.add("t", 1000, 0, TP)
    h.end("t", 1000, 0)
    h.markers.clear()               # the broker died before writing them
    restarted = TransactionCoordinator(TxnConfig(), lambda: 5000)
    for key, value in h.log:
        restarted.replay(decode(key, value))
    assert restarted.get("t") == h.coordinator.get("t")
    [job] = restarted.stalled()
    assert (job.commit, job.partitions) == (True, {TP})
    assert restarted.stalled() == []           # handed out once until reported
    restarted.markers_failed(job)
    [again] = restarted.stalled()
    done = restarted.markers_written(again, 10)
    [record] = done.records
    assert record.metadata.state is TxnState.COMPLETE_COMMIT
    [step] = done.after_write
    assert restarted.write_completed(step, None, 10).replies == []   # nobody waits for it
    assert restarted.get("t").state is TxnState.COMPLETE_COMMIT


# -- Transaction Version 2 (KIP-890) ------------------------------------------------------------

def end_tv2(h, epoch, commit=True, tid="t", pid=1000):
    return h.run(h.coordinator.end_txn(tid, pid, epoch, commit, h.now, TOKEN, tv2=True))


def test_tv2_bumps_the_epoch_of_every_transaction(h):
    h.init()
    h.add("t", 1000, 0)
    ended = end_tv2(h, 0)
    assert (ended.error, ended.producer_id, ended.producer_epoch) == (E.none, 1000, 1)
    # the markers close the transaction with the bumped epoch
    [job] = h.finish_markers()
    assert (job.commit, job.producer_epoch) == (True, 1)
    assert h.coordinator.get("t").client_transaction_version == 2
    # a retry of that EndTxn (the old epoch) is answered with the new one
    retried = end_tv2(h, 0)
    assert (retried.error, retried.producer_epoch, retried.write) == (E.none, 1, None)
    # the next transaction runs at the new epoch; the old one is fenced
    assert h.add("t", 1000, 0).error is E.producer_fenced
    assert h.add("t", 1000, 1).error is E.none
    assert end_tv2(h, 1, commit=False).producer_epoch == 2


def test_tv2_retries_while_the_markers_are_written_and_the_table_of_refusals(h):
    h.init()
    h.add("t", 1000, 0)
    end_tv2(h, 0)
    # while the markers are written (PrepareCommit) Kafka 4.4 answers anything
    # CONCURRENT_TRANSACTIONS before it looks at the epoch: a retry, the other outcome, and
    # the client's next EndTxn at the bumped epoch sent as soon as this one was answered
    for epoch, commit in ((0, True), (0, False), (1, False), (1, True), (9, True)):
        assert end_tv2(h, epoch, commit=commit).error is E.concurrent_transactions
    h.finish_markers()
    assert end_tv2(h, 0, commit=False).error is E.invalid_txn_state   # retry, other outcome
    assert end_tv2(h, 1).error is E.invalid_txn_state                 # CompleteCommit, commit
    # an abort with nothing open bumps the epoch (a client recovering from an abortable error)
    bumped = end_tv2(h, 1, commit=False)
    assert (bumped.error, bumped.producer_epoch) == (E.none, 2)
    [job] = h.finish_markers()
    assert job.partitions == frozenset()
    assert h.state() is TxnState.COMPLETE_ABORT
    assert end_tv2(h, 9).error is E.producer_fenced
    assert end_tv2(h, 2, pid=7).error is E.invalid_producer_id_mapping


def test_tv2_an_exhausted_epoch_moves_to_the_next_producer_id(h):
    h.init()
    h.coordinator.replay(TxnRecord("t", replace(h.coordinator.get("t"), producer_epoch=32766)))
    h.add("t", 1000, 32766)
    ended = end_tv2(h, 32766)
    assert (ended.producer_id, ended.producer_epoch) == (1001, 0)
    h.finish_markers()
    m = h.coordinator.get("t")
    assert (m.producer_id, m.producer_epoch, m.previous_producer_id) == (1001, 0, 1000)
    retried = end_tv2(h, 32766)      # the retry names the old id and epoch
    assert (retried.error, retried.producer_id, retried.producer_epoch) == (E.none, 1001, 0)
