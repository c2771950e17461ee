"""DeleteGroups (42), v0-2: only Empty groups; their offsets go with them."""
from __future__ import annotations

from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec

API_KEY = 42


async def handle(broker, request, connection):
    names = list(request.body.groups_names)
    runtime = broker.groups
    ready = [name for name in names if not runtime.loading(name)]
    outcome = {name: ErrorCode.coordinator_load_in_progress for name in names}
    if ready:
        outcome.update(await runtime.run(
            lambda token, now: runtime.coordinator.delete_groups(ready, now, token)))
    schema = response_schema(API_KEY, request.api_version)
    entry = element(schema, "results")
    return make(schema, results=tuple(make(entry, group_id=name, error_code=outcome[name])
                                      for name in names))


SPEC = ApiSpec(API_KEY, "DeleteGroups", 0, 2, handle)
