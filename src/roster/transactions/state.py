"""A transactional id's state, as Kafka's TransactionMetadata keeps it.

`TxnState` carries Kafka's byte ids (TransactionState.java), which is what __transaction_state
stores. `TxnMetadata` is immutable: the coordinator builds the state a transition leads to,
writes it, and only once the write is durable does it become current (coordinator.py).
"""
from __future__ import annotations

from dataclasses import field, replace
from enum import IntEnum

from roster.frozen import frozen

NO_PRODUCER_ID = -1
NO_EPOCH = -1
MAX_EPOCH = 32767          # Short.MAX_VALUE
TopicPartition = tuple[str, int]


class TxnState(IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name Kafka's tools print (DescribeTransactions, kafka-transactions)."""
        return "".join(part.capitalize() for part in self.name.split("_"))


# States in which no transaction is open: a new one may begin, the producer may be re-initialised
IDLE = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})
PREPARING = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})


def epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps the last epoch free for fencing: at MAX_EPOCH - 1 a new producer id is
    handed out instead of a bump."""
    return epoch >= MAX_EPOCH - 1


@frozen
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    start_ms: int = -1            # when the open transaction began (-1: none)
    last_update_ms: int = -1
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    # the epoch before the last bump: a retried InitProducerId presenting it gets the current one
    last_producer_epoch: int = NO_EPOCH
    client_transaction_version: int = 1   # 1: the classic protocol; 2: KIP-890 (TV2)

    def to(self, state: TxnState, now_ms: int, **changes) -> TxnMetadata:
        return replace(self, state=state, last_update_ms=now_ms, **changes)
