"""FindCoordinator (10), v0-6: this broker coordinates every group (the coordinator arrives with
the group issue; until then the answer is only an address). Admission authorizes DESCRIBE on
each key's group (a transaction key is authorized as a group too: roster has no transactions);
a FindCoordinator is not routed to a coordinator, so a loading group is still found."""
from __future__ import annotations

from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, Groups

API_KEY = ApiKey.FIND_COORDINATOR
GROUP, TRANSACTION, SHARE = 0, 1, 2


def _answer(broker, key_type: int, version: int):
    if key_type == SHARE and version < 6:
        return ErrorCode.invalid_request, "share coordinators need FindCoordinator v6"
    if key_type not in (GROUP, TRANSACTION, SHARE):
        return ErrorCode.invalid_request, f"unknown key type {key_type}"
    return ErrorCode.none, None


async def handle(broker, request, connection):
    version = request.api_version
    schema = response_schema(API_KEY, version)
    body = request.body
    endpoint = getattr(connection, "endpoint", None) or broker.endpoint  # this listener's
    key_type = getattr(body, "key_type", GROUP)
    if version < 4:
        error, message = _answer(broker, key_type, version)
        ok = error is ErrorCode.none
        return make(schema, error_code=error, error_message=message,
                    node_id=endpoint.node_id if ok else -1, host=endpoint.host if ok else "",
                    port=endpoint.port if ok else -1)
    entry = element(schema, "coordinators")
    coordinators = []
    for key in body.coordinator_keys:
        error = request.admission.group(key)
        message = None
        if error is ErrorCode.none:
            error, message = _answer(broker, key_type, version)
        ok = error is ErrorCode.none
        coordinators.append(make(entry, key=key, node_id=endpoint.node_id if ok else -1,
                                 host=endpoint.host if ok else "",
                                 port=endpoint.port if ok else -1,
                                 error_code=error, error_message=message))
    return make(schema, coordinators=tuple(coordinators))


def refuse(request, error: ErrorCode):
    return make(response_schema(API_KEY, request.api_version), error_code=error,
                error_message=None, node_id=-1, host="", port=-1)


SPEC = ApiSpec(API_KEY, "FindCoordinator", 0, 6, handle, resources=(
    Group(AclOperation.DESCRIBE, "key", versions=(0, 3), route=False),
    Groups(AclOperation.DESCRIBE, "coordinator_keys", versions=(4, 6), route=False)),
    refuse=refuse)
