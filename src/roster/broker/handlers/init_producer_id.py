"""InitProducerId (22), v0-6: producer ids for idempotent producers.

Transactions are not supported: a request with a transactional id gets
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a fatal error, so a transactional producer stops with a
message instead of retrying forever. An idempotent producer that presents its current id and
epoch (v3+, KIP-360) keeps its id with the epoch bumped.
"""
from __future__ import annotations

from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, TransactionalId

API_KEY = ApiKey.INIT_PRODUCER_ID
MAX_EPOCH = 32767


def refuse(request, error: ErrorCode):
    return make(response_schema(API_KEY, request.api_version), error_code=error,
                producer_id=-1, producer_epoch=-1,
                ongoing_txn_producer_id=-1, ongoing_txn_producer_epoch=-1)


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    body = request.body
    if body.transactional_id is not None:  # transactions are not supported
        return refuse(request, ErrorCode.transactional_id_authorization_failed)
    known = getattr(body, "producer_id", -1)
    epoch = getattr(body, "producer_epoch", -1)
    if known >= 0 and 0 <= epoch < MAX_EPOCH:
        producer_id, epoch = known, epoch + 1
    else:
        producer_id, epoch = broker.producer_ids.allocate(), 0
    return make(schema, error_code=ErrorCode.none, producer_id=producer_id, producer_epoch=epoch,
                ongoing_txn_producer_id=-1, ongoing_txn_producer_epoch=-1)


SPEC = ApiSpec(API_KEY, "InitProducerId", 0, 6, handle,
               resources=(TransactionalId(AclOperation.WRITE, idempotent=True),), refuse=refuse)
