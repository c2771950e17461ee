"""Turn the membership machine's requests (newest field names, plain Python values) into kio
entities for whatever version the broker and roster agreed on, and answers back into plain
values."""
from __future__ import annotations

import datetime
import uuid

from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode

API_KEYS = {"FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12, "LeaveGroup": 13,
            "SyncGroup": 14, "OffsetCommit": 8, "OffsetFetch": 9, "Metadata": 3}


def _ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def build(api: str, version: int, fields: dict, topic_ids: dict[str, uuid.UUID]):
    schema = request_schema(API_KEYS[api], version)
    builder = _BUILDERS.get(api)
    return builder(schema, version, fields, topic_ids) if builder else make(schema, **fields)


def _find_coordinator(schema, version, fields, topic_ids):
    return make(schema, key=fields["key"], key_type=fields["key_type"],
                coordinator_keys=(fields["key"],))


def _join(schema, version, f, topic_ids):
    protocol = element(schema, "protocols")
    return make(schema, group_id=f["group_id"], session_timeout=_ms(f["session_timeout_ms"]),
                rebalance_timeout=_ms(f["rebalance_timeout_ms"]), member_id=f["member_id"],
                group_instance_id=f["group_instance_id"], protocol_type=f["protocol_type"],
                protocols=tuple(make(protocol, name=n, metadata=m) for n, m in f["protocols"]),
                reason=f["reason"])


def _sync(schema, version, f, topic_ids):
    entry = element(schema, "assignments")
    return make(schema, group_id=f["group_id"], generation_id=f["generation_id"],
                member_id=f["member_id"], group_instance_id=f["group_instance_id"],
                protocol_type=f["protocol_type"], protocol_name=f["protocol_name"],
                assignments=tuple(make(entry, member_id=m, assignment=a)
                                  for m, a in sorted(f["assignments"].items())))


def _leave(schema, version, f, topic_ids):
    if version < 3:
        return make(schema, group_id=f["group_id"], member_id=f["members"][0][0])
    entry = element(schema, "members")
    return make(schema, group_id=f["group_id"], members=tuple(
        make(entry, member_id=m, group_instance_id=i, reason=r) for m, i, r in f["members"]))


def _commit(schema, version, f, topic_ids):
    topic_entry = element(schema, "topics")
    partition_entry = element(topic_entry, "partitions")
    return make(schema, group_id=f["group_id"],
                generation_id_or_member_epoch=f["generation_id_or_member_epoch"],
                member_id=f["member_id"], group_instance_id=f["group_instance_id"],
                retention_time=_ms(-1), topics=tuple(
                    make(topic_entry, name=topic, topic_id=topic_ids.get(topic),
                         partitions=tuple(make(partition_entry, partition_index=p,
                                               committed_offset=o, committed_leader_epoch=-1,
                                               committed_metadata="") for p, o in parts))
                    for topic, parts in sorted(f["topics"].items())))


_BUILDERS = {"FindCoordinator": _find_coordinator, "JoinGroup": _join, "SyncGroup": _sync,
             "LeaveGroup": _leave, "OffsetCommit": _commit}


def commit_errors(answer, topic_names: dict[uuid.UUID, str]) -> dict[tuple[str, int], ErrorCode]:
    errors = {}
    for topic in answer.topics:
        name = getattr(topic, "name", None) or topic_names.get(getattr(topic, "topic_id", None))
        for partition in topic.partitions:
            errors[(name, partition.partition_index)] = partition.error_code
    return errors


def find_coordinator_answer(answer) -> tuple[ErrorCode, str, int]:
    """(error, host, port), whatever the version (v4+ answers per key)."""
    if hasattr(answer, "coordinators"):
        entry = answer.coordinators[0]
        return entry.error_code, entry.host, entry.port
    return answer.error_code, answer.host, answer.port
