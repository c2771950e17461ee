"""`roster topics ...`: create, list, describe, alter, delete, over the wire protocol."""
from __future__ import annotations

import datetime

from roster.admin.client import AdminClient, AdminError
from roster.protocol.api_keys import ApiKey

METADATA, CREATE_TOPICS, DELETE_TOPICS, LIST_OFFSETS, CREATE_PARTITIONS = (
    ApiKey.METADATA, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.LIST_OFFSETS,
    ApiKey.CREATE_PARTITIONS)
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = ApiKey.DESCRIBE_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS
TOPIC_RESOURCE, SET, DELETE = 2, 0, 1
DYNAMIC_TOPIC_CONFIG = 1
TIMEOUT = datetime.timedelta(seconds=30)


def _check(error_code, message, what: str) -> None:
    if error_code.value != 0:
        raise AdminError(f"{what}: {error_code.name.upper()}" + (f" ({message})" if message else ""))


def create(client: AdminClient, name: str, partitions: int, configs: dict[str, str]) -> None:
    topic = client.entry(CREATE_TOPICS, "topics")
    config = client.entry(CREATE_TOPICS, "topics", "configs")
    answer = client.call(CREATE_TOPICS, topics=(topic(
        name=name, num_partitions=partitions, replication_factor=-1, assignments=(),
        configs=tuple(config(name=k, value=v) for k, v in configs.items())),),
        timeout=TIMEOUT, validate_only=False)
    result = answer.topics[0]
    _check(result.error_code, result.error_message, f"cannot create {name}")


def add_partitions(client: AdminClient, name: str, total: int) -> None:
    """Grow `name` to `total` partitions."""
    entry = client.entry(CREATE_PARTITIONS, "topics")
    answer = client.call(CREATE_PARTITIONS, topics=(entry(name=name, count=total, assignments=None),),
                         timeout=TIMEOUT, validate_only=False)
    result = answer.results[0]
    _check(result.error_code, result.error_message, f"cannot add partitions to {name}")


def alter(client: AdminClient, name: str, sets: dict[str, str], deletes: list[str]) -> None:
    """Set and delete (back to the broker's value) single settings of a topic."""
    resource = client.entry(INCREMENTAL_ALTER_CONFIGS, "resources")
    config = client.entry(INCREMENTAL_ALTER_CONFIGS, "resources", "configs")
    steps = [config(name=k, config_operation=SET, value=v) for k, v in sets.items()]
    steps += [config(name=k, config_operation=DELETE, value=None) for k in deletes]
    answer = client.call(INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=(resource(
        resource_type=TOPIC_RESOURCE, resource_name=name, configs=tuple(steps)),))
    result = answer.responses[0]
    _check(result.error_code, result.error_message, f"cannot alter {name}")


def own_configs(client: AdminClient, name: str) -> dict[str, str]:
    """The settings set on the topic itself (the rest come from the broker)."""
    resource = client.entry(DESCRIBE_CONFIGS, "resources")
    answer = client.call(DESCRIBE_CONFIGS, include_synonyms=False, include_documentation=False,
                         resources=(resource(resource_type=TOPIC_RESOURCE, resource_name=name,
                                             configuration_keys=None),))
    result = answer.results[0]
    _check(result.error_code, result.error_message, f"cannot describe {name}'s configs")
    return {c.name: c.value for c in result.configs if c.config_source == DYNAMIC_TOPIC_CONFIG}


def delete(client: AdminClient, names: list[str]) -> None:
    if client.version(DELETE_TOPICS) >= 6:
        state = client.entry(DELETE_TOPICS, "topics")
        answer = client.call(DELETE_TOPICS, topics=tuple(state(name=n, topic_id=None) for n in names),
                             timeout=TIMEOUT)
    else:
        answer = client.call(DELETE_TOPICS, topic_names=tuple(names), timeout=TIMEOUT)
    for result in answer.responses:
        _check(result.error_code, getattr(result, "error_message", None),
               f"cannot delete {result.name}")


def metadata(client: AdminClient, names: list[str] | None):
    wanted = client.entry(METADATA, "topics")
    topics = None if not names else tuple(wanted(name=n, topic_id=None) for n in names)
    return client.call(METADATA, topics=topics, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False)


def end_offsets(client: AdminClient, topic) -> dict[int, tuple[int, int]]:
    """partition -> (log start offset, log end offset)."""
    entry = client.entry(LIST_OFFSETS, "topics")
    partition = client.entry(LIST_OFFSETS, "topics", "partitions")
    result = {}
    for timestamp, slot in ((-2, 0), (-1, 1)):
        answer = client.call(LIST_OFFSETS, replica_id=-1, isolation_level=0, timeout=TIMEOUT,
                             topics=(entry(name=topic.name, partitions=tuple(
                                 partition(partition_index=p.partition_index, timestamp=timestamp,
                                           current_leader_epoch=-1)
                                 for p in topic.partitions)),))
        for p in answer.topics[0].partitions:
            result.setdefault(p.partition_index, [-1, -1])[slot] = p.offset
    return {k: tuple(v) for k, v in result.items()}


def list_names(client: AdminClient, include_internal: bool) -> list[str]:
    return sorted(t.name for t in metadata(client, None).topics
                  if include_internal or not t.is_internal)


def describe(client: AdminClient, names: list[str]) -> list[str]:
    lines = []
    for topic in sorted(metadata(client, names or None).topics, key=lambda t: t.name):
        _check(topic.error_code, None, f"cannot describe {topic.name}")
        offsets = end_offsets(client, topic)
        configs = ",".join(f"{k}={v}" for k, v in sorted(own_configs(client, topic.name).items()))
        lines.append(f"Topic: {topic.name}\tTopicId: {topic.topic_id}\t"
                     f"PartitionCount: {len(topic.partitions)}\tInternal: {topic.is_internal}\t"
                     f"Configs: {configs}")
        for p in sorted(topic.partitions, key=lambda p: p.partition_index):
            start, end = offsets.get(p.partition_index, (-1, -1))
            lines.append(f"\tPartition: {p.partition_index}\tLeader: {p.leader_id}\t"
                         f"Replicas: {','.join(map(str, p.replica_nodes))}\t"
                         f"StartOffset: {start}\tEndOffset: {end}")
    return lines
