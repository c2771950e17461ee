"""One module per Kafka API. Each declares SPEC (its key, advertised versions and handler);
the registry, and from it the ApiVersions answer, is built from these declarations."""
from roster.broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_producers,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_config_resources,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    streams_group_describe,
    streams_group_heartbeat,
    streams_group_topology_description_update,
    sync_group,
    txn_offset_commit,
    write_txn_markers,
)
from roster.protocol.registry import Registry

MODULES = (produce, fetch, list_offsets, metadata, offset_commit, offset_fetch,
           find_coordinator, join_group, heartbeat, leave_group, sync_group, describe_groups,
           list_groups, api_versions, create_topics, delete_topics, init_producer_id,
           delete_groups, create_partitions, offset_delete, describe_configs, alter_configs,
           incremental_alter_configs, delete_records, sasl_handshake, sasl_authenticate,
           describe_user_scram_credentials, alter_user_scram_credentials,
           consumer_group_heartbeat, consumer_group_describe, describe_acls, create_acls,
           delete_acls, describe_cluster, add_partitions_to_txn, add_offsets_to_txn, end_txn,
           txn_offset_commit, describe_producers, describe_transactions,
           list_transactions, write_txn_markers, list_config_resources,
           describe_topic_partitions, streams_group_heartbeat, streams_group_describe,
           streams_group_topology_description_update)


def build_registry() -> Registry:
    registry = Registry()
    for module in MODULES:
        registry.add(module.SPEC)
    return registry
