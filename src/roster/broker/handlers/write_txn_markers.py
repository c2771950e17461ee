"""WriteTxnMarkers (27), v1-2: write commit/abort markers to partitions of this broker. In a
Kafka cluster the transaction coordinator sends it to partition leaders; roster's coordinator
writes its markers directly (broker/transactions/runtime.py), so what arrives here comes from an
administrator: Kafka's Admin.abortTransaction, behind `kafka-transactions abort`, closes a
hanging transaction with it.

Each marker goes through the one marker path, write_transaction_marker, and is fsynced before
the answer. As Kafka: ALTER, else CLUSTER_ACTION, on the cluster; per partition
UNKNOWN_TOPIC_OR_PARTITION when it does not exist, INVALID_PRODUCER_EPOCH when the partition
has seen a newer epoch of the producer and TRANSACTION_COORDINATOR_FENCED when its last marker
came from a newer coordinator epoch (ProducerAppendInfo.appendEndTxnMarker). A marker in
__consumer_offsets also completes or drops the producer's pending offsets there, as the
coordinator's own markers do. Other internal topics (__transaction_state, roster's own) hold
no transactional data and their loaders expect none: INVALID_TOPIC_EXCEPTION, as Produce
answers for them (Kafka does not check this)."""
from __future__ import annotations

import logging

from roster.broker.partitions import appends
from roster.broker.transactions.transaction_markers import write_transaction_marker
from roster.log.api import LogError
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Cluster, NotAResource

API_KEY = ApiKey.WRITE_TXN_MARKERS
OFFSETS_TOPIC = "__consumer_offsets"
log = logging.getLogger("roster.transactions")


def _refusal(partition_log, marker) -> ErrorCode:
    for entry in partition_log.producer_entries():
        if entry.producer_id != marker.producer_id:
            continue
        if marker.producer_epoch < entry.epoch:
            return ErrorCode.invalid_producer_epoch
        if marker.coordinator_epoch < entry.coordinator_epoch:
            return ErrorCode.transaction_coordinator_fenced
    return ErrorCode.none


async def _write(broker, marker, topic: str, partition: int) -> ErrorCode:
    known = broker.topics.get(topic)
    if known is not None and known.internal and topic != OFFSETS_TOPIC:
        return ErrorCode.invalid_topic_exception
    partition_log = broker.topics.partition(topic, partition)
    if partition_log is None:
        return ErrorCode.unknown_topic_or_partition
    refused = _refusal(partition_log, marker)
    if refused is not ErrorCode.none:
        return refused
    commit = marker.transaction_result
    try:
        written = write_transaction_marker(broker, topic, partition, marker.producer_id,
                                           marker.producer_epoch, commit,
                                           marker.coordinator_epoch)
        if written is None:
            return ErrorCode.unknown_topic_or_partition
        target, appended = written
        await appends.make_durable(broker, target, appended.offset + 1)
    except (LogError, OSError) as exc:
        log.error("cannot write the %s marker of producer %d to %s-%d: %s",
                  "commit" if commit else "abort", marker.producer_id, topic, partition, exc)
        return ErrorCode.kafka_storage_error
    log.info("%s marker of producer %d (epoch %d) written to %s-%d by WriteTxnMarkers",
             "commit" if commit else "abort", marker.producer_id, marker.producer_epoch,
             topic, partition)
    if topic == OFFSETS_TOPIC and broker.transactions.on_offsets_marker is not None:
        broker.transactions.on_offsets_marker(marker.producer_id, commit, [partition])
    return ErrorCode.none


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    marker_entry = element(schema, "markers")
    topic_entry = element(marker_entry, "topics")
    partition_entry = element(topic_entry, "partitions")
    results = []
    for marker in request.body.markers:
        topics = []
        for topic in marker.topics:
            partitions = []
            for index in topic.partition_indexes:
                error = await _write(broker, marker, topic.name, index)
                partitions.append(make(partition_entry, partition_index=index,
                                       error_code=error))
            topics.append(make(topic_entry, name=topic.name, partitions=tuple(partitions)))
        results.append(make(marker_entry, producer_id=marker.producer_id, topics=tuple(topics)))
    return make(schema, markers=tuple(results))


def refuse(request, error: ErrorCode):
    """Every partition refused with `error`, as Kafka answers an unauthorized request."""
    schema = response_schema(API_KEY, request.api_version)
    marker_entry = element(schema, "markers")
    topic_entry = element(marker_entry, "topics")
    partition_entry = element(topic_entry, "partitions")
    return make(schema, markers=tuple(
        make(marker_entry, producer_id=marker.producer_id, topics=tuple(
            make(topic_entry, name=topic.name, partitions=tuple(
                make(partition_entry, partition_index=index, error_code=error)
                for index in topic.partition_indexes))
            for topic in marker.topics))
        for marker in request.body.markers))


SPEC = ApiSpec(API_KEY, "WriteTxnMarkers", 1, 2, handle, refuse=refuse, resources=(
    Cluster(AclOperation.CLUSTER_ACTION, or_operation=AclOperation.ALTER),
    NotAResource("markers", "the partitions a marker is written to are authorized on the "
                 "cluster (CLUSTER_ACTION), as in Kafka")))
