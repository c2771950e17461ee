"""AddOffsetsToTxn (25), v0-4: adds the group's __consumer_offsets partition to the transaction,
so that EndTxn writes a marker there too (TxnOffsetCommit then commits the offsets). WRITE on
the transactional id and READ on the group, as Kafka checks them (admission)."""
from __future__ import annotations

from roster.broker.groups.group_log import OFFSETS_TOPIC
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, TransactionalId
from roster.transactions.errors import for_version

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN
FENCED_FROM = 2


def refuse(request, error: ErrorCode):
    return make(response_schema(API_KEY, request.api_version),
                error_code=for_version(error, request.api_version, FENCED_FROM))


async def handle(broker, request, connection):
    body = request.body
    partition = broker.group_log.partition_for(body.group_id)
    outcome = await broker.transactions.add_when_settled(
        body.transactional_id, body.producer_id, body.producer_epoch,
        [(OFFSETS_TOPIC, partition)])
    return refuse(request, outcome.error)


# route=False: the group need not be loaded or even exist; only its partition is named
SPEC = ApiSpec(API_KEY, "AddOffsetsToTxn", 0, 4, handle, resources=(
    TransactionalId(AclOperation.WRITE),
    Group(AclOperation.READ, route=False)), refuse=refuse)
