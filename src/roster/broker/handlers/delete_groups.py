"""DeleteGroups (42), v0-3: only Empty groups; their offsets go with them. v3 (kio has no
schema for it: protocol/newer_versions.py) adds an error message to each result. Each group id
is answered once, in Kafka's order (java_order.coordinator_order), the refused ones last."""
from __future__ import annotations

from roster.broker.network.classic_versions import serving
from roster.protocol import newer_versions
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.java_order import coordinator_order
from roster.protocol.partitioning import partition_for
from roster.protocol.registry import ApiSpec, Groups

API_KEY = ApiKey.DELETE_GROUPS


async def handle(broker, request, connection):
    # each id once, as Kafka's KafkaApis asks (a name twice would be deleted, then not found)
    names = list(dict.fromkeys(request.body.groups_names))
    refused, admitted = request.admission.split_groups(names)   # unauthorized, loading
    outcome = await broker.groups.delete_groups(admitted) if admitted else {}
    # Kafka's order: the coordinator's answers, then the refused. Within a __consumer_offsets
    # partition Kafka 4.4 answers the groups it does not delete first (its share-state step
    # turns them away before the deletion), then the ones it deleted.
    partitions = broker.config["offsets.topic.num.partitions"]
    answered = coordinator_order(admitted, partitions, empty_first=False)
    rank = {p: i for i, p in enumerate(dict.fromkeys(
        partition_for(name, partitions) for name in answered))}
    answered.sort(key=lambda name: (rank[partition_for(name, partitions)],
                                    outcome[name] is ErrorCode.none))
    schema = response_schema(API_KEY, newer_versions.kio_version(API_KEY, request.api_version))
    entry = element(schema, "results")
    return make(schema, results=tuple(
        make(entry, group_id=name, error_code=error)
        for name, error in [(n, outcome[n]) for n in answered] + refused))


SPEC = ApiSpec(API_KEY, "DeleteGroups", 0, 3, handle, raw=serving(API_KEY, 0, handle, kio_to=2),
               resources=(Groups(AclOperation.DELETE, "groups_names"),))
