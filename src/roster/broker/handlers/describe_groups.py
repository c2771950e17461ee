"""DescribeGroups (15), v0-6. Each group is admitted on its own (unauthorized, loading). Asked
for authorized operations, it reports those of a group the principal may perform
(roster.broker.network.authorized_operations). The refused groups are answered first, the rest
in the order Kafka's coordinator answers them (java_order.coordinator_order: by
__consumer_offsets partition; an empty group id is a group like any other)."""
from __future__ import annotations

from roster.broker.network.authorized_operations import NOT_REQUESTED, requested
from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.java_order import coordinator_order
from roster.protocol.registry import ApiSpec, Groups

API_KEY = ApiKey.DESCRIBE_GROUPS
NOT_FOUND_FROM = 6       # KIP-1043: a missing group is an error, not the state "Dead"


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    schema = response_schema(API_KEY, version)
    group_entry = element(schema, "groups")
    member_entry = element(group_entry, "members")
    asked = requested(broker, connection, getattr(body, "include_authorized_operations", False))
    def operations_on(group_id: str) -> int:
        return NOT_REQUESTED if asked is None else asked.of(ResourceType.GROUP, group_id)

    refused, admitted = request.admission.split_groups(body.groups)
    described = [make(group_entry, group_id=group_id, group_state="", protocol_type="",
                      protocol_data="", members=(), authorized_operations=operations_on(group_id),
                      error_code=error, error_message=None) for group_id, error in refused]
    for group_id in coordinator_order(admitted, broker.config["offsets.topic.num.partitions"],
                                      empty_first=False):
        operations = operations_on(group_id)
        found = broker.groups.describe(group_id)
        if found is None or found.error is ErrorCode.group_id_not_found:
            missing = version >= NOT_FOUND_FROM
            message = f"Group {group_id} not found." if found is None else found.error_message
            described.append(make(
                group_entry, group_id=group_id, group_state="Dead", protocol_type="",
                protocol_data="", members=(), authorized_operations=operations,
                error_code=ErrorCode.group_id_not_found if missing else ErrorCode.none,
                error_message=message if missing else None))
            continue
        described.append(make(
            group_entry, error_code=ErrorCode.none, error_message=None, group_id=group_id,
            group_state=found.state, protocol_type=found.protocol_type,
            protocol_data=found.protocol_data, authorized_operations=operations,
            members=tuple(make(member_entry, member_id=m.member_id,
                               group_instance_id=m.group_instance_id, client_id=m.client_id,
                               client_host=m.client_host, member_metadata=m.metadata,
                               member_assignment=m.assignment) for m in found.members)))
    return make(schema, groups=tuple(described))


SPEC = ApiSpec(API_KEY, "DescribeGroups", 0, 6, handle,
               resources=(Groups(AclOperation.DESCRIBE, "groups"),))
