"""DescribeConfigs (32), v1-4: a topic's settings, or this broker's, and where each value
comes from (what admin clients' describe_configs and tools such as kafka-configs show).

A topic lists every topic config Kafka defines (docs/configuration.md): those set on the topic
are DYNAMIC_TOPIC_CONFIG, the rest come from the broker setting they default to (the operator's:
STATIC_BROKER_CONFIG, else its default: DEFAULT_CONFIG), with Kafka's synonyms. Broker
settings do not change while roster runs (alter_configs.py refuses them), so they are read-only:
each is STATIC_BROKER_CONFIG when the file, the environment or --set gave it, DEFAULT_CONFIG
otherwise, but for min.insync.replicas, which a KRaft cluster also holds as a cluster-wide
default (DYNAMIC_DEFAULT_BROKER_CONFIG, topic_config.CLUSTER_DEFAULTS): the cluster's default
resource ("") lists it alone.
"""
from __future__ import annotations

from roster.broker.partitions.topics import effective_configs
from roster.config import SETTINGS
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, ConfigResources
from roster.topic_config import (
    CLUSTER_DEFAULTS,
    CONFIG_TYPES,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    cluster_default_synonyms,
    text_of,
)
from roster.topic_config_table import BY_NAME, TOPIC_CONFIGS

API_KEY = ApiKey.DESCRIBE_CONFIGS
TOPIC, BROKER, GROUP = 2, 4, 32                                  # ConfigResource.Type
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5  # ConfigSource
GROUP_CONFIG = 8
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7     # ConfigType (v3+)
# the broker settings behind topic configs have the topic config's type (hours and minutes: INT)
BROKER_TYPES = {broker_name: CONFIG_TYPES[spec.type] if factor == 1 else INT
                for spec in TOPIC_CONFIGS for broker_name, factor in spec.synonyms}

def _broker_type(name: str, value) -> int:
    if name in BROKER_TYPES:
        return BROKER_TYPES[name]
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, float):
        return DOUBLE
    if isinstance(value, str):
        return LIST if name.endswith("listeners") else STRING
    return LONG if name.endswith((".ms", ".bytes", ".messages")) else INT


def _topic_entries(broker, name: str):
    """(name, value, source, read_only, synonyms, type, doc) per topic config Kafka defines,
    resolved as Kafka resolves them (roster.topic_config.resolve), or an error."""
    topic = broker.topics.get(name)
    if topic is None:
        return ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist", ()
    entries = [(item.name, item.value, item.source, False, item.synonyms, item.type,
                BY_NAME[item.name].note)
               for item in effective_configs(broker.topics, topic)]
    return ErrorCode.none, None, entries


def _broker_entries(broker, name: str):
    if name not in ("", str(broker.config["node.id"])):
        return ErrorCode.invalid_request, (f"unexpected broker id {name!r}: this is broker "
                                           f"{broker.config['node.id']}"), ()
    entries = []
    for key in CLUSTER_DEFAULTS if name == "" else sorted(SETTINGS):
        value = broker.config[key]
        text = text_of(value)
        if key in CLUSTER_DEFAULTS:   # KRaft's cluster-wide record (topic_config.py)
            source = DYNAMIC_DEFAULT_BROKER_CONFIG
            synonyms = ((key, text, source),) if name == "" else cluster_default_synonyms(
                key, broker.config, broker.config.explicit, {key: SETTINGS[key].default})
        else:
            source = STATIC_BROKER_CONFIG if key in broker.config.explicit else DEFAULT_CONFIG
            synonyms = ((key, text, source),)
        entries.append((key, text, source, True, synonyms, _broker_type(key, value),
                        SETTINGS[key].doc or None))
    return ErrorCode.none, None, entries


def _group_entries(broker, name: str):
    """A group's configs (group_configs.py, each group type's table): set on the group
    (GROUP_CONFIG), else the broker setting they default to. Any group id may be described or
    configured, existing or not."""
    if not name:
        return ErrorCode.invalid_request, "a group config resource needs a group id", ()
    entries = []
    for key, value, own, origin, kind in broker.group_configs.effective(name):
        text = text_of(value)
        # Kafka's synonyms, most specific first: the group's own value, then the broker
        # setting it defaults to as the operator set it, then that setting's default
        synonyms = [(key, text, GROUP_CONFIG)] if own else []
        if origin is None:   # a config of roster's own, with no broker setting behind it
            synonyms = synonyms or [(key, text, DEFAULT_CONFIG)]
        else:
            if origin in broker.config.explicit:
                synonyms.append((origin, text_of(broker.config[origin]), STATIC_BROKER_CONFIG))
            synonyms.append((origin, text_of(SETTINGS[origin].default), DEFAULT_CONFIG))
        entries.append((key, text, synonyms[0][2], False, tuple(synonyms),
                        {"list": LIST, "boolean": BOOLEAN, "long": LONG,
                         "string": STRING}.get(kind, INT), None))
    return ErrorCode.none, "", entries    # Kafka's message for a group: "" (a topic's: null)


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    result_entry = element(schema, "results")
    config_entry = element(result_entry, "configs")
    synonym_entry = element(config_entry, "synonyms")
    with_synonyms = bool(getattr(body, "include_synonyms", False))
    with_docs = bool(getattr(body, "include_documentation", False))
    results = []
    for index, resource in enumerate(body.resources):
        refused = request.admission.resource(index)
        if refused is not ErrorCode.none:
            error, message, entries = refused, None, ()
        elif resource.resource_type == TOPIC:
            error, message, entries = _topic_entries(broker, resource.resource_name)
        elif resource.resource_type == BROKER:
            error, message, entries = _broker_entries(broker, resource.resource_name)
        elif resource.resource_type == GROUP:
            error, message, entries = _group_entries(broker, resource.resource_name)
        else:
            error, message, entries = ErrorCode.invalid_request, (
                f"roster describes topics (2) and brokers (4), not resource type "
                f"{resource.resource_type}"), ()
        wanted = resource.configuration_keys   # none or empty: every one, as Kafka lists
        configs = []
        for key, value, source, read_only, synonyms, kind, doc in entries:
            if wanted and key not in wanted:
                continue
            configs.append(make(  # (make drops config_type and documentation below v3)
                config_entry, name=key, value=value, read_only=read_only,
                config_source=source, is_sensitive=False,
                synonyms=tuple(make(synonym_entry, name=n, value=v, source=s)
                               for n, v, s in synonyms) if with_synonyms else (),
                config_type=kind, documentation=doc if with_docs else None))
        results.append(make(result_entry, error_code=error, error_message=message,
                            resource_type=resource.resource_type,
                            resource_name=resource.resource_name, configs=tuple(configs)))
    return make(schema, results=tuple(results))


SPEC = ApiSpec(API_KEY, "DescribeConfigs", 1, 4, handle,
               resources=(ConfigResources(AclOperation.DESCRIBE_CONFIGS),))
