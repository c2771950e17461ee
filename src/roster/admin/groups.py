"""`roster groups ...`: list, describe, delete, remove static members by instance id (the
command-line tool KIP-345 proposes), and pre-register them (`expect`, group configs). Everything
goes over the wire protocol."""
from __future__ import annotations

import datetime

from roster.admin.describe_views import format_assignment  # noqa: F401 (re-exported)
from roster.admin.client import AdminClient, AdminError, Loading, retry_while_loading
from roster.admin.not_roster import (
    EXPECTED_MEMBERS,
    NotRoster,
    is_roster,
    knows_expected_members,
)
from roster.protocol.partitioning import partition_for
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.group_records import GroupKey, RecordFormatError, decode

LIST_GROUPS, DESCRIBE_GROUPS, DELETE_GROUPS, LEAVE_GROUP, METADATA, FETCH = (
    ApiKey.LIST_GROUPS, ApiKey.DESCRIBE_GROUPS, ApiKey.DELETE_GROUPS, ApiKey.LEAVE_GROUP,
    ApiKey.METADATA, ApiKey.FETCH)
CONSUMER_GROUP_DESCRIBE = ApiKey.CONSUMER_GROUP_DESCRIBE
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = (ApiKey.DESCRIBE_CONFIGS,
                                               ApiKey.INCREMENTAL_ALTER_CONFIGS)
GROUP_RESOURCE, SET, DELETE, GROUP_CONFIG = 32, 0, 1, 8
EXPECTED_IDS, EXPECTED_SIZE, REFUSE_UNEXPECTED = (
    "group.expected.instance.ids", "group.expected.size", "group.expected.refuse.unexpected")
OFFSETS_TOPIC = "__consumer_offsets"


class GroupNotFound(AdminError):
    """The coordinator knows no such group (GROUP_ID_NOT_FOUND)."""


def list_groups(client: AdminClient) -> list[tuple[str, str, str]]:
    """(group id, protocol type, state) for every group."""
    return retry_while_loading(lambda: _list_once(client))


def _list_once(client: AdminClient) -> list[tuple[str, str, str]]:
    answer = client.call(LIST_GROUPS, states_filter=(), types_filter=())
    if answer.error_code.name == "coordinator_load_in_progress":
        raise Loading("ListGroups")
    if answer.error_code.value:
        raise AdminError(f"ListGroups failed: {answer.error_code.name.upper()}")
    return sorted((g.group_id, g.protocol_type, getattr(g, "group_state", "?"))
                  for g in answer.groups)


def describe(client: AdminClient, group_id: str, types=None):
    """The group as its type's describe view asked for it (admin/describe_views.py): each
    registered type (roster/group_types.py; `types` to name others) is asked in turn, the
    classic one first. Raises GroupNotFound when none holds it."""
    return retry_while_loading(lambda: _describe_once(client, group_id, types))


def _views(types=None) -> list:
    from roster.group_types import GROUP_TYPES
    return [t.describe_view for t in (GROUP_TYPES if types is None else types)
            if t.describe_view is not None]


def _describe_once(client: AdminClient, group_id: str, types=None):
    first = None
    for view in reversed(_views(types)):   # the last registered (the classic) first
        answer, found = view.ask(client, group_id)
        if found:
            return answer
        if first is None and answer is not None:
            first = (view, answer)
    if first is None:
        raise GroupNotFound(f"consumer group '{group_id}' does not exist")
    return first[0].not_found(group_id, first[1])


def view_of(group, types=None):
    """The describe view that asked for this answer (the first registered that recognises
    it)."""
    return next(view for view in _views(types) if view.recognises(group))


