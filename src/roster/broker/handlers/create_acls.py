"""CreateAcls (30), v1-3: add ACLs — `kafka-acls --add`, admin clients' create_acls,
`roster acls add`. Answered once the new set is fsynced (security/acl_store.py) and live.

As Kafka: ALTER on the cluster (admission), else every creation gets
CLUSTER_AUTHORIZATION_FAILED; without an authorizer SECURITY_DISABLED; each creation is checked
on its own (AclControlManager's and KafkaApis' checks: LITERAL or PREFIXED, a known resource
type, operation and permission, a non-empty name, `kafka-cluster` as the cluster's name, a
principal with a type) and refused with INVALID_REQUEST, the others being created. Creating an
ACL that exists succeeds.
"""
from __future__ import annotations

import logging

from roster.broker.handlers.describe_acls import refused_message
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Cluster
from roster.security.acls import AclBinding, validate_new
from roster.security.authorizer import NO_AUTHORIZER, acl_authorizer

API_KEY = ApiKey.CREATE_ACLS

log = logging.getLogger("roster.security")


def refuse(request, error: ErrorCode, message: str | None = None):
    """Every creation answers `error`."""
    schema = response_schema(API_KEY, request.api_version)
    result = element(schema, "results")
    return make(schema, results=tuple(
        make(result, error_code=error, error_message=refused_message(error, message))
        for _ in request.body.creations))


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    result = element(schema, "results")
    creations = request.body.creations
    authorizer = acl_authorizer(broker)
    if authorizer is None:
        return refuse(request, ErrorCode.security_disabled, NO_AUTHORIZER)
    answers, valid = [], []
    for c in creations:
        binding = AclBinding.of(c.resource_type, c.resource_name, c.resource_pattern_type,
                                c.principal, c.host, c.operation, c.permission_type)
        problem = validate_new(binding)
        if problem is None:
            valid.append(binding)
            answers.append(make(result, error_code=ErrorCode.none, error_message=""))  # as Kafka
        else:
            answers.append(make(result, error_code=ErrorCode.invalid_request,
                                error_message=problem))
    if valid:
        await authorizer.create(valid)
        for binding in valid:
            log.info("ACL added by %s: %s", connection.principal, binding)
    return make(schema, results=tuple(answers))


SPEC = ApiSpec(API_KEY, "CreateAcls", 1, 3, handle,
               resources=(Cluster(AclOperation.ALTER),), refuse=refuse)
