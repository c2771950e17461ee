"""ListGroups (16), v0-5, with the state (v4+) and type (v5+) filters. Admission answers
COORDINATOR_LOAD_IN_PROGRESS while any group loads; a client not allowed DESCRIBE on the
cluster sees the groups it may describe, as in Kafka."""
from __future__ import annotations

from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import AllGroups, ApiSpec

API_KEY = ApiKey.LIST_GROUPS


def _filter(values) -> set[str] | None:
    cleaned = {v.strip().lower() for v in values or ()}
    return cleaned or None


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    entry = element(schema, "groups")
    states = _filter(getattr(body, "states_filter", None))
    types = _filter(getattr(body, "types_filter", None))
    listed = broker.groups.list_groups(states, types)
    admission = request.admission
    listed = [g for g in listed
              if admission.allows(AclOperation.DESCRIBE, ResourceType.GROUP, g[0])]
    return make(schema, error_code=ErrorCode.none, groups=tuple(
        make(entry, group_id=group_id, protocol_type=protocol_type, group_state=state,
             group_type=group_type) for group_id, protocol_type, state, group_type in listed))


def refuse(request, error: ErrorCode):
    return make(response_schema(API_KEY, request.api_version), error_code=error, groups=())


SPEC = ApiSpec(API_KEY, "ListGroups", 0, 5, handle,
               resources=(AllGroups(AclOperation.DESCRIBE),), refuse=refuse)
