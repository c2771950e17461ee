"""`roster transactions list|describe|abort`: the transaction coordinator's state and the
recovery of a hanging transaction over the wire, as Kafka's `kafka-transactions` does it
(ListTransactions, DescribeTransactions; DescribeProducers then WriteTxnMarkers for abort), with
its option names and table columns:

    roster transactions list [--state Ongoing] [--producer-id N] [--duration-filter MS]
                             [--transactional-id-pattern REGEX]
    roster transactions describe --transactional-id ID
    roster transactions abort --topic T --partition P --start-offset OFFSET
    roster transactions abort --topic T --partition P --producer-id N --producer-epoch E
                              [--coordinator-epoch C]

An abort writes an abort marker to that one partition (CLUSTER_ACTION or ALTER on the cluster):
read_committed consumers of it move past the transaction. It works against Apache Kafka too.
Roster and Kafka are one node here: DescribeTransactions goes to the broker connected to, which
is the coordinator of every transactional id on a single-node cluster.
"""
from __future__ import annotations

import dataclasses

import struct
from dataclasses import dataclass

from roster.admin.client import AdminError
from roster.protocol.flexible_reading import compact_count, compact_string, skip_tagged_fields
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode

LIST_HEADER = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADER = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                   "TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs",
                   "TransactionDurationMs", "TopicPartitions")

_INT16 = struct.Struct(">h")
_TIMES = struct.Struct(">iqqh")   # timeout, start time, producer id, producer epoch


class TransactionsError(AdminError):
    pass


@dataclass(frozen=True)
class AbortSpec:
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int = 0


def _check(error: ErrorCode, what: str) -> None:
    if error is not ErrorCode.none:
        raise TransactionsError(f"{what}: {error.name.upper()}")


def list_transactions(client, states=(), producer_ids=(), duration_ms: int = -1,
                      pattern: str | None = None) -> tuple[list[tuple[str, int, str]], list[str]]:
    """((transactional id, producer id, state) sorted by id, the state names the broker did not
    know). A duration or pattern the broker cannot filter by is an error, not ignored."""
    version = client.version(ApiKey.LIST_TRANSACTIONS)
    fields = {"state_filters": tuple(states), "producer_id_filters": tuple(producer_ids)}
    if duration_ms >= 0:
        if version < 1:
            raise TransactionsError("the broker cannot filter by duration (ListTransactions v1)")
        fields["duration_filter"] = duration_ms
    if pattern:
        if version < 2:
            raise TransactionsError("the broker cannot filter by transactional-id pattern "
                                    "(ListTransactions v2)")
        fields["transactional_id_pattern"] = pattern
    answer = client.call(ApiKey.LIST_TRANSACTIONS, **fields)
    _check(answer.error_code, "cannot list transactions")
    rows = sorted((s.transactional_id, s.producer_id, s.transaction_state)
                  for s in answer.transaction_states)
    return rows, list(answer.unknown_state_filters)


@dataclass(frozen=True)
class Described:
    """One DescribeTransactions entry (v0)."""
    error_code: ErrorCode
    transactional_id: str
    state: str
    timeout_ms: int
    start_ms: int              # -1: no transaction open
    producer_id: int
    producer_epoch: int
    partitions: list[tuple[str, int]]
    coordinator: int = -1      # the node id of its transaction coordinator, once found


def _read_described(frame: bytes) -> list[Described]:
    """DescribeTransactions v0's answer, read by hand (client.call_undecoded says why)."""
    at = skip_tagged_fields(frame, 4)                 # correlation id, header tags
    at += 4                                           # throttle time
    count, at = compact_count(frame, at)
    found = []
    for _ in range(max(count, 0)):
        (error,) = _INT16.unpack_from(frame, at)
        transactional_id, at = compact_string(frame, at + 2)
        state, at = compact_string(frame, at)
        timeout_ms, start_ms, producer_id, epoch = _TIMES.unpack_from(frame, at)
        topics, at = compact_count(frame, at + _TIMES.size)
        partitions = []
        for _ in range(max(topics, 0)):
            topic, at = compact_string(frame, at)
            n, at = compact_count(frame, at)
            partitions += [(topic, p) for p in struct.unpack_from(f">{max(n, 0)}i", frame, at)]
            at = skip_tagged_fields(frame, at + 4 * max(n, 0))
        at = skip_tagged_fields(frame, at)
        found.append(Described(ErrorCode(error), transactional_id, state or "", timeout_ms,
                               start_ms, producer_id, epoch, partitions))
    return found


