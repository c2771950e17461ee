"""AddPartitionsToTxn (24), v0-3: the client versions (v4+ carry several transactions at once
and are sent by brokers verifying a produce, KIP-890; roster has no other broker to send them).

As Kafka's KafkaApis: WRITE on the transactional id (admission), WRITE on each topic; if any
partition is refused (TOPIC_AUTHORIZATION_FAILED, or UNKNOWN_TOPIC_OR_PARTITION for one that
does not exist) none is added and the rest answer OPERATION_NOT_ATTEMPTED. Otherwise the
coordinator's answer (broker/transactions/runtime.py) applies to every partition.
"""
from __future__ import annotations

from roster.broker.network.admission import partition_error
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Topics, TransactionalId
from roster.transactions.errors import for_version

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN
FENCED_FROM = 2     # KIP-588: older clients are told INVALID_PRODUCER_EPOCH instead


def _answer(request, error_of, first=()):
    """`first`: (topic entry, partition) answered ahead of the rest of their topic, as Kafka
    lists the refused partitions before the ones not attempted."""
    schema = response_schema(API_KEY, request.api_version)
    topic_entry = element(schema, "results_by_topic_v3_and_below")
    partition_entry = element(topic_entry, "results_by_partition")
    return make(schema, results_by_topic_v3_and_below=tuple(
        make(topic_entry, name=topic.name, results_by_partition=tuple(
            make(partition_entry, partition_index=p,
                 partition_error_code=for_version(error_of(t, p), request.api_version,
                                                  FENCED_FROM))
            for p in sorted(topic.partitions, key=lambda p: (t, p) not in first)))
        for t, topic in enumerate(request.body.v3_and_below_topics)))


def refuse(request, error: ErrorCode):
    return _answer(request, lambda t, p: error)


async def handle(broker, request, connection):
    body = request.body
    refused = {}
    wanted = []
    for t, topic in enumerate(body.v3_and_below_topics):
        resolved = request.admission.topic(t)
        for p in topic.partitions:
            error = partition_error(resolved, p)
            if error is not ErrorCode.none:
                refused[(t, p)] = error
            wanted.append((topic.name, p))
    if refused:
        return _answer(request, lambda t, p: refused.get(
            (t, p), ErrorCode.operation_not_attempted), first=refused)
    outcome = await broker.transactions.add_when_settled(
        body.v3_and_below_transactional_id, body.v3_and_below_producer_id,
        body.v3_and_below_producer_epoch, wanted)
    return _answer(request, lambda t, p: outcome.error)


SPEC = ApiSpec(API_KEY, "AddPartitionsToTxn", 0, 3, handle, resources=(
    TransactionalId(AclOperation.WRITE, "v3_and_below_transactional_id"),
    Topics(AclOperation.WRITE, "v3_and_below_topics", topic_id=None)), refuse=refuse)
