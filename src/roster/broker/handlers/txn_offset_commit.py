"""TxnOffsetCommit (28), v0-5: offsets committed inside a transaction (KIP-98; KIP-447 adds the
group member's generation, member id and group.instance.id from v3).

WRITE on the transactional id, READ on the group and on each topic, as Kafka checks them
(admission). The producer must hold the group's __consumer_offsets partition in its open
transaction (AddOffsetsToTxn) at its current epoch: a fenced producer is refused
(PRODUCER_FENCED; INVALID_PRODUCER_EPOCH before v3). The group checks the member as for
OffsetCommit, so a zombie after a rebalance is fenced. Accepted offsets are written in the
producer's transactional batch and stay pending until EndTxn's marker (broker/groups/runtime.py,
coordinator/txn_offsets.py). v5 is Transaction Version 2's: the group's partition is added to
the transaction here (TV2 clients send no AddOffsetsToTxn).
"""
from __future__ import annotations

from roster.broker.groups.group_log import OFFSETS_TOPIC
from roster.broker.handlers.offset_commit import checked_offsets
from roster.coordinator.messages import CommitRequest
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, Topics, TransactionalId
from roster.transactions.errors import for_version

API_KEY = ApiKey.TXN_OFFSET_COMMIT
FENCED_FROM = 3
TV2_FROM = 5
# the transaction coordinator's verdict on the producer, as a TxnOffsetCommit is told it
_PRODUCER_ERRORS = {ErrorCode.invalid_producer_epoch: ErrorCode.producer_fenced}


def _answer(request, error_of):
    schema = response_schema(API_KEY, request.api_version)
    topic_entry = element(schema, "topics")
    partition_entry = element(topic_entry, "partitions")
    return make(schema, topics=tuple(
        make(topic_entry, name=topic.name, partitions=tuple(
            make(partition_entry, partition_index=p.partition_index,
                 error_code=for_version(error_of(t, p.partition_index), request.api_version,
                                        FENCED_FROM))
            for p in topic.partitions))
        for t, topic in enumerate(request.body.topics)))


def refuse(request, error: ErrorCode):
    return _answer(request, lambda t, p: error)


async def handle(broker, request, connection):
    body = request.body
    errors, to_commit = checked_offsets(request)
    offsets_partition = (OFFSETS_TOPIC, broker.group_log.partition_for(body.group_id))
    if request.api_version >= TV2_FROM:   # its refusal, if any, is check_produce's below
        await broker.transactions.add_when_settled(body.transactional_id, body.producer_id,
                                                 body.producer_epoch, [offsets_partition])
    verdict = broker.transactions.check_produce(body.transactional_id, body.producer_id,
                                                body.producer_epoch, *offsets_partition)
    if verdict is not ErrorCode.none:
        verdict = _PRODUCER_ERRORS.get(verdict, verdict)
        return _answer(request, lambda t, p: errors.get((t, p), verdict))
    if to_commit:
        reply = await broker.groups.txn_commit_offsets(CommitRequest(
            group_id=body.group_id, generation=getattr(body, "generation_id", -1),
            member_id=getattr(body, "member_id", ""),
            group_instance_id=getattr(body, "group_instance_id", None),
            offsets=tuple(o for _, o in to_commit), api_version=request.api_version,
            transactional=True,
            token=broker.groups.new_token()), body.producer_id, body.producer_epoch)
        for (t, _), (_, partition, error) in zip(to_commit, reply.errors):
            errors[(t, partition)] = error
    return _answer(request, lambda t, p: errors[(t, p)])


SPEC = ApiSpec(API_KEY, "TxnOffsetCommit", 0, 5, handle, resources=(
    TransactionalId(AclOperation.WRITE), Group(AclOperation.READ),
    Topics(AclOperation.READ)), refuse=refuse)
