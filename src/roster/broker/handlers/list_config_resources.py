"""ListConfigResources (74), v0-1 (KIP-1142; v0 was ListClientMetricsResources): the resources
that have configs, by type -- what Admin.listConfigResources sends, and what kafka-configs asks
to tell "The group 'G' doesn't exist and doesn't have dynamic config." from an empty answer.

As Kafka (KafkaApis.handleListConfigResources): DESCRIBE_CONFIGS on the cluster, else
CLUSTER_AUTHORIZATION_FAILED; no types asked means every type the version knows (v0: client
metrics only); a type it does not know is UNSUPPORTED_VERSION. Listed: TOPIC every topic, the
internal ones too; BROKER this broker; GROUP every group with a config of its own
(group_configs.py). roster has no client-metrics subscriptions and no broker loggers to
describe, so those types are accepted and list nothing."""
from __future__ import annotations

from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Cluster

API_KEY = ApiKey.LIST_CONFIG_RESOURCES
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32   # ConfigResource.Type
KNOWN = {0: (CLIENT_METRICS,), 1: (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)}


def refuse(request, error: ErrorCode):
    return make(response_schema(API_KEY, request.api_version), error_code=error,
                config_resources=())


def _names(broker, resource_type: int) -> list[str]:
    if resource_type == TOPIC:
        return [topic.name for topic in broker.topics]
    if resource_type == BROKER:
        return [str(broker.config["node.id"])]
    if resource_type == GROUP:
        return sorted(g for g, own in broker.group_configs.values.items() if own)
    return []


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    known = KNOWN[request.api_version]
    wanted = tuple(getattr(request.body, "resource_types", ())) or known
    if any(t not in known for t in wanted):
        return make(schema, error_code=ErrorCode.unsupported_version, config_resources=())
    entry = element(schema, "config_resources")
    return make(schema, error_code=ErrorCode.none, config_resources=tuple(
        make(entry, resource_name=name, resource_type=t)   # (make drops the type below v1)
        for t in dict.fromkeys(wanted) for name in _names(broker, t)))


SPEC = ApiSpec(API_KEY, "ListConfigResources", 0, 1, handle,
               resources=(Cluster(AclOperation.DESCRIBE_CONFIGS),), refuse=refuse)
