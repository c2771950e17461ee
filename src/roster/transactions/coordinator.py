"""The transaction coordinator's decisions (Kafka's TransactionCoordinator and
TransactionStateManager), pure: no I/O, no clock, no event loop.

Its edge protocol is the group shard's (coordinator/results.py; the one runtime,
broker/coordinator_runtime.py, carries out both): every operation takes `now` and the request's
reply token and hands back a `Result`. The reply is an `Outcome`: the error (or the producer
id and epoch) to answer with. When the state changes, the result holds the TxnRecord to make
durable first and a `TxnWritten` continuation; the answer waits for it. A state change is never
seen before it is durable: until the continuation comes back (write_completed), the target is
*pending* and every other request for that transactional id is answered
CONCURRENT_TRANSACTIONS, as Kafka's pendingState does. A failed write is answered
NOT_COORDINATOR, as Kafka answers it, and leaves the state as it was (nothing to revert).

Ending a transaction, as Kafka does:
  1. EndTxn (or a timeout, or a fencing InitProducerId) writes PrepareCommit/PrepareAbort;
     once durable the client is answered, and the result's effects hand the edge a `Markers`
     job (and a `TxnSettled`: requests waiting for the id may try again);
  2. the edge writes a marker to every partition of the transaction, then calls
     `markers_written()`, whose result writes CompleteCommit/CompleteAbort;
  3. if the edge fails (or the broker dies) in between, `stalled()` / replay hand the job out
     again: markers are written at least once, and a repeated marker is harmless.

Transaction versions: the classic protocol (TV1: partitions are added with AddPartitionsToTxn,
the epoch stays across transactions) and Transaction Version 2 (KIP-890: EndTxn v5 bumps the
epoch of every transaction and answers it; partitions are added implicitly by the edge, from
Produce v12+ and TxnOffsetCommit v5, through add_partitions).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from roster.coordinator.results import Result
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode
from roster.transactions.log_records import TxnRecord
from roster.transactions.state import (
    IDLE,
    MAX_EPOCH,
    NO_EPOCH,
    NO_PRODUCER_ID,
    PREPARING,
    TopicPartition,
    TxnMetadata,
    TxnState,
    epoch_exhausted,
)

NONE = ErrorCode.none
COORDINATOR_EPOCH = 0   # one broker: __transaction_state never changes leader
_TOMBSTONE = None


@frozen
class TxnConfig:
    max_timeout_ms: int = 900_000               # transaction.max.timeout.ms
    id_expiration_ms: int = 604_800_000         # transactional.id.expiration.ms


@frozen
class Outcome:
    """What a request is answered; `write`, while it is decided: the record it waits for."""
    error: ErrorCode = NONE
    producer_id: int = -1
    producer_epoch: int = -1
    write: TxnRecord | None = None


@frozen
class TxnWritten:
    """The continuation of a write: the id's pending state applied (or dropped), and the
    request that waited for it (`token`; None for the coordinator's own writes) answered."""
    transactional_id: str
    token: object
    answer: Outcome


@frozen
class TxnSettled:
    """An effect: the id's pending write is settled; requests that met CONCURRENT_TRANSACTIONS
    because of it may try again (the edge wakes them)."""
    transactional_id: str


@frozen
class Markers:
    """Write a commit or abort marker for this producer to each partition."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]
    coordinator_epoch: int = COORDINATOR_EPOCH


def _refused(error: ErrorCode) -> Outcome:
    return Outcome(error)


class TransactionCoordinator:
    def __init__(self, config: TxnConfig, allocate_producer_id: Callable[[], int]) -> None:
        self.config = config
        self._allocate = allocate_producer_id
        self._txns: dict[str, TxnMetadata] = {}
        self._pending: dict[str, TxnMetadata | None] = {}   # written, not yet durable
        self._completing: set[str] = set()                  # markers job handed out

    # -- reading ----------------------------------------------------------------------------

    def get(self, transactional_id: str) -> TxnMetadata | None:
        return self._txns.get(transactional_id)

    def __iter__(self):
        return iter(list(self._txns.values()))

    def check_produce(self, transactional_id: str | None, producer_id: int, epoch: int,
                      partition: TopicPartition) -> ErrorCode:
        """May a transactional batch of this producer be appended to `partition`? (Kafka's
        partition leader verifies it with the coordinator, KIP-890 part 1.)"""
        m = self._txns.get(transactional_id) if transactional_id is not None else None
        if m is None or m.producer_id != producer_id:
            return ErrorCode.invalid_producer_id_mapping
        if epoch < m.producer_epoch:
            return ErrorCode.invalid_producer_epoch
        if epoch != m.producer_epoch or m.state is not TxnState.ONGOING \
                or partition not in m.partitions:
            return ErrorCode.invalid_txn_state
        # a pending write that adds partitions leaves this one in; one that ends it does not
        pending = self._pending.get(transactional_id, m)
        if pending is None or pending.state is not TxnState.ONGOING:
            return ErrorCode.invalid_txn_state
        return NONE

    # -- InitProducerId ---------------------------------------------------------------------

    def init_producer_id(self, transactional_id: str, timeout_ms: int,
                         expected: tuple[int, int] | None, now_ms: int, token) -> Result:
        """`expected`: the (producer id, epoch) the client presents (KIP-360), or None."""
        return self._result(token, self._init_producer_id(transactional_id, timeout_ms,
                                                          expected, now_ms))

    def _init_producer_id(self, transactional_id: str, timeout_ms: int,
                          expected: tuple[int, int] | None, now_ms: int) -> Outcome:
        if not transactional_id:
            return _refused(ErrorCode.invalid_request)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return _refused(ErrorCode.invalid_transaction_timeout)
        m = self._txns.get(transactional_id)
        if m is None:
            m = TxnMetadata(transactional_id, self._allocate(), NO_EPOCH, timeout_ms,
                            last_update_ms=now_ms)
            self._txns[transactional_id] = m
        if self._in_transition(m) or m.state is TxnState.DEAD:
            return _refused(ErrorCode.concurrent_transactions)
        if m.state is TxnState.ONGOING:
            # the previous producer left a transaction open: fence it (epoch bump) and abort
            # it; the new producer retries on CONCURRENT_TRANSACTIONS until it completes
            return self._begin(self._fence_abort(m, now_ms),
                               error=ErrorCode.concurrent_transactions)
        if expected is not None and not self._valid_producer_id(m, expected):
            return _refused(ErrorCode.producer_fenced)
        if expected is not None and m.producer_epoch != NO_EPOCH \
                and expected[1] != m.producer_epoch:
            if expected[1] == m.last_producer_epoch:    # a retry of the bump it missed
                return Outcome(NONE, m.producer_id, m.producer_epoch)
            return _refused(ErrorCode.producer_fenced)
        # the epoch a KIP-360 retry may present is remembered only for a producer that
        # presented its own (Kafka's lastProducerEpoch): after a new producer's bump the old
        # epoch is a zombie's, answered PRODUCER_FENCED, never handed the new epoch
        last = m.producer_epoch if expected is not None else NO_EPOCH
        if epoch_exhausted(m.producer_epoch):
            producer_id, epoch, previous = self._allocate(), 0, m.producer_id
        else:
            producer_id, epoch, previous = m.producer_id, m.producer_epoch + 1, \
                m.previous_producer_id
        target = m.to(TxnState.EMPTY, now_ms, producer_id=producer_id, producer_epoch=epoch,
                      last_producer_epoch=last, previous_producer_id=previous,
                      timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1)
        return self._begin(target)

    @staticmethod
    def _valid_producer_id(m: TxnMetadata, expected: tuple[int, int]) -> bool:
        producer_id, epoch = expected
        return m.producer_epoch == NO_EPOCH or producer_id == m.producer_id or (
            producer_id == m.previous_producer_id and epoch_exhausted(epoch))

    # -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------

    def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                       partitions: Iterable[TopicPartition], now_ms: int, token) -> Result:
        return self._result(token, self._add_partitions(transactional_id, producer_id, epoch,
                                                        partitions, now_ms))

    def _add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                        partitions: Iterable[TopicPartition], now_ms: int) -> Outcome:
        m = self._txns.get(transactional_id)
        error = self._producer_error(m, transactional_id, producer_id, epoch)
        if error is not NONE:
            return _refused(error)
        partitions = frozenset(partitions)
        if m.state is TxnState.ONGOING and partitions <= m.partitions:
            return Outcome(NONE, m.producer_id, m.producer_epoch)
        start = now_ms if m.state in IDLE else m.start_ms
        return self._begin(m.to(TxnState.ONGOING, now_ms, partitions=m.partitions | partitions,
                                start_ms=start))

    def _producer_error(self, m: TxnMetadata | None, transactional_id: str, producer_id: int,
                        epoch: int) -> ErrorCode:
        if m is None or m.producer_id != producer_id:
            return ErrorCode.invalid_producer_id_mapping
        if m.producer_epoch != epoch:
            return ErrorCode.producer_fenced
        if self._in_transition(m):
            return ErrorCode.concurrent_transactions
        if m.state is TxnState.DEAD:
            return ErrorCode.invalid_producer_id_mapping
        return NONE

    def _in_transition(self, m: TxnMetadata) -> bool:
        """A change is under way: a record written and not yet durable, or a Prepare state
        whose markers are not all written (Kafka's pendingTransitionInProgress: it holds the
        completion pending from the Prepare record's write until the markers are written).
        What the request asks is to be retried once it is done (CONCURRENT_TRANSACTIONS)."""
        return m.transactional_id in self._pending or m.state in PREPARING \
            or m.state is TxnState.PREPARE_EPOCH_FENCE

    # -- EndTxn -----------------------------------------------------------------------------

    def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool,
                now_ms: int, token, tv2: bool = False) -> Result:
        """`tv2`: the request is Transaction Version 2's (EndTxn v5): the epoch is bumped by
        every transaction and the answer carries it (_end_txn_tv2)."""
        return self._result(token, self._end_txn(transactional_id, producer_id, epoch, commit,
                                                 now_ms, tv2))

    def _end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool,
                 now_ms: int, tv2: bool) -> Outcome:
        if tv2:
            return self._end_txn_tv2(transactional_id, producer_id, epoch, commit, now_ms)
        m = self._txns.get(transactional_id)
        if m is None or m.producer_id != producer_id:
            return _refused(ErrorCode.invalid_producer_id_mapping)
        if m.producer_epoch != epoch:
            return _refused(ErrorCode.producer_fenced)
        if self._in_transition(m):     # e.g. a retry while the markers are written
            return _refused(ErrorCode.concurrent_transactions)
        prepare = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if m.state is TxnState.ONGOING:
            return self._begin(m.to(prepare, now_ms))
        if m.state is done:            # a retry of an EndTxn that completed
            return Outcome(NONE, m.producer_id, m.producer_epoch)
        return _refused(ErrorCode.invalid_txn_state)

    def _end_txn_tv2(self, transactional_id: str, producer_id: int, epoch: int, commit: bool,
                     now_ms: int) -> Outcome:
        """Kafka's TV2 table: the request's epoch is the current one, or (a retry) the one
        before the bump this EndTxn made. An abort is also allowed with nothing open (Empty,
        Complete*): it only bumps the epoch, which a client does to recover from an abortable
        error. Kafka 4.4 asks first whether a change is under way: then whatever the request
        names is answered CONCURRENT_TRANSACTIONS, so the next EndTxn of a client that sent it
        as soon as the last one was answered waits for the markers, and is not fenced."""
        m = self._txns.get(transactional_id)
        if m is None:
            return _refused(ErrorCode.invalid_producer_id_mapping)
        if self._in_transition(m):
            return _refused(ErrorCode.concurrent_transactions)
        retry_on_bump = m.producer_epoch == epoch + 1
        retry_on_overflow = (m.previous_producer_id == producer_id and m.producer_epoch == 0
                             and epoch_exhausted(epoch))
        if m.producer_id != producer_id and not retry_on_overflow:
            return _refused(ErrorCode.invalid_producer_id_mapping)
        if m.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid = retry_on_bump or retry_on_overflow or epoch == m.producer_epoch
        else:
            valid = epoch == m.producer_epoch
        if not valid:
            return _refused(ErrorCode.producer_fenced)
        retry = retry_on_bump or retry_on_overflow
        prepare = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if m.state is TxnState.ONGOING:
            return self._bump_and_end(m, prepare, now_ms)
        if m.state is done and retry:
            return Outcome(NONE, m.producer_id, m.producer_epoch)
        if not commit and not retry and m.state in IDLE:
            return self._bump_and_end(m, prepare, now_ms, nothing_added=True)
        return _refused(ErrorCode.invalid_txn_state)

    def _bump_and_end(self, m: TxnMetadata, prepare: TxnState, now_ms: int,
                      nothing_added: bool = False) -> Outcome:
        """Prepare* with the epoch bumped (TV2); an exhausted epoch gets the next producer id,
        taken at Complete. The client is answered the id and epoch it goes on with."""
        next_id = self._allocate() if epoch_exhausted(m.producer_epoch) else m.next_producer_id
        target = m.to(prepare, now_ms, producer_epoch=m.producer_epoch + 1,
                      last_producer_epoch=m.producer_epoch, next_producer_id=next_id,
                      client_transaction_version=2,
                      start_ms=now_ms if nothing_added else m.start_ms)
        outcome = self._begin(target)
        if next_id != NO_PRODUCER_ID:
            return Outcome(NONE, next_id, 0, outcome.write)
        return outcome

    # -- the write path ---------------------------------------------------------------------

    def _begin(self, target: TxnMetadata | None, transactional_id: str | None = None,
               error: ErrorCode = NONE) -> Outcome:
        tid = transactional_id if target is None else target.transactional_id
        self._pending[tid] = target
        if target is None:
            return Outcome(error, write=TxnRecord(tid, None))
        return Outcome(error, target.producer_id, target.producer_epoch,
                       TxnRecord(tid, target))

    @staticmethod
    def _result(token, outcome: Outcome) -> Result:
        """The edge's Result of a decision: the answer at once, or, after the write it
        waits for, through TxnWritten."""
        result = Result()
        if outcome.write is None:
            if token is not None:
                result.reply(token, outcome)
            return result
        result.records.append(outcome.write)
        result.after_write.append(TxnWritten(outcome.write.transactional_id, token, outcome))
        return result

    def write_completed(self, step: TxnWritten, error: ErrorCode | None, now_ms: int) -> Result:
        """The edge made a pending write durable (error None) or failed to: apply it, answer
        the request that waited (NOT_COORDINATOR when the write failed, as Kafka answers
        it), and hand out the markers a Prepare state now needs."""
        result = Result()
        jobs = self._written(step.transactional_id, error is None)
        if step.token is not None:
            result.reply(step.token, step.answer if error is None
                         else Outcome(ErrorCode.not_coordinator))
        result.effects = (*jobs, TxnSettled(step.transactional_id))
        return result

    def _written(self, transactional_id: str, durable: bool) -> list[Markers]:
        target = self._pending.pop(transactional_id, _TOMBSTONE)
        if not durable:
            return []
        if target is None:
            self._txns.pop(transactional_id, None)
            return []
        self._txns[transactional_id] = target
        return self._markers_for(target)

    def _markers_for(self, m: TxnMetadata) -> list[Markers]:
        if m.state not in PREPARING or m.transactional_id in self._completing:
            return []
        self._completing.add(m.transactional_id)
        return [Markers(m.transactional_id, m.producer_id, m.producer_epoch,
                        m.state is TxnState.PREPARE_COMMIT, m.partitions)]

    def markers_written(self, job: Markers, now_ms: int) -> Result:
        """Every marker of `job` is in its partition: the write completing the transaction."""
        return self._result(None, self._markers_written(job, now_ms))

    def _markers_written(self, job: Markers, now_ms: int) -> Outcome:
        self._completing.discard(job.transactional_id)
        m = self._txns.get(job.transactional_id)
        if m is None or m.state not in PREPARING or job.transactional_id in self._pending:
            return Outcome()
        done = TxnState.COMPLETE_COMMIT if m.state is TxnState.PREPARE_COMMIT \
            else TxnState.COMPLETE_ABORT
        if m.next_producer_id != NO_PRODUCER_ID:     # TV2: the epoch ran out at this bump
            return self._begin(m.to(done, now_ms, partitions=frozenset(),
                                    producer_id=m.next_producer_id, producer_epoch=0,
                                    previous_producer_id=m.producer_id,
                                    next_producer_id=NO_PRODUCER_ID,
                                    last_producer_epoch=NO_EPOCH))
        return self._begin(m.to(done, now_ms, partitions=frozenset()))

    def markers_failed(self, job: Markers) -> None:
        """The edge could not write them all: stalled() hands the job out again."""
        self._completing.discard(job.transactional_id)

    def stalled(self) -> list[Markers]:
        """Markers jobs of transactions left in a Prepare state (after a restart, or a failed
        write): each is handed out once until reported."""
        jobs = []
        for m in list(self._txns.values()):
            if m.transactional_id not in self._pending:
                jobs += self._markers_for(m)
        return jobs

    # -- timers -----------------------------------------------------------------------------

    def timed_out(self, now_ms: int) -> list[Result]:
        """Abort every transaction open past its timeout, fencing its producer with an epoch
        bump (Kafka's abortTimedOutTransactions)."""
        aborts = []
        for m in list(self._txns.values()):
            if m.state is TxnState.ONGOING and m.transactional_id not in self._pending \
                    and m.start_ms + m.timeout_ms <= now_ms:
                aborts.append(self._result(None, self._begin(self._fence_abort(m, now_ms))))
        return aborts

    @staticmethod
    def _fence_abort(m: TxnMetadata, now_ms: int) -> TxnMetadata:
        """Kafka's prepareFenceProducerEpoch and the abort it leads to: the epoch bumped once
        (never past the maximum: MAX - 1 becomes MAX, and the next InitProducerId moves to a
        new producer id). Kafka 4.4 bumps only once here, TV2 finalized or not, whichever
        version the fenced client used (the differential scenario transactions_fence_epochs)."""
        epoch = m.producer_epoch if m.producer_epoch >= MAX_EPOCH else m.producer_epoch + 1
        return m.to(TxnState.PREPARE_ABORT, now_ms, producer_epoch=epoch,
                    last_producer_epoch=NO_EPOCH)

    def expired(self, now_ms: int) -> list[Result]:
        """Tombstones for transactional ids idle past transactional.id.expiration.ms."""
        out = []
        for m in list(self._txns.values()):
            tid = m.transactional_id
            if m.state in IDLE and tid not in self._pending and tid not in self._completing \
                    and m.last_update_ms + self.config.id_expiration_ms <= now_ms:
                out.append(self._result(None, self._begin(None, tid)))
        return out

    # -- replay -----------------------------------------------------------------------------

    def replay(self, record: TxnRecord) -> None:
        """A record read back from __transaction_state at start: the newest one wins."""
        if record.metadata is None:
            self._txns.pop(record.transactional_id, None)
        else:
            self._txns[record.transactional_id] = record.metadata
