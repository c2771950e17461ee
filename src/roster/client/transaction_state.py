"""A transactional producer's state, without I/O: which calls are allowed now, which partitions
the open transaction already holds, each partition's next sequence number, and what an error
code from the coordinator means (retry within the time budget, fenced for good, or abort the
transaction). The asyncio driver is `roster.client.transactional_producer`.

States follow Kafka's TransactionManager: UNINITIALIZED -> (init_transactions) READY ->
(begin) IN_TRANSACTION -> (commit/abort) COMMITTING/ABORTING -> READY. An error that spoils only
the current transaction puts it in ABORTABLE_ERROR, where abort is the only way on; a fencing
error is FATAL: the producer is done and every call raises ProducerFencedError.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from roster.protocol.errors import ErrorCode as E

TopicPartition = tuple[str, int]

# Answers that mean "ask again shortly": the coordinator is busy with this id (a previous
# transaction still completing), loading, or elsewhere.
RETRIABLE = frozenset({E.concurrent_transactions, E.coordinator_load_in_progress,
                       E.coordinator_not_available, E.not_coordinator, E.request_timed_out,
                       E.unknown_topic_or_partition, E.not_leader_or_follower,
                       E.leader_not_available, E.not_enough_replicas, E.unknown_topic_id})
# Answers that mean another producer with this transactional.id took over (KIP-588 and older).
FENCING = frozenset({E.producer_fenced, E.invalid_producer_epoch})
# The producer itself can never work again.
FATAL = FENCING | {E.transactional_id_authorization_failed, E.invalid_producer_id_mapping,
                   E.unsupported_version, E.invalid_transaction_timeout}
# A group member named in TxnOffsetCommit is not (or no longer) the member (KIP-447).
MEMBER_FENCING = frozenset({E.illegal_generation, E.unknown_member_id, E.fenced_instance_id})


class State(enum.Enum):
    UNINITIALIZED = "uninitialized"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    COMMITTING = "committing"
    ABORTING = "aborting"
    ABORTABLE_ERROR = "abortable error"
    FATAL = "fatal"


class TransactionError(RuntimeError):
    """A call the producer's state does not allow, or an error without a better class."""


class ProducerFencedError(TransactionError):
    """Another producer with the same transactional.id has initialized (or the coordinator
    aborted this producer's transaction on its timeout): this producer can do nothing more.
    Close it; a new one calls init_transactions() again."""


class TransactionAbortableError(TransactionError):
    """The current transaction cannot commit; abort_transaction() and start again."""

    def __init__(self, message: str, error: E | None = None) -> None:
        super().__init__(message)
        self.error = error


class OffsetsFencedError(TransactionAbortableError):
    """TxnOffsetCommit refused the group member (KIP-447: an old generation after a rebalance,
    an unknown member id, or a static instance taken over by a newer member). The offsets were
    not added; abort, and let the member rejoin."""


@dataclass(frozen=True)
class GroupMetadata:
    """What TxnOffsetCommit needs of the member whose offsets are committed (Kafka's
    ConsumerGroupMetadata): without a member (generation -1, member id "") the group checks
    nothing, as for older clients."""
    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(frozen=True)
class Retry:
    after_ms: int