def describe(client, transactional_id: str) -> Described:
    """The coordinator's state of the transactional id (DescribeTransactions)."""
    _, frame = client.call_undecoded(ApiKey.DESCRIBE_TRANSACTIONS,
                                     transactional_ids=(transactional_id,))
    state = _read_described(frame)[0]
    if state.error_code is ErrorCode.transactional_id_not_found:
        raise TransactionsError(f"transactional id {transactional_id!r} not found")
    _check(state.error_code, f"cannot describe transactional id {transactional_id!r}")
    return dataclasses.replace(state, coordinator=coordinator_of(client, transactional_id))


def coordinator_of(client, transactional_id: str) -> int:
    """The node id of the id's transaction coordinator (on a cluster, one of several)."""
    answer = client.call(ApiKey.FIND_COORDINATOR, key=transactional_id, key_type=1,
                         coordinator_keys=(transactional_id,))
    found = answer.coordinators[0] if getattr(answer, "coordinators", None) else answer
    return -1 if found.error_code.value else found.node_id


def find_open_transaction(client, topic: str, partition: int, start_offset: int) -> AbortSpec:
    """The producer whose open transaction on the partition starts at `start_offset`
    (DescribeProducers), as kafka-transactions abort --start-offset finds it."""
    entry = client.entry(ApiKey.DESCRIBE_PRODUCERS, "topics")
    answer = client.call(ApiKey.DESCRIBE_PRODUCERS, topics=(
        entry(name=topic, partition_indexes=(partition,)),))
    found = answer.topics[0].partitions[0]
    _check(found.error_code, f"cannot describe the producers of {topic}-{partition}")
    for producer in found.active_producers:
        if producer.current_txn_start_offset == start_offset:
            return AbortSpec(topic, partition, producer.producer_id, producer.producer_epoch,
                             max(producer.coordinator_epoch, 0))
    raise TransactionsError(f"no open transaction starts at offset {start_offset} on "
                            f"{topic}-{partition}")


def abort(client, spec: AbortSpec) -> None:
    """Write an abort marker for the producer to the partition (WriteTxnMarkers)."""
    topic_entry = client.entry(ApiKey.WRITE_TXN_MARKERS, "markers", "topics")
    marker_entry = client.entry(ApiKey.WRITE_TXN_MARKERS, "markers")
    answer = client.call(ApiKey.WRITE_TXN_MARKERS, markers=(marker_entry(
        producer_id=spec.producer_id, producer_epoch=spec.producer_epoch,
        transaction_result=False, coordinator_epoch=spec.coordinator_epoch,
        topics=(topic_entry(name=spec.topic, partition_indexes=(spec.partition,)),)),))
    result = answer.markers[0].topics[0].partitions[0]
    _check(result.error_code, f"cannot abort the transaction of producer {spec.producer_id} "
                              f"on {spec.topic}-{spec.partition}")


def describe_row(state: Described, coordinator: int, now_ms: int) -> tuple[str, ...]:
    """kafka-transactions describe's row: start time and duration None with no transaction
    open, as it prints them."""
    opened = state.start_ms >= 0
    if state.coordinator >= 0:
        coordinator = state.coordinator
    return (str(coordinator), state.transactional_id, str(state.producer_id),
            str(state.producer_epoch), state.state, str(state.timeout_ms),
            str(state.start_ms) if opened else "None",
            str(now_ms - state.start_ms) if opened else "None",
            ",".join(f"{topic}-{partition}" for topic, partition in state.partitions))


def node_id(client) -> int:
    """The broker's node id (the Coordinator column: one node answers for every id)."""
    answer = client.call(ApiKey.METADATA, topics=(), allow_auto_topic_creation=False,
                         include_cluster_authorized_operations=False,
                         include_topic_authorized_operations=False)
    return answer.brokers[0].node_id if answer.brokers else -1
