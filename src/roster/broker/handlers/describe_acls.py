"""DescribeAcls (29), v1-3: the ACLs a filter matches, grouped by resource pattern — what
`kafka-acls --list`, admin clients' describe_acls and `roster acls list` send.

As Kafka (KafkaApis/AclApis): DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED;
without an authorizer SECURITY_DISABLED; a filter with an UNKNOWN element INVALID_REQUEST.
v1 added pattern types (v0, literal only, is gone from Kafka 4 and from roster; librdkafka and
kafka-python send v1/v2), v2 is flexible, v3 adds the USER resource type.
"""
from __future__ import annotations

from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec
from roster.security.acls import CLUSTER_NAME, AclFilter, Operation, Resource
from roster.security.authorizer import NO_AUTHORIZER, acl_authorizer

API_KEY = 29
CLUSTER_REFUSED = "Cluster authorization failed."  # Kafka's ClusterAuthorizationException


def cluster_refusal(broker, connection, operation) -> ErrorCode | None:
    """The ACL APIs' own check: `operation` on the cluster (None: allowed)."""
    authorizer = acl_authorizer(broker)
    if authorizer is None or authorizer.authorize(connection.principal, connection.ip,
                                                  operation, Resource.CLUSTER, CLUSTER_NAME):
        return None
    return ErrorCode.cluster_authorization_failed


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)

    def answer(error=ErrorCode.none, message=None, resources=()):
        return make(schema, error_code=error, error_message=message, resources=resources)

    refused = cluster_refusal(broker, connection, Operation.DESCRIBE)
    if refused is not None:
        return answer(refused, CLUSTER_REFUSED)
    authorizer = acl_authorizer(broker)
    if authorizer is None:
        return answer(ErrorCode.security_disabled, NO_AUTHORIZER)
    body = request.body
    acl_filter = AclFilter.of(body.resource_type_filter, body.resource_name_filter,
                              body.pattern_type_filter, body.principal_filter,
                              body.host_filter, body.operation, body.permission_type)
    unknown = acl_filter.unknown()
    if unknown is not None:
        return answer(ErrorCode.invalid_request, unknown)
    resource = element(schema, "resources")
    description = element(resource, "acls")
    grouped: dict[tuple, list] = {}
    for b in authorizer.describe(acl_filter):
        grouped.setdefault((b.resource_type, b.name, b.pattern), []).append(
            make(description, principal=b.principal, host=b.host, operation=b.operation,
                 permission_type=b.permission))
    return answer(resources=tuple(
        make(resource, resource_type=rt, resource_name=name, pattern_type=pattern,
             acls=tuple(acls))
        for (rt, name, pattern), acls in grouped.items()))


SPEC = ApiSpec(API_KEY, "DescribeAcls", 1, 3, handle)
