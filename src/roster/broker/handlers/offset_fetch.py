"""OffsetFetch (9), v0-10: one group (v0-7) or several (v8+); a null topic list means all.

roster has no transactions, so RequireStable (v7+) never finds an unstable offset.

v0 (dropped by Kafka 4.0) has v1's layout. Kafka 3.9 read v0 from ZooKeeper, where OffsetCommit
v0 wrote (and refused both in KRaft mode); roster keeps every commit in __consumer_offsets, so v0
reads the same offsets as v1.
"""
from __future__ import annotations

from roster.broker.classic_versions import serving
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec

API_KEY = 9
KIO_FROM = 1
MULTI_GROUP_FROM = 8


def _wanted(broker, topics):
    """[(topic entry name or None, topic id or None, name, [partitions])] or None for all."""
    if topics is None:
        return None
    wanted = []
    for t in topics:
        name = getattr(t, "name", None)
        topic_id = getattr(t, "topic_id", None)
        if name is None and topic_id is not None:
            topic = broker.topics.by_id(topic_id)
            name = topic.name if topic else None
        wanted.append((getattr(t, "name", None), topic_id, name, list(t.partition_indexes)))
    return wanted


def _group_topics(broker, schema_topic, group_id: str, topics, by_id: bool):
    partition_entry = element(schema_topic, "partitions")
    wanted = _wanted(broker, topics)
    if wanted is None:
        fetched = broker.groups.coordinator.fetch_offsets(group_id, None)
        by_topic: dict[str, list] = {}
        for f in fetched:
            by_topic.setdefault(f.topic, []).append(f)
        entries = []
        for name, offsets in sorted(by_topic.items()):
            topic = broker.topics.get(name)
            if by_id and topic is None:
                continue  # no id to name it by: the topic is gone
            entries.append((name, topic.topic_id if topic else None, offsets))
    else:
        entries = []
        for entry_name, topic_id, name, partitions in wanted:
            if name is None:  # an unknown topic id
                offsets = [None] * len(partitions)
                entries.append((entry_name, topic_id, list(zip(partitions, offsets))))
                continue
            fetched = broker.groups.coordinator.fetch_offsets(
                group_id, [(name, p) for p in partitions])
            entries.append((entry_name or name, topic_id, fetched))
    result = []
    for name, topic_id, offsets in entries:
        partitions = []
        for f in offsets:
            if isinstance(f, tuple):  # (partition, None): the topic id is unknown
                partitions.append(make(partition_entry, partition_index=f[0], committed_offset=-1,
                                       committed_leader_epoch=-1, metadata="",
                                       error_code=ErrorCode.unknown_topic_id))
            else:
                partitions.append(make(partition_entry, partition_index=f.partition,
                                       committed_offset=f.offset,
                                       committed_leader_epoch=f.leader_epoch,
                                       metadata=f.metadata, error_code=f.error))
        result.append(make(schema_topic, name=name, topic_id=topic_id,
                           partitions=tuple(partitions)))
    return tuple(result)


def _loading_answer(broker, schema_topic, topics, per_partition: bool):
    """While a group loads: v0-1 repeat the error in every partition; later versions carry it
    at the group (or top) level and list no topics."""
    if not per_partition or topics is None:
        return ()
    partition_entry = element(schema_topic, "partitions")
    return tuple(make(schema_topic, name=t.name, partitions=tuple(
        make(partition_entry, partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
             metadata="", error_code=ErrorCode.coordinator_load_in_progress)
        for p in t.partition_indexes)) for t in topics)


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    schema = response_schema(API_KEY, max(version, KIO_FROM))  # v0 answers as v1 does
    if version < MULTI_GROUP_FROM:
        topic_entry = element(schema, "topics")
        if broker.groups.loading(body.group_id):
            return make(schema, error_code=ErrorCode.coordinator_load_in_progress,
                        topics=_loading_answer(broker, topic_entry, body.topics, version <= 1))
        topics = _group_topics(broker, topic_entry, body.group_id, body.topics, by_id=False)
        return make(schema, topics=topics, error_code=ErrorCode.none)
    group_entry = element(schema, "groups")
    topic_entry = element(group_entry, "topics")
    groups = []
    for g in body.groups:
        if broker.groups.loading(g.group_id):
            groups.append(make(group_entry, group_id=g.group_id, topics=(),
                               error_code=ErrorCode.coordinator_load_in_progress))
            continue
        # v9+: a consumer group member's fetch carries its member id and epoch (KIP-848)
        checked = broker.groups.consumer.fetchable(g.group_id, getattr(g, "member_id", None),
                                                   getattr(g, "member_epoch", -1))
        if checked is not None and checked is not ErrorCode.none:
            groups.append(make(group_entry, group_id=g.group_id, topics=(), error_code=checked))
            continue
        groups.append(make(group_entry, group_id=g.group_id, error_code=ErrorCode.none,
                           topics=_group_topics(broker, topic_entry, g.group_id, g.topics,
                                                by_id=version >= 10)))
    return make(schema, groups=tuple(groups))


SPEC = ApiSpec(API_KEY, "OffsetFetch", 0, 10, handle, raw=serving(API_KEY, KIO_FROM, handle))
