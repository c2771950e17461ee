"""ListGroups (16), v0-5, with the state (v4+) and type (v5+) filters."""
from __future__ import annotations

from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec

API_KEY = 16


def _filter(values) -> set[str] | None:
    cleaned = {v.strip().lower() for v in values or ()}
    return cleaned or None


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    entry = element(schema, "groups")
    if not broker.groups.loaded:
        return make(schema, error_code=ErrorCode.coordinator_load_in_progress, groups=())
    states = _filter(getattr(body, "states_filter", None))
    types = _filter(getattr(body, "types_filter", None))
    consumer = broker.groups.consumer
    listed = [(group_id, protocol_type, state, "classic") for group_id, protocol_type, state
              in broker.groups.coordinator.list_groups(states, types)
              if group_id not in consumer.groups]  # its offsets' holder, not a group of its own
    listed += [(group_id, "consumer", state, "consumer")
               for group_id, state in consumer.list_groups(states, types)]
    return make(schema, error_code=ErrorCode.none, groups=tuple(
        make(entry, group_id=group_id, protocol_type=protocol_type, group_state=state,
             group_type=group_type) for group_id, protocol_type, state, group_type in listed))


SPEC = ApiSpec(API_KEY, "ListGroups", 0, 5, handle)
