"""DescribeProducers (61), v0: the active producers of partitions, what `kafka-transactions
describe-producers` and `find-hanging` read. Each producer with state in the partition's log
(roster.log.producer_state: idempotent and transactional ones, until producer.id.expiration.ms
has passed since their last write) is listed with its epoch, last sequence, last timestamp,
the coordinator epoch of its last marker and the first offset of its open transaction (-1 when
none). READ on the topic is required, as in Kafka."""
from __future__ import annotations

from roster.broker.network.admission import partition_error
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Topics

API_KEY = ApiKey.DESCRIBE_PRODUCERS


def _partition(entry, producer_entry, admitted, index: int):
    error = partition_error(admitted, index)
    if error is not ErrorCode.none:
        return make(entry, partition_index=index, error_code=error, error_message=None,
                    active_producers=())
    log = admitted[0].partitions[index]
    return make(entry, partition_index=index, error_code=ErrorCode.none, error_message=None,
                active_producers=tuple(
                    make(producer_entry, producer_id=p.producer_id, producer_epoch=p.epoch,
                         last_sequence=p.last_sequence, last_timestamp=p.last_timestamp,
                         coordinator_epoch=p.coordinator_epoch,
                         current_txn_start_offset=p.txn_first_offset)
                    for p in log.producer_entries()))


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    topic_entry = element(schema, "topics")
    partition_entry = element(topic_entry, "partitions")
    producer_entry = element(partition_entry, "active_producers")
    admission = request.admission
    topics = tuple(
        make(topic_entry, name=wanted.name, partitions=tuple(
            _partition(partition_entry, producer_entry, admission.topic(t), index)
            for index in wanted.partition_indexes))
        for t, wanted in enumerate(request.body.topics))
    return make(schema, topics=topics)


SPEC = ApiSpec(API_KEY, "DescribeProducers", 0, 0, handle,
               resources=(Topics(AclOperation.READ, topic_id=None),))
