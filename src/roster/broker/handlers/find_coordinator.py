"""FindCoordinator (10), v0-6: this broker coordinates every group and every transactional id.

Authorized per key as Kafka's KafkaApis does: DESCRIBE on the GROUP for a group key, DESCRIBE
on the TRANSACTIONAL_ID for a transaction key (which key type a request carries decides the
resource, so the check is made here; CoordinatorKeys declares it and admission skips it). A
transaction key creates __transaction_state when it does not exist yet, as Kafka's does. A
FindCoordinator is not routed to a coordinator, so a loading group is still found."""
from __future__ import annotations

from roster.broker.network.admission import admission_for
from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, CoordinatorKeys

API_KEY = ApiKey.FIND_COORDINATOR
GROUP, TRANSACTION, SHARE = 0, 1, 2
_AUTHORIZED_AS = {GROUP: (ResourceType.GROUP, ErrorCode.group_authorization_failed),
                  SHARE: (ResourceType.GROUP, ErrorCode.group_authorization_failed),
                  TRANSACTION: (ResourceType.TRANSACTIONAL_ID,
                                ErrorCode.transactional_id_authorization_failed)}


def _answer(broker, admission, key_type: int, key: str, version: int):
    if key_type == SHARE and version < 6:
        return ErrorCode.invalid_request, "share coordinators need FindCoordinator v6"
    if key_type not in _AUTHORIZED_AS:
        return ErrorCode.invalid_request, f"unknown key type {key_type}"
    resource, refused = _AUTHORIZED_AS[key_type]
    if not admission.allows(AclOperation.DESCRIBE, resource, key):
        return refused, None
    if key_type == TRANSACTION:   # Kafka creates the coordinator's topic on first lookup
        broker.transactions.log.ensure_topic()
    elif key_type == GROUP:
        broker.group_log.ensure_topic()
    return ErrorCode.none, None


async def handle(broker, request, connection):
    version = request.api_version
    schema = response_schema(API_KEY, version)
    body = request.body
    endpoint = getattr(connection, "endpoint", None) or broker.endpoint  # this listener's
    key_type = getattr(body, "key_type", GROUP)
    admission = admission_for(broker, connection)
    if version < 4:
        error, message = _answer(broker, admission, key_type, body.key, version)
        ok = error is ErrorCode.none
        return make(schema, error_code=error, error_message=message,
                    node_id=endpoint.node_id if ok else -1, host=endpoint.host if ok else "",
                    port=endpoint.port if ok else -1)
    entry = element(schema, "coordinators")
    coordinators = []
    for key in body.coordinator_keys:
        error, message = _answer(broker, admission, key_type, key, version)
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
    CoordinatorKeys(AclOperation.DESCRIBE, "key", versions=(0, 3)),
    CoordinatorKeys(AclOperation.DESCRIBE, "coordinator_keys", versions=(4, 6))),
    refuse=refuse)
