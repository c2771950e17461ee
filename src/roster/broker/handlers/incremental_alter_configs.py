"""IncrementalAlterConfigs (44), v0-1: SET or DELETE single settings of a topic (APPEND and
SUBTRACT for list settings), what `kafka-configs --alter --add-config/--delete-config` and the
admin clients' incremental_alter_configs send. The change is fsynced in the topic catalog
before the answer and applies to the topic's partitions from their next append, roll or
retention pass; broker settings are refused as in AlterConfigs. GROUP resources (32) set a
consumer group's own session timeout and heartbeat interval (broker/groups/group_configs.py)."""
from __future__ import annotations

from roster.broker.handlers.alter_configs import RESOURCES, alter_each
from roster.broker.partitions.topics import changed_configs
from roster.protocol.api_keys import ApiKey
from roster.protocol.registry import ApiSpec

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS


async def handle(broker, request, connection):
    return alter_each(broker, API_KEY, request, lambda topic, resource: changed_configs(
        topic.configs, ((c.name, c.config_operation, c.value) for c in resource.configs)),
        group_changes=lambda resource: [(c.name, int(c.config_operation), c.value)
                                        for c in resource.configs])


SPEC = ApiSpec(API_KEY, "IncrementalAlterConfigs", 0, 1, handle, resources=RESOURCES)
