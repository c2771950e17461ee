"""DescribeAcls (29), v1-3: the ACLs a filter matches, grouped by resource pattern — what
`kafka-acls --list`, admin clients' describe_acls and `roster acls list` send.

As Kafka (KafkaApis/AclApis): DESCRIBE on the cluster (admission's Cluster declaration), else
CLUSTER_AUTHORIZATION_FAILED;
without an authorizer SECURITY_DISABLED; a filter with an UNKNOWN element INVALID_REQUEST.
v1 added pattern types (v0, literal only, is gone from Kafka 4 and from roster), v2 is
flexible, v3 adds the USER resource type. confluent-kafka 2.16 (librdkafka 2.16) sends v2 of
the three ACL APIs, kafka-python 3.0 and `roster acls` v3.
"""
from __future__ import annotations

from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Cluster
from roster.security.acls import AclFilter
from roster.security.authorizer import NO_AUTHORIZER, acl_authorizer

API_KEY = ApiKey.DESCRIBE_ACLS
CLUSTER_REFUSED = "Cluster authorization failed."  # Kafka's ClusterAuthorizationException


def refused_message(error: ErrorCode, message: str | None = None) -> str | None:
    """The message of an ACL API's refusal: Kafka's for a cluster refusal."""
    return CLUSTER_REFUSED if error is ErrorCode.cluster_authorization_failed else message


def refuse(request, error: ErrorCode):
    return make(response_schema(API_KEY, request.api_version), error_code=error,
                error_message=refused_message(error), resources=())


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)

    def answer(error=ErrorCode.none, message=None, resources=()):
        return make(schema, error_code=error, error_message=message, resources=resources)

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


SPEC = ApiSpec(API_KEY, "DescribeAcls", 1, 3, handle,
               resources=(Cluster(AclOperation.DESCRIBE),), refuse=refuse)
