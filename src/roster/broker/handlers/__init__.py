"""One module per Kafka API. Each declares SPEC (its key, advertised versions and handler);
the registry, and from it the ApiVersions answer, is built from these declarations."""
from roster.broker.handlers import (
    api_versions,
    create_topics,
    delete_topics,
    fetch,
    find_coordinator,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
)
from roster.protocol.registry import Registry

MODULES = (produce, fetch, list_offsets, metadata, find_coordinator, api_versions,
           create_topics, delete_topics, init_producer_id)


def build_registry() -> Registry:
    registry = Registry()
    for module in MODULES:
        registry.add(module.SPEC)
    return registry
