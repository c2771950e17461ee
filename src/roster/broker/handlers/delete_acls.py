"""DeleteAcls (31), v1-3: remove the ACLs each filter matches — `kafka-acls --remove`, admin
clients' delete_acls, `roster acls remove`. Answered once the smaller set is fsynced and live,
with what each filter removed.

As Kafka: ALTER on the cluster (admission), else every filter gets
CLUSTER_AUTHORIZATION_FAILED; without an authorizer SECURITY_DISABLED; a filter with an UNKNOWN
element INVALID_REQUEST (the others are still applied). A filter matching nothing succeeds with
no matching ACLs.
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
from roster.security.acls import AclFilter
from roster.security.authorizer import NO_AUTHORIZER, acl_authorizer

API_KEY = ApiKey.DELETE_ACLS

log = logging.getLogger("roster.security")


def refuse(request, error: ErrorCode, message: str | None = None):
    """Every filter answers `error`."""
    schema = response_schema(API_KEY, request.api_version)
    result = element(schema, "filter_results")
    return make(schema, filter_results=tuple(
        make(result, error_code=error, error_message=refused_message(error, message),
             matching_acls=())
        for _ in request.body.filters))


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    result = element(schema, "filter_results")
    matching = element(result, "matching_acls")
    filters = request.body.filters
    authorizer = acl_authorizer(broker)
    if authorizer is None:
        return refuse(request, ErrorCode.security_disabled, NO_AUTHORIZER)
    parsed = [AclFilter.of(f.resource_type_filter, f.resource_name_filter,
                           f.pattern_type_filter, f.principal_filter, f.host_filter,
                           f.operation, f.permission_type) for f in filters]
    problems = [f.unknown() for f in parsed]
    removed = await authorizer.delete([f for f, p in zip(parsed, problems) if p is None])
    removed_by = iter(removed)
    answers = []
    for problem in problems:
        if problem is not None:
            answers.append(make(result, error_code=ErrorCode.invalid_request,
                                error_message=problem, matching_acls=()))
            continue
        found = next(removed_by)
        for binding in found:
            log.info("ACL removed by %s: %s", connection.principal, binding)
        answers.append(make(result, error_code=ErrorCode.none, error_message=None,
                            matching_acls=tuple(
                                make(matching, error_code=ErrorCode.none, error_message=None,
                                     resource_type=b.resource_type, resource_name=b.name,
                                     pattern_type=b.pattern, principal=b.principal,
                                     host=b.host, operation=b.operation,
                                     permission_type=b.permission)
                                for b in found)))
    return make(schema, filter_results=tuple(answers))


SPEC = ApiSpec(API_KEY, "DeleteAcls", 1, 3, handle,
               resources=(Cluster(AclOperation.ALTER),), refuse=refuse)