def last_written(client: AdminClient, group_id: str):
    """The group's newest metadata record in __consumer_offsets (generation, leader, protocol
    as of the last write), or None. DescribeGroups carries neither generation nor leader; the
    record does, and reading it over Fetch works against Kafka too."""
    from roster.record_codec import MemoryRecords
    wanted = client.entry(METADATA, "topics")
    meta = client.call(METADATA, topics=(make(wanted, name=OFFSETS_TOPIC, topic_id=None),),
                       allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    topic = meta.topics[0]
    if topic.error_code.value or not topic.partitions:
        return None
    partition = partition_for(group_id, len(topic.partitions))
    schema = client.schema(FETCH)
    entry = element(schema, "topics")
    part = element(entry, "partitions")
    latest, offset = None, 0
    while True:
        answer = client.call(FETCH, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0,
                             max_bytes=8 << 20, isolation_level=0, session_id=0,
                             session_epoch=-1, rack_id="", forgotten_topics_data=(),
                             topics=(make(entry, topic=OFFSETS_TOPIC, topic_id=topic.topic_id,
                                          partitions=(make(part, partition=partition,
                                                           fetch_offset=offset,
                                                           partition_max_bytes=8 << 20),)),))
        data = answer.responses[0].partitions[0]
        if data.error_code.value or not data.records:
            return latest
        batches = MemoryRecords(data.records)
        while (batch := batches.next_batch()) is not None:
            for record in batch:
                offset = record.offset + 1
                try:
                    decoded = decode(record.key, record.value)
                except (RecordFormatError, UnicodeDecodeError):
                    continue
                if decoded.key == GroupKey(group_id):
                    latest = decoded.value
        if offset >= data.high_watermark:
            return latest


def describe_lines(group, record=None, types=None) -> list[str]:
    """`record`: the group's last written metadata record (for generation and leader)."""
    return view_of(group, types).lines(group, record)


def delete(client: AdminClient, group_ids: list[str]) -> None:
    answer = client.call(DELETE_GROUPS, groups_names=tuple(group_ids))
    failures = [f"{r.group_id}: {r.error_code.name.upper()}" for r in answer.results
                if r.error_code.value]
    if failures:
        raise AdminError("cannot delete " + "; ".join(failures))


def expectations(client: AdminClient, group_id: str) -> dict[str, str]:
    """The group's pre-registered static members, as set on it (group configs)."""
    resource = client.entry(DESCRIBE_CONFIGS, "resources")
    answer = client.call(DESCRIBE_CONFIGS, include_synonyms=False, include_documentation=False,
                         resources=(resource(resource_type=GROUP_RESOURCE,
                                             resource_name=group_id, configuration_keys=None),))
    result = answer.results[0]
    if result.error_code.value:
        raise AdminError(f"cannot describe {group_id}'s configs: "
                         f"{result.error_message or result.error_code.name.upper()}")
    if result.configs and not knows_expected_members(result.configs):
        raise NotRoster(EXPECTED_MEMBERS)   # Kafka's group configs
    return {c.name: c.value for c in result.configs
            if c.name.startswith("group.expected.") and c.config_source == GROUP_CONFIG}


def expect(client: AdminClient, group_id: str, sets: dict[str, str],
           deletes: list[str]) -> None:
    """Set (and delete) a group's expectations: IncrementalAlterConfigs on the GROUP resource,
    what `kafka-configs --entity-type groups --alter` sends."""
    resource = client.entry(INCREMENTAL_ALTER_CONFIGS, "resources")
    config = client.entry(INCREMENTAL_ALTER_CONFIGS, "resources", "configs")
    steps = [config(name=k, config_operation=SET, value=v) for k, v in sets.items()]
    steps += [config(name=k, config_operation=DELETE, value=None) for k in deletes]
    answer = client.call(INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=(resource(
        resource_type=GROUP_RESOURCE, resource_name=group_id, configs=tuple(steps)),))
    result = answer.responses[0]
    if result.error_code.value:
        if not is_roster(client):
            raise NotRoster(EXPECTED_MEMBERS)
        raise AdminError(f"cannot set {group_id}'s expected members: "
                         f"{result.error_message or result.error_code.name.upper()}")


def _forget_expected(client: AdminClient, group_id: str, instance_ids: list[str]) -> set[str]:
    """remove-members is an explicit scale-down: the removed ids leave the group's expected
    list (or its expected size shrinks). Returns the ids that were expected."""
    try:
        own = expectations(client, group_id)
    except NotRoster:   # Kafka: no expected members to forget
        return set()
    listed = [i for i in (own.get(EXPECTED_IDS) or "").split(",") if i]
    if listed:
        kept = [i for i in listed if i not in instance_ids]
        if kept != listed:
            if kept:
                expect(client, group_id, {EXPECTED_IDS: ",".join(kept)}, [])
            else:
                expect(client, group_id, {}, [EXPECTED_IDS])
        return set(listed) & set(instance_ids)
    if own.get(EXPECTED_SIZE):
        size = int(own[EXPECTED_SIZE]) - len(instance_ids)
        if size >= 1:
            expect(client, group_id, {EXPECTED_SIZE: str(size)}, [])
        else:
            expect(client, group_id, {}, [EXPECTED_SIZE])
    return set()


def remove_members(client: AdminClient, group_id: str, instance_ids: list[str]) -> None:
    """LeaveGroup v3+ with member id "" and the instance ids: the admin path of KIP-345. A
    group with pre-registered members stops expecting them first (an expected member that
    never joined is then simply no longer expected)."""
    expected = _forget_expected(client, group_id, instance_ids)
    if client.version(LEAVE_GROUP) < 3:
        raise AdminError("the broker does not support removing members by instance id "
                         "(LeaveGroup v3+)")
    member = client.entry(LEAVE_GROUP, "members")
    answer = client.call(LEAVE_GROUP, group_id=group_id, members=tuple(
        member(member_id="", group_instance_id=i, reason="removed by roster groups "
               "remove-members") for i in instance_ids))
    failures = [f"{m.group_instance_id}: {m.error_code.name.upper()}" for m in answer.members
                if m.error_code.value and not (m.group_instance_id in expected
                                               and m.error_code.name == "unknown_member_id")]
    never_joined = set(instance_ids) <= expected and answer.error_code.name in (
        "unknown_member_id", "group_id_not_found")
    if answer.error_code.value and not never_joined:
        failures.insert(0, answer.error_code.name.upper())
    if failures:
        raise AdminError(f"cannot remove members of {group_id}: " + "; ".join(failures))
