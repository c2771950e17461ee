"""OffsetCommit (8), v0-10. Partitions of unknown (or unauthorized) topics are refused before
the coordinator, as Kafka's request layer does (admission resolves the topics; a partition
beyond the topic's count is refused here); the rest go to the coordinator, which answers once
the commit records are written.

v0 and v1 (dropped by Kafka 4.0; sarama sends v1 unless Consumer.Offsets.Retention is set):
- v0 carries no generation or member: it commits as a simple (admin) commit does. Kafka 3.9 wrote
  v0 commits to ZooKeeper (and refused them in KRaft mode); roster has no ZooKeeper and keeps them
  in __consumer_offsets with every other commit, so any version reads them back.
- v1 carries a commit timestamp per partition. As in Kafka 3.9, -1 means "now" and any other
  value is stored as the commit timestamp, which offset expiry then counts retention from.
"""
from __future__ import annotations

from roster.broker.network.admission import partition_error
from roster.broker.network.classic_versions import serving
from roster.coordinator.messages import CommitRequest, OffsetToCommit
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, Topics

API_KEY = ApiKey.OFFSET_COMMIT
KIO_FROM = 2


def checked_offsets(request):
    """(errors, to commit): each partition refused before the coordinator, (topic entry,
    partition index) -> error, and the [(topic entry, OffsetToCommit)] that go on. Also
    TxnOffsetCommit's (its topics have the same fields)."""
    admission = request.admission
    errors: dict[tuple[int, int], ErrorCode] = {}
    to_commit = []
    for t, wanted in enumerate(request.body.topics):
        resolved = admission.topic(t)
        topic = resolved[0]
        for p in wanted.partitions:
            error = partition_error(resolved, p.partition_index)
            if error is not ErrorCode.none:
                errors[(t, p.partition_index)] = error
                continue
            to_commit.append((t, OffsetToCommit(
                topic.name, p.partition_index, p.committed_offset,
                getattr(p, "committed_leader_epoch", -1), p.committed_metadata,
                getattr(p, "commit_timestamp", -1))))
    return errors, to_commit


def refuse(request, error: ErrorCode):
    """The group refused (every partition answers `error`) or still loading (the partitions
    that reached it do)."""
    if error is ErrorCode.coordinator_load_in_progress:
        errors, to_commit = checked_offsets(request)
        for t, o in to_commit:
            errors[(t, o.partition)] = error
    else:
        errors = {(t, p.partition_index): error for t, wanted in enumerate(request.body.topics)
                  for p in wanted.partitions}
    return _answer(request, errors)


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    errors, to_commit = checked_offsets(request)
    retention = getattr(body, "retention_time", None)
    if to_commit:
        reply = await broker.groups.commit_offsets(CommitRequest(
            group_id=body.group_id, generation=body.generation_id_or_member_epoch,
            member_id=body.member_id, group_instance_id=getattr(body, "group_instance_id", None),
            offsets=tuple(o for _, o in to_commit),
            retention_ms=round(retention.total_seconds() * 1000) if retention is not None else -1,
            api_version=version, token=broker.groups.new_token()))
        for (t, _), (_, partition, error) in zip(to_commit, reply.errors):
            errors[(t, partition)] = error
    return _answer(request, errors)


def _answer(request, errors):
    body = request.body
    schema = response_schema(API_KEY, max(request.api_version, KIO_FROM))  # v0-1 answer as v2
    topic_entry = element(schema, "topics")
    partition_entry = element(topic_entry, "partitions")
    return make(schema, topics=tuple(
        make(topic_entry, name=getattr(wanted, "name", None),
             topic_id=getattr(wanted, "topic_id", None), partitions=tuple(
                 make(partition_entry, partition_index=p.partition_index,
                      error_code=errors[(t, p.partition_index)])
                 for p in wanted.partitions))
        for t, wanted in enumerate(body.topics)))


SPEC = ApiSpec(API_KEY, "OffsetCommit", 0, 10, handle, raw=serving(API_KEY, KIO_FROM, handle),
               resources=(Group(AclOperation.READ), Topics(AclOperation.READ)), refuse=refuse)
