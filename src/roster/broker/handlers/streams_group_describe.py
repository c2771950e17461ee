"""StreamsGroupDescribe (89): streams groups (KIP-1071) as Kafka 4.4 describes them, at v0 and v1:
state, epochs, the topology, and each member with its process, endpoint, client tags, task
offsets, its current and target tasks. A group another type holds, or none, answers
GROUP_ID_NOT_FOUND.

v1 (protocol/schema_extensions.py) adds the topology description a Streams client may push
(KIP-1331) and the assignor's name (KIP-1357). roster keeps no descriptions, as Kafka 4.4 with
no description plugin configured: none is answered, and its status says whether one was asked
for (NOT_STORED) or not (NOT_REQUESTED); the assignor is "sticky".

Admission, as Kafka 4.4's: DESCRIBE on each group (declared); and a group whose topology names
a topic the caller may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED, without its
members (checked here, on the described topology: the request names no topic to declare). The
refused groups are answered first, the rest in the order Kafka's coordinator answers them
(java_order.coordinator_order: an empty group id first, INVALID_GROUP_ID, then by
__consumer_offsets partition)."""
from __future__ import annotations

from roster.broker.groups.streams_group import streams_type
from roster.broker.network.authorized_operations import NOT_REQUESTED, requested
from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.java_order import coordinator_order
from roster.protocol.registry import ApiSpec, Groups

API_KEY = ApiKey.STREAMS_GROUP_DESCRIBE
NOT_REQUESTED_DESCRIPTION, NOT_STORED_DESCRIPTION = 0, 1   # TopologyDescriptionStatus
ASSIGNOR = "sticky"   # Kafka's sticky task assignor, the one roster's streams groups run
UNAUTHORIZED_TOPICS = ("The described group uses topics that the client is not authorized to "
                       "describe.")


def _topics(topology):
    """Every topic a group's topology names: its subtopologies' source, repartition sink,
    repartition source and changelog topics."""
    for s in topology.subtopologies:
        yield from s.source_topics
        yield from s.repartition_sink_topics
        for t in (*s.repartition_source_topics, *s.state_changelog_topics):
            yield t.name


async def handle(broker, request, connection):
    from roster.coordinator.streams.model import EMPTY   # loaded with the streams type
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    group_entry = element(schema, "groups")
    topology_entry = element(group_entry, "topology")
    sub_entry = element(topology_entry, "subtopologies")
    info_entry = element(sub_entry, "state_changelog_topics")
    kv_entry = element(info_entry, "topic_configs")
    member_entry = element(group_entry, "members")
    endpoint_entry = element(member_entry, "user_endpoint")
    offset_entry = element(member_entry, "task_offsets")
    assignment_entry = element(member_entry, "assignment")
    task_entry = element(assignment_entry, "active_tasks")
    streams = streams_type(broker)
    operations = requested(broker, connection, body.include_authorized_operations)
    # v1's fields of a described group, the same for every one (v0 has none of them; a group
    # answered with an error keeps their defaults: no assignor, NOT_REQUESTED)
    v1 = {} if request.api_version < 1 else {
        "topology_description": None, "assignor_name": ASSIGNOR,
        "topology_description_status": NOT_STORED_DESCRIPTION
        if body.include_topology_description else NOT_REQUESTED_DESCRIPTION}

    def authorized(group_id: str) -> int:
        return NOT_REQUESTED if operations is None else operations.of(ResourceType.GROUP,
                                                                      group_id)

    def tasks(t):
        return tuple(make(task_entry, subtopology_id=s, partitions=tuple(sorted(ps)))
                     for s, ps in sorted(t.items()))

    def assignment(sets):
        return make(assignment_entry, active_tasks=tasks(sets.active),
                    standby_tasks=tasks(sets.standby), warmup_tasks=tasks(sets.warmup))

    def info(t):
        return make(info_entry, name=t.name, partitions=t.partitions,
                    replication_factor=t.replication_factor,
                    topic_configs=tuple(make(kv_entry, key=k, value=v) for k, v in t.configs))

    def offsets(values):
        return tuple(make(offset_entry, subtopology_id=s, partition=p, offset=o)
                     for (s, p), o in sorted(values.items()))

    def missing(group_id, error, message):
        return make(group_entry, error_code=error, error_message=message, group_id=group_id,
                    group_state="", group_epoch=0, assignment_epoch=0, topology=None,
                    members=(), authorized_operations=authorized(group_id))

    refused, admitted = request.admission.split_groups(body.group_ids)
    described = [missing(group_id, error, None) for group_id, error in refused]
    for group_id in coordinator_order(admitted, broker.config["offsets.topic.num.partitions"],
                                      empty_first=True):
        if not group_id:
            described.append(missing(group_id, ErrorCode.invalid_group_id, None))
            continue
        found = None if streams is None else streams.describe(group_id)
        if found is None:
            held = broker.groups.shard.type_of(group_id).has_group(group_id)
            described.append(missing(
                group_id, ErrorCode.group_id_not_found,
                f"Group {group_id} is not a streams group." if held
                else f"Group {group_id} not found."))
            continue
        group, state = found
        if group.topology is not None and not request.admission.describes_all(
                _topics(group.topology)):
            described.append(missing(group_id, ErrorCode.topic_authorization_failed,
                                     UNAUTHORIZED_TOPICS))
            continue
        topology = None if group.topology is None else make(
            topology_entry, epoch=group.topology.epoch, subtopologies=tuple(make(
                sub_entry, subtopology_id=s.subtopology_id, source_topics=s.source_topics,
                repartition_sink_topics=s.repartition_sink_topics,
                state_changelog_topics=tuple(info(t) for t in s.state_changelog_topics),
                repartition_source_topics=tuple(info(t) for t in s.repartition_source_topics))
                for s in group.topology.subtopologies))
        members = tuple(make(
            member_entry, member_id=m.member_id, member_epoch=m.member_epoch,
            instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
            client_host=m.client_host, topology_epoch=m.topology_epoch,
            process_id=m.process_id,
            user_endpoint=None if m.user_endpoint is None else make(
                endpoint_entry, host=m.user_endpoint.host, port=m.user_endpoint.port),
            client_tags=tuple(make(kv_entry, key=k, value=v) for k, v in m.client_tags),
            task_offsets=offsets(m.task_offsets), task_end_offsets=offsets(m.task_end_offsets),
            assignment=assignment(m.assigned),
            target_assignment=assignment(group.target.get(m.member_id, EMPTY)),
            is_classic=False) for _, m in sorted(group.members.items()))
        described.append(make(
            group_entry, error_code=ErrorCode.none, error_message=None, group_id=group_id,
            group_state=state, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch, topology=topology, members=members,
            authorized_operations=authorized(group_id), **v1))
    return make(schema, groups=tuple(described))


SPEC = ApiSpec(API_KEY, "StreamsGroupDescribe", 0, 1, handle,
               resources=(Groups(AclOperation.DESCRIBE, "group_ids"),))
