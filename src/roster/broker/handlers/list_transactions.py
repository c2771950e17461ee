"""ListTransactions (66), v0-2: the transactional ids the coordinator knows, filtered by state
(unknown state names are reported back), by producer id, by how long the transaction has been
open (v1, KIP-994) and by a transactional-id pattern (v2, KIP-1152); what `kafka-transactions
list` and `find-hanging` read (roster.transactions.queries). Only the ids the principal may
DESCRIBE are listed, as in Kafka. A pattern that is no regular expression:
INVALID_REGULAR_EXPRESSION for the whole request."""
from __future__ import annotations

import datetime

from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, TransactionalIds
from roster.transactions import queries

API_KEY = ApiKey.LIST_TRANSACTIONS


def _answer(request, error: ErrorCode, unknown=(), states=()):
    return make(response_schema(API_KEY, request.api_version),
                throttle_time=datetime.timedelta(0), error_code=error,
                unknown_state_filters=tuple(unknown), transaction_states=tuple(states))


async def handle(broker, request, connection):
    body = request.body
    filters = queries.ListFilters(
        states=frozenset(body.state_filters), producer_ids=frozenset(body.producer_id_filters),
        duration_ms=getattr(body, "duration_filter", -1),
        pattern=getattr(body, "transactional_id_pattern", None))
    try:
        selection = queries.select(broker.transactions.coordinator, filters, broker.now_ms())
    except queries.InvalidPattern:
        return _answer(request, ErrorCode.invalid_regular_expression)
    entry = element(response_schema(API_KEY, request.api_version), "transaction_states")
    admission = request.admission
    return _answer(request, ErrorCode.none, selection.unknown_states, (
        make(entry, transactional_id=m.transactional_id, producer_id=m.producer_id,
             transaction_state=m.state.kafka_name)
        for m in selection.transactions
        if admission.allows(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                            m.transactional_id)))


SPEC = ApiSpec(API_KEY, "ListTransactions", 0, 2, handle,
               resources=(TransactionalIds(AclOperation.DESCRIBE),))
