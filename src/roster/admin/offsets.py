"""`roster offsets ...`: a group's committed offsets and lag, and deleting them (resetting them
is admin/reset.py)."""
from __future__ import annotations

import datetime

from roster.admin.client import AdminClient, AdminError, Loading, retry_while_loading
from roster.admin.topics import metadata
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make

OFFSET_COMMIT, OFFSET_FETCH, LIST_OFFSETS, OFFSET_DELETE = (
    ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.LIST_OFFSETS, ApiKey.OFFSET_DELETE)
EARLIEST, LATEST = -2, -1


def committed(client: AdminClient, group_id: str) -> dict[tuple[str, int], int]:
    """Every committed offset of the group (OffsetFetch with all topics)."""
    return retry_while_loading(lambda: _committed_once(client, group_id))


def _committed_once(client: AdminClient, group_id: str) -> dict[tuple[str, int], int]:
    if client.version(OFFSET_FETCH) >= 8:
        group = client.entry(OFFSET_FETCH, "groups")
        answer = client.call(OFFSET_FETCH, groups=(make(group, group_id=group_id, topics=None),),
                             require_stable=False)
        entry = answer.groups[0]
        error, topics = entry.error_code, entry.topics
    else:
        answer = client.call(OFFSET_FETCH, group_id=group_id, topics=None, require_stable=False)
        error, topics = answer.error_code, answer.topics
    if error.name == "coordinator_load_in_progress":
        raise Loading(group_id)
    if error.value:
        raise AdminError(f"cannot fetch offsets of {group_id}: {error.name.upper()}")
    return {(t.name, p.partition_index): p.committed_offset for t in topics for p in t.partitions
            if p.committed_offset >= 0}


def log_offsets(client: AdminClient, wanted: dict[str, list[int]], which: int):
    """(topic, partition) -> the earliest or latest offset."""
    entry = client.entry(LIST_OFFSETS, "topics")
    partition = client.entry(LIST_OFFSETS, "topics", "partitions")
    answer = client.call(LIST_OFFSETS, replica_id=-1, isolation_level=0,
                         timeout=datetime.timedelta(seconds=30), topics=tuple(
                             entry(name=topic, partitions=tuple(
                                 partition(partition_index=p, timestamp=which,
                                           current_leader_epoch=-1) for p in parts))
                             for topic, parts in sorted(wanted.items())))
    return {(t.name, p.partition_index): p.offset for t in answer.topics for p in t.partitions}


def describe_lines(client: AdminClient, group_id: str) -> list[str]:
    offsets = committed(client, group_id)
    if not offsets:
        return [f"Group {group_id} has no committed offsets."]
    by_topic: dict[str, list[int]] = {}
    for topic, partition in offsets:
        by_topic.setdefault(topic, []).append(partition)
    ends = log_offsets(client, by_topic, LATEST)
    rows = [("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG")]
    for (topic, partition), offset in sorted(offsets.items()):
        end = ends.get((topic, partition), -1)
        lag = str(max(end - offset, 0)) if end >= 0 else "-"
        rows.append((topic, str(partition), str(offset), str(end), lag))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return [f"Group: {group_id}"] + ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                                     for r in rows]


def delete(client: AdminClient, group_id: str, topic: str,
           partitions: list[int] | None = None) -> dict[int, str]:
    """OffsetDelete for `partitions` of `topic` (all of them when None): {partition: outcome},
    "ok" or the broker's error (GROUP_SUBSCRIBED_TO_TOPIC while members consume the topic)."""
    if partitions is None:
        found = metadata(client, [topic]).topics[0]
        if found.error_code.value:
            raise AdminError(f"cannot delete offsets of {topic}: {found.error_code.name.upper()}")
        partitions = sorted(p.partition_index for p in found.partitions)
    topic_entry = client.entry(OFFSET_DELETE, "topics")
    partition_entry = client.entry(OFFSET_DELETE, "topics", "partitions")
    answer = retry_while_loading(lambda: _deleted_once(client, group_id, make(
        topic_entry, name=topic, partitions=tuple(
            make(partition_entry, partition_index=p) for p in partitions))))
    return {p.partition_index: p.error_code.name.upper() if p.error_code.value else "ok"
            for t in answer.topics for p in t.partitions}


def _deleted_once(client: AdminClient, group_id: str, topic):
    answer = client.call(OFFSET_DELETE, group_id=group_id, topics=(topic,))
    if answer.error_code.name == "coordinator_load_in_progress":
        raise Loading(group_id)
    if answer.error_code.value:
        raise AdminError(f"cannot delete offsets of {group_id}: "
                         f"{answer.error_code.name.upper()}")
    return answer
