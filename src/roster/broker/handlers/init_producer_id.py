"""InitProducerId (22), v0-6: producer ids for idempotent and transactional producers.

Without a transactional id (an idempotent producer): a fresh producer id, or, when the producer
presents its current id and epoch (v3+, KIP-360), the same id with the epoch bumped.

With one, the transaction coordinator answers (broker/transactions/runtime.py): the id's producer id
with its epoch bumped, fencing the previous producer; an open transaction of that producer is
aborted first (answered CONCURRENT_TRANSACTIONS, which the client retries). WRITE on the
transactional id is checked by admission, as Kafka does.
"""
from __future__ import annotations

from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, TransactionalId
from roster.transactions.errors import for_version

API_KEY = ApiKey.INIT_PRODUCER_ID
MAX_EPOCH = 32767
FENCED_FROM = 4


def _answer(request, error: ErrorCode, producer_id: int = -1, epoch: int = -1):
    return make(response_schema(API_KEY, request.api_version),
                error_code=for_version(error, request.api_version, FENCED_FROM),
                producer_id=producer_id, producer_epoch=epoch,
                ongoing_txn_producer_id=-1, ongoing_txn_producer_epoch=-1)


def refuse(request, error: ErrorCode):
    return _answer(request, error)


async def handle(broker, request, connection):
    body = request.body
    known = getattr(body, "producer_id", -1)
    epoch = getattr(body, "producer_epoch", -1)
    if body.transactional_id is not None:
        timeout_ms = round(body.transaction_timeout.total_seconds() * 1000)
        expected = (known, epoch) if known >= 0 else None
        outcome = await broker.transactions.init_producer_id(body.transactional_id, timeout_ms,
                                                             expected)
        if outcome.error is not ErrorCode.none:
            return _answer(request, outcome.error)
        return _answer(request, ErrorCode.none, outcome.producer_id, outcome.producer_epoch)
    if known >= 0 and 0 <= epoch < MAX_EPOCH:
        producer_id, epoch = known, epoch + 1
    else:
        producer_id, epoch = broker.producer_ids.allocate(), 0
    return _answer(request, ErrorCode.none, producer_id, epoch)


SPEC = ApiSpec(API_KEY, "InitProducerId", 0, 6, handle,
               resources=(TransactionalId(AclOperation.WRITE, idempotent=True),), refuse=refuse)
