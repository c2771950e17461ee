"""StreamsGroupTopologyDescriptionUpdate (93), v0 (KIP-1331, new in Kafka 4.4): a Streams member
pushing its topology's description for the broker to keep and show in StreamsGroupDescribe v1.

Kafka 4.4 keeps descriptions only through a plugin (group.streams.topology.description.plugin
.class), off by default; with none configured it advertises the API and refuses every push with
UNSUPPORTED_VERSION, after checking READ on the group. roster keeps no descriptions, and answers
as Kafka does with no plugin. Streams clients ask for a push only when a heartbeat sets
TopologyDescriptionRequired, which neither broker then does."""
from __future__ import annotations

from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, NotAResource

API_KEY = ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE
NO_PLUGIN = "The broker has no streams group topology description plugin configured."


def refuse(request, error: ErrorCode, message: str | None = None):
    return make(response_schema(API_KEY, request.api_version), error_code=error,
                error_message=message)


async def handle(broker, request, connection):
    return refuse(request, ErrorCode.unsupported_version, NO_PLUGIN)


SPEC = ApiSpec(API_KEY, "StreamsGroupTopologyDescriptionUpdate", 0, 0, handle,
               resources=(Group(AclOperation.READ), NotAResource(
                   "topology_description", "what the topology's nodes read and write, "
                   "described for people: the push is refused, its topics act on nothing")),
               refuse=refuse)
