"""DeleteGroups (42), v0-2: only Empty groups; their offsets go with them."""
from __future__ import annotations

from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Groups

API_KEY = ApiKey.DELETE_GROUPS


async def handle(broker, request, connection):
    names = list(request.body.groups_names)
    runtime = broker.groups
    outcome = {name: request.admission.group(name) for name in names}  # unauthorized, loading
    ready = [name for name in names if outcome[name] is ErrorCode.none]
    # consumer groups (KIP-848): the group's own records first, then its offsets (kept with
    # every group's, in the classic coordinator, where a group of that id may hold them)
    for name in [n for n in ready if n in runtime.consumer.groups]:
        ready.remove(name)
        outcome[name] = await runtime.run(
            lambda token, now, name=name: runtime.consumer.delete_group(name, now, token))
        if outcome[name] is ErrorCode.none and name in runtime.coordinator.groups:
            offsets = await runtime.run(
                lambda token, now, name=name: runtime.coordinator.delete_groups([name], now,
                                                                                token))
            outcome[name] = offsets[name]
    if ready:
        outcome.update(await runtime.run(
            lambda token, now: runtime.coordinator.delete_groups(ready, now, token)))
    schema = response_schema(API_KEY, request.api_version)
    entry = element(schema, "results")
    return make(schema, results=tuple(make(entry, group_id=name, error_code=outcome[name])
                                      for name in names))


SPEC = ApiSpec(API_KEY, "DeleteGroups", 0, 2, handle,
               resources=(Groups(AclOperation.DELETE, "groups_names"),))
