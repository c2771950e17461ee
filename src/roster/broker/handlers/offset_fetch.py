"""OffsetFetch (9), v0-10: one group (v0-7) or several (v8+); a null topic list means all.

RequireStable (v7+): a partition with an offset committed inside a still open transaction
(TxnOffsetCommit, pending until its marker) answers UNSTABLE_OFFSET_COMMIT, as Kafka's.

v0 (dropped by Kafka 4.0) has v1's layout. Kafka 3.9 read v0 from ZooKeeper, where OffsetCommit
v0 wrote (and refused both in KRaft mode); roster keeps every commit in __consumer_offsets, so v0
reads the same offsets as v1.
"""
from __future__ import annotations

from roster.broker.network.classic_versions import serving
from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, Groups, Topics

API_KEY = ApiKey.OFFSET_FETCH
KIO_FROM = 1
MULTI_GROUP_FROM = 8
# refused before the coordinator (an unknown topic named by name is simply never committed to)
_REFUSED = (ErrorCode.topic_authorization_failed, ErrorCode.unknown_topic_id)


def _group_topics(broker, admission, schema_topic, group_id: str, topics, by_id: bool,
                  within: int | None = None, require_stable: bool = False):
    partition_entry = element(schema_topic, "partitions")
    if topics is None:  # every topic the group has offsets for, that the client may see
        fetched = broker.groups.fetch_offsets(group_id, None, require_stable)
        by_topic: dict[str, list] = {}
        for f in fetched:
            by_topic.setdefault(f.topic, []).append(f)
        entries = []
        for name, offsets in sorted(by_topic.items()):
            topic = broker.topics.get(name)
            if by_id and topic is None:
                continue  # no id to name it by: the topic is gone
            if not admission.allows(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                continue
            entries.append((name, topic.topic_id if topic else None, offsets))
    else:
        entries = []
        for index, t in enumerate(topics):
            entry_name = getattr(t, "name", None)
            topic_id = getattr(t, "topic_id", None)
            topic, error = admission.topic(index, within)
            if error in _REFUSED:
                entries.append((entry_name, topic_id, [(p, error) for p in t.partition_indexes]))
                continue
            name = entry_name if entry_name is not None else topic.name
            fetched = broker.groups.fetch_offsets(
                group_id, [(name, p) for p in t.partition_indexes], require_stable)
            entries.append((entry_name or name, topic_id, fetched))
    result = []
    for name, topic_id, offsets in entries:
        partitions = []
        for f in offsets:
            if isinstance(f, tuple):  # (partition, error): refused before the coordinator
                partitions.append(make(partition_entry, partition_index=f[0], committed_offset=-1,
                                       committed_leader_epoch=-1, metadata="",
                                       error_code=f[1]))
            else:
                partitions.append(make(partition_entry, partition_index=f.partition,
                                       committed_offset=f.offset,
                                       committed_leader_epoch=f.leader_epoch,
                                       metadata=f.metadata, error_code=f.error))
        result.append(make(schema_topic, name=name, topic_id=topic_id,
                           partitions=tuple(partitions)))
    return tuple(result)


def refuse(request, error: ErrorCode):
    """v0-7's one group refused (or loading): v0-1 repeat the error in every partition; v2-7
    carry it at the top level and list no topics (Kafka's OffsetFetchRequest.getErrorResponse)."""
    version = request.api_version
    schema = response_schema(API_KEY, max(version, KIO_FROM))
    topics = request.body.topics
    if version > 1 or topics is None:
        return make(schema, error_code=error, topics=())
    schema_topic = element(schema, "topics")
    partition_entry = element(schema_topic, "partitions")
    return make(schema, error_code=error, topics=tuple(make(schema_topic, name=t.name,
                                                            partitions=tuple(
        make(partition_entry, partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
             metadata="", error_code=error)
        for p in t.partition_indexes)) for t in topics))


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    admission = request.admission
    schema = response_schema(API_KEY, max(version, KIO_FROM))  # v0 answers as v1 does
    if version < MULTI_GROUP_FROM:
        topic_entry = element(schema, "topics")
        topics = _group_topics(broker, admission, topic_entry, body.group_id, body.topics,
                               by_id=False, require_stable=getattr(body, "require_stable",
                                                                   False))
        return make(schema, topics=topics, error_code=ErrorCode.none)
    group_entry = element(schema, "groups")
    topic_entry = element(group_entry, "topics")
    groups = []
    for within, g in enumerate(body.groups):
        refused = admission.group(g.group_id)
        if refused is not ErrorCode.none:  # unauthorized, or loading
            groups.append(make(group_entry, group_id=g.group_id, topics=(), error_code=refused))
            continue
        # v9+: a consumer group member's fetch carries its member id and epoch (KIP-848)
        checked = broker.groups.fetch_refused(g.group_id, getattr(g, "member_id", None),
                                              getattr(g, "member_epoch", -1))
        if checked is not None:
            groups.append(make(group_entry, group_id=g.group_id, topics=(), error_code=checked))
            continue
        groups.append(make(group_entry, group_id=g.group_id, error_code=ErrorCode.none,
                           topics=_group_topics(broker, admission, topic_entry, g.group_id,
                                                g.topics, by_id=version >= 10, within=within,
                                                require_stable=body.require_stable)))
    return make(schema, groups=tuple(groups))


SPEC = ApiSpec(API_KEY, "OffsetFetch", 0, 10, handle, raw=serving(API_KEY, KIO_FROM, handle),
               resources=(
                   Group(AclOperation.DESCRIBE, versions=(0, 7)),
                   Topics(AclOperation.DESCRIBE, versions=(0, 7)),
                   Groups(AclOperation.DESCRIBE, "groups", key="group_id", versions=(8, 10)),
                   Topics(AclOperation.DESCRIBE, within="groups", versions=(8, 10))),
               refuse=refuse)
