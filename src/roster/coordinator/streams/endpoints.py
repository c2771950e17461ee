"""Interactive Query routing: the partitions each member's endpoint serves, as the heartbeat's
PartitionsByUserEndpoint carries them (Kafka 4.4.0's EndpointToPartitionsManager).

A member with a UserEndpoint serves, for every task it holds, the task's partition of each topic
its subtopology reads (source and repartition source topics) that has that partition: its
active tasks as ActivePartitions, its standby and warm-up tasks as StandbyPartitions. A member
without an endpoint is not listed. Topics come in name order, each with its partitions sorted.
"""
from __future__ import annotations


from roster.coordinator.consumer.model import TopicImage
from roster.coordinator.streams.model import Endpoint, StreamsMember, Tasks
from roster.coordinator.streams.topology import Subtopology
from roster.frozen import frozen

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]


@frozen
class EndpointPartitions:
    endpoint: Endpoint
    active: TopicPartitions
    standby: TopicPartitions


def endpoint_partitions(member: StreamsMember, subtopologies: dict[str, Subtopology],
                        image: TopicImage) -> EndpointPartitions | None:
    if member.user_endpoint is None:
        return None
    assigned = member.assigned
    standby = dict(assigned.standby)
    for s, ps in assigned.warmup.items():
        standby[s] = standby.get(s, frozenset()) | ps
    return EndpointPartitions(member.user_endpoint,
                              _partitions(assigned.active, subtopologies, image),
                              _partitions(standby, subtopologies, image))


def _partitions(tasks: Tasks, subtopologies: dict[str, Subtopology],
                image: TopicImage) -> TopicPartitions:
    out = []
    for subtopology_id in sorted(tasks):
        s = subtopologies.get(subtopology_id)
        if s is None:
            continue
        topics = set(s.source_topics) | {t.name for t in s.repartition_source_topics}
        for topic in sorted(topics):
            found = image.lookup(topic)
            if found is None:
                continue          # Kafka fails the heartbeat here; the topic went away
            ps = tuple(sorted(p for p in tasks[subtopology_id] if p < found[1]))
            if ps:
                out.append((topic, ps))
    return tuple(out)
