"""EndTxn (26), v0-4: commit or abort the open transaction. Answered once the PrepareCommit /
PrepareAbort record is durable; the markers follow (broker/transactions.py). v5 is the
Transaction Version 2 request (KIP-890), not served: the broker does not advertise TV2."""
from __future__ import annotations

from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, TransactionalId
from roster.transactions.errors import for_version

API_KEY = ApiKey.END_TXN
FENCED_FROM = 2


def refuse(request, error: ErrorCode):
    return make(response_schema(API_KEY, request.api_version),
                error_code=for_version(error, request.api_version, FENCED_FROM))


async def handle(broker, request, connection):
    body = request.body
    outcome = await broker.transactions.end_txn(body.transactional_id, body.producer_id,
                                                body.producer_epoch, body.committed)
    return refuse(request, outcome.error)


SPEC = ApiSpec(API_KEY, "EndTxn", 0, 4, handle,
               resources=(TransactionalId(AclOperation.WRITE),), refuse=refuse)