class TransactionState:
    def __init__(self, transactional_id: str, *, max_block_ms: int = 60_000,
                 retry_backoff_ms: int = 20, retry_backoff_max_ms: int = 1_000) -> None:
        if not transactional_id:
            raise ValueError("a transactional producer needs a transactional_id")
        self.transactional_id = transactional_id
        self.max_block_ms = max_block_ms
        self._backoff = (retry_backoff_ms, retry_backoff_max_ms)
        self.state = State.UNINITIALIZED
        self.producer_id = -1
        self.epoch = -1
        self.partitions: set[TopicPartition] = set()
        self.groups: set[str] = set()
        self._sequences: dict[TopicPartition, int] = {}
        self.fatal_reason: str | None = None
        self.fenced = False

    # -- transitions -----------------------------------------------------------------------------

    def initializing(self) -> None:
        self._require(State.UNINITIALIZED, State.READY, what="init_transactions()")

    def initialized(self, producer_id: int, epoch: int) -> None:
        self.producer_id, self.epoch = producer_id, epoch
        self._sequences.clear()      # sequences restart at 0 with every new epoch
        self._clear()
        self.state = State.READY

    def begin(self) -> None:
        self._require(State.READY, what="begin_transaction()")
        self._clear()
        self.state = State.IN_TRANSACTION

    def check_sending(self) -> None:
        """Sending records or offsets needs an open transaction that can still commit."""
        self._require(State.IN_TRANSACTION, what="sending inside a transaction")

    def ending(self, commit: bool) -> bool:
        """Commit or abort starts; returns whether there is anything for EndTxn to end (a
        transaction that never added a partition or group has nothing at the coordinator)."""
        if commit:
            self._require(State.IN_TRANSACTION, State.COMMITTING, what="commit_transaction()")
            self.state = State.COMMITTING
        else:
            self._require(State.IN_TRANSACTION, State.ABORTING, State.ABORTABLE_ERROR,
                          what="abort_transaction()")
            self.state = State.ABORTING
        return bool(self.partitions or self.groups)

    def ended(self) -> None:
        self._clear()
        self.state = State.READY

    # -- partitions and sequences ----------------------------------------------------------------

    def to_add(self, partitions) -> list[TopicPartition]:
        """The partitions that must join the transaction (AddPartitionsToTxn) before their first
        batch."""
        return sorted(set(partitions) - self.partitions)

    def added(self, partitions) -> None:
        self.partitions.update(partitions)

    def next_sequence(self, tp: TopicPartition, records: int) -> int:
        """The base sequence of the next batch for `tp`; reserves `records` numbers."""
        base = self._sequences.get(tp, 0)
        self._sequences[tp] = (base + records) & 0x7FFFFFFF
        return base

    # -- errors ----------------------------------------------------------------------------------

    def on_error(self, error: E, what: str, started_ms: int, now_ms: int, attempt: int) -> Retry:
        """What to do about `error`, answered to `what` (first sent at started_ms): a Retry
        while it is retriable and the max_block_ms budget lasts; raises otherwise, moving to
        FATAL or (inside a transaction) ABORTABLE_ERROR."""
        if error in RETRIABLE:
            if now_ms - started_ms < self.max_block_ms:
                low, high = self._backoff
                return Retry(min(high, low << min(attempt, 16)))
            raise self._abortable(error, f"{what}: still {error.name.upper()} after "
                                  f"{self.max_block_ms} ms (max_block_ms)")
        if error in FENCING:
            self.fenced = True
            self.state, self.fatal_reason = State.FATAL, (
                f"{what}: {error.name.upper()}: another producer with transactional.id "
                f"{self.transactional_id!r} has taken over (or the transaction timed out)")
            raise ProducerFencedError(self.fatal_reason)
        if error in FATAL:
            self.state = State.FATAL
            self.fatal_reason = f"{what}: {error.name.upper()}"
            raise TransactionError(self.fatal_reason)
        raise self._abortable(error, f"{what}: {error.name.upper()}")

    def member_refused(self, errors: dict) -> OffsetsFencedError:
        self._spoil()
        worst = sorted({e.name.upper() for e in errors.values()})
        return OffsetsFencedError(f"TxnOffsetCommit refused the group member: "
                                  f"{', '.join(worst)}; abort the transaction",
                                  next(iter(errors.values())))

    # -- internals -------------------------------------------------------------------------------

    def _abortable(self, error: E, message: str) -> TransactionError:
        if self.state in (State.UNINITIALIZED, State.READY):
            return TransactionError(message)       # no transaction to spoil
        self._spoil()
        return TransactionAbortableError(message, error)

    def _spoil(self) -> None:
        if self.state in (State.IN_TRANSACTION, State.COMMITTING):
            self.state = State.ABORTABLE_ERROR

    def _require(self, *allowed: State, what: str) -> None:
        if self.state is State.FATAL:
            raise (ProducerFencedError if self.fenced else TransactionError)(self.fatal_reason)
        if self.state not in allowed:
            hint = " (abort it)" if self.state is State.ABORTABLE_ERROR else ""
            raise TransactionError(f"{what} is not allowed while the producer is "
                                   f"{self.state.value}{hint}")

    def _clear(self) -> None:
        self.partitions = set()
        self.groups = set()
