"""DeleteGroups (42), v0-3: only Empty groups; their offsets go with them. v3 (kio has no
schema for it: protocol/newer_versions.py) adds an error message to each result."""
from __future__ import annotations

from roster.broker.network.classic_versions import serving
from roster.protocol import newer_versions
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Groups

API_KEY = ApiKey.DELETE_GROUPS


async def handle(broker, request, connection):
    names = list(request.body.groups_names)
    outcome = {name: request.admission.group(name) for name in names}  # unauthorized, loading
    ready = [name for name in names if outcome[name] is ErrorCode.none]
    if ready:
        outcome.update(await broker.groups.delete_groups(ready))
    schema = response_schema(API_KEY, newer_versions.kio_version(API_KEY, request.api_version))
    entry = element(schema, "results")
    return make(schema, results=tuple(make(entry, group_id=name, error_code=outcome[name])
                                      for name in names))


SPEC = ApiSpec(API_KEY, "DeleteGroups", 0, 3, handle, raw=serving(API_KEY, 0, handle, kio_to=2),
               resources=(Groups(AclOperation.DELETE, "groups_names"),))
