"""DescribeTransactions (65), v0: the coordinator's state of each transactional id asked for,
what `kafka-transactions describe` and `find-hanging` read (roster.transactions.queries).

As Kafka: DESCRIBE on each TRANSACTIONAL_ID (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for the
others, one by one); the partitions of a topic the principal may not DESCRIBE are left out; an
empty id is INVALID_REQUEST; an id the coordinator does not know (or is expiring) is
TRANSACTIONAL_ID_NOT_FOUND."""
from __future__ import annotations

import datetime

from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, TransactionalIds
from roster.transactions import queries

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS
UTC = datetime.timezone.utc


def _refused(entry, transactional_id: str, error: ErrorCode):
    """Only the error and the id, the other fields at their zero defaults, as Kafka sends."""
    return make(entry, error_code=error, transactional_id=transactional_id,
                transaction_state="", transaction_timeout=datetime.timedelta(0),
                transaction_start_time=datetime.datetime.fromtimestamp(0, UTC),
                producer_id=0, producer_epoch=0, topics=())


def _state(broker, admission, entry, transactional_id: str):
    if not admission.allows(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                            transactional_id):
        return _refused(entry, transactional_id, ErrorCode.transactional_id_authorization_failed)
    if not transactional_id:
        return _refused(entry, transactional_id, ErrorCode.invalid_request)
    m = broker.transactions.coordinator.get(transactional_id)
    if not queries.visible(m):
        return _refused(entry, transactional_id, ErrorCode.transactional_id_not_found)
    d = queries.describe(m)
    topic_entry = element(entry, "topics")
    return make(entry, error_code=ErrorCode.none, transactional_id=transactional_id,
                transaction_state=d.state,
                transaction_timeout=datetime.timedelta(milliseconds=d.timeout_ms),
                transaction_start_time=datetime.datetime.fromtimestamp(d.start_ms / 1000, UTC),
                producer_id=d.producer_id, producer_epoch=d.producer_epoch,
                topics=tuple(make(topic_entry, topic=topic, partitions=tuple(partitions))
                             for topic, partitions in d.partitions.items()
                             if admission.allows(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                 topic)))


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    entry = element(schema, "transaction_states")
    return make(schema, throttle_time=datetime.timedelta(0), transaction_states=tuple(
        _state(broker, request.admission, entry, transactional_id)
        for transactional_id in request.body.transactional_ids))


SPEC = ApiSpec(API_KEY, "DescribeTransactions", 0, 0, handle,
               resources=(TransactionalIds(AclOperation.DESCRIBE, "transactional_ids"),))
