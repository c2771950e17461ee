"""EndTxn (26), v0-5: commit or abort the open transaction. Answered once the PrepareCommit /
PrepareAbort record is durable; the markers follow (broker/transactions/runtime.py). v5 is Transaction
Version 2's (KIP-890): the epoch is bumped by every transaction and the answer carries the
producer id and epoch the client goes on with."""
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


TV2_FROM = 5


def _answer(request, error: ErrorCode, producer_id: int = -1, epoch: int = -1):
    return make(response_schema(API_KEY, request.api_version),
                error_code=for_version(error, request.api_version, FENCED_FROM),
                producer_id=producer_id, producer_epoch=epoch)


def refuse(request, error: ErrorCode):
    return _answer(request, error)


async def handle(broker, request, connection):
    body = request.body
    outcome = await broker.transactions.end_txn(body.transactional_id, body.producer_id,
                                                body.producer_epoch, body.committed,
                                                tv2=request.api_version >= TV2_FROM)
    if outcome.error is not ErrorCode.none:
        return _answer(request, outcome.error)
    return _answer(request, outcome.error, outcome.producer_id, outcome.producer_epoch)


SPEC = ApiSpec(API_KEY, "EndTxn", 0, 5, handle,
               resources=(TransactionalId(AclOperation.WRITE),), refuse=refuse)
