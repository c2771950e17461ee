"""AlterConfigs (33), v0-2: replace a topic's own settings with the set given (what the set
leaves out comes from the broker again). Broker settings are static in roster: changing one
means restarting with the new value, so a BROKER resource is refused. IncrementalAlterConfigs
(incremental_alter_configs.py) changes single settings instead."""
from __future__ import annotations

from roster.broker.groups.group_configs import GroupConfigError
from roster.broker.handlers.describe_configs import BROKER, GROUP, TOPIC
from roster.broker.partitions.topics import TopicError
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, ConfigResources

API_KEY = ApiKey.ALTER_CONFIGS
RESOURCES = (ConfigResources(AclOperation.ALTER_CONFIGS),)


def alter_each(broker, api_key: int, request, new_configs, group_changes=None) -> object:
    """Apply new_configs(topic, resource) -> the topic's complete new settings to every TOPIC
    resource of an (Incremental)AlterConfigs request and build its response. GROUP resources
    (IncrementalAlterConfigs only) take group_changes(resource) -> (name, operation, value)s."""
    schema = response_schema(api_key, request.api_version)
    entry = element(schema, "responses")
    answers = []
    for index, resource in enumerate(request.body.resources):
        error, message = request.admission.resource(index), None
        if error is not ErrorCode.none:  # refused by admission
            answers.append(make(entry, error_code=error, error_message=None,
                                resource_type=resource.resource_type,
                                resource_name=resource.resource_name))
            continue
        try:
            if resource.resource_type == BROKER:
                raise TopicError("invalid_request", "broker settings are static in roster: "
                                                    "restart it with the new values")
            if resource.resource_type == GROUP and group_changes is not None:
                try:
                    broker.group_configs.alter(resource.resource_name, group_changes(resource),
                                               validate_only=request.body.validate_only)
                except GroupConfigError as exc:
                    raise TopicError(exc.code, str(exc)) from None
                answers.append(make(entry, error_code=ErrorCode.none, error_message=None,
                                    resource_type=resource.resource_type,
                                    resource_name=resource.resource_name))
                continue
            if resource.resource_type != TOPIC:
                raise TopicError("invalid_request", f"roster alters topics (2), not resource "
                                                    f"type {resource.resource_type}")
            topic = broker.topics.get(resource.resource_name)
            if topic is None:
                raise TopicError("unknown_topic_or_partition",
                                 f"topic {resource.resource_name!r} does not exist")
            broker.topics.alter_configs(topic.name, new_configs(topic, resource),
                                        validate_only=request.body.validate_only)
        except TopicError as exc:
            error, message = ErrorCode[exc.code], str(exc)
        answers.append(make(entry, error_code=error, error_message=message,
                            resource_type=resource.resource_type,
                            resource_name=resource.resource_name))
    return make(schema, responses=tuple(answers))


async def handle(broker, request, connection):
    return alter_each(broker, API_KEY, request,
                      lambda topic, resource: {c.name: c.value for c in resource.configs})


SPEC = ApiSpec(API_KEY, "AlterConfigs", 0, 2, handle, resources=RESOURCES)
