"""How `roster groups describe` asks for and draws a share group (KIP-932): the share type's
DescribeView (admin/describe_views.py's protocol), handed over by its registration
(broker/groups/share_group.py).

A share group's members share partitions: each partition is assigned to one member or, with
more members than partitions, to several. The view asks ShareGroupDescribe and draws the
members with their assigned partitions, then every partition with the members it is assigned
to, its share-partition start offset and its lag (DescribeShareGroupOffsets v1, when the broker
serves it). Over the wire only, so it works against Kafka 4.4 as against roster. In-flight
records by state are not on Kafka's wire: `--http URL` (a roster broker's console) adds them,
read from its /metrics (admin/share_in_flight.py), as `in_flight`.
"""
from __future__ import annotations

from dataclasses import dataclass

from roster.admin.describe_views import DescribedGroup, Member, describe_one
from roster.admin.table import MISSING, columns
from roster.protocol.api_keys import ApiKey

# the in-flight columns `--http URL` adds (admin/share_in_flight.py's states)
IN_FLIGHT_STATES = ("available", "acquired", "acknowledged", "archived")


@dataclass(frozen=True)
class ShareDescription(DescribedGroup):
    """ShareGroupDescribe's group with its share partitions' offsets."""
    group: object                      # ShareGroupDescribe's DescribedGroup
    offsets: dict                      # (topic, partition) -> (start offset, lag or None)
    # (topic, partition) -> {state: records} from roster's /metrics; None: not asked
    in_flight: dict | None = None


def share_offsets(client, group_id: str) -> dict:
    """(topic, partition) -> (start offset, lag) of the group's share partitions, as
    DescribeShareGroupOffsets answers them ({} from a broker without it; -1: not initialised,
    lag None before v1)."""
    from roster.admin.client import AdminError
    try:
        client.version(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
    except AdminError:
        return {}
    from roster.protocol.build import element, make
    entry = element(client.schema(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS), "groups")
    answer = client.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
                         groups=(make(entry, group_id=group_id, topics=None),))
    return {(t.topic_name, p.partition_index): (p.start_offset, getattr(p, "lag", None))
            for g in answer.groups if not g.error_code.value
            for t in g.topics for p in t.partitions if not p.error_code.value}


def _partitions(member) -> list[tuple[str, int]]:
    return sorted((t.topic_name, p) for t in member.assignment.topic_partitions
                  for p in t.partitions)


def _joined(pairs) -> str:
    return ",".join(f"{topic}-{p}" for topic, p in pairs) or MISSING


class ShareView:
    """ShareGroupDescribe (77): share groups (KIP-932)."""
    name = "share"

    def ask(self, client, group_id: str):
        group = describe_one(client, ApiKey.SHARE_GROUP_DESCRIBE, group_id)
        if group is None or group.error_code.value:
            return group, False
        return ShareDescription(group, share_offsets(client, group_id)), True

    def not_found(self, group_id: str, answer):
        from roster.admin.groups import GroupNotFound
        raise GroupNotFound(f"share group '{group_id}' does not exist")

    def recognises(self, answer) -> bool:
        return isinstance(answer, ShareDescription)

    def lines(self, described, record=None) -> list[str]:
        group = described.group
        lines = [f"Group: {group.group_id}\tState: {group.group_state}\t"
                 f"Type: share (KIP-932)\tMembers: {len(group.members)}",
                 f"GroupEpoch: {group.group_epoch}\tAssignmentEpoch: "
                 f"{group.assignment_epoch}\tAssignor: {group.assignor_name}"]
        members = sorted(group.members, key=lambda m: m.member_id)
        rows = [("MEMBER-ID", "EPOCH", "CLIENT-ID", "HOST", "RACK", "SUBSCRIBED", "PARTITIONS")]
        for m in members:
            rows.append((m.member_id, str(m.member_epoch), m.client_id, m.client_host,
                         m.rack_id or MISSING, ",".join(sorted(m.subscribed_topic_names))
                         or MISSING, _joined(_partitions(m))))
        lines += [""] + columns(rows)
        holders: dict[tuple[str, int], list[str]] = {}
        for m in members:
            for tp in _partitions(m):
                holders.setdefault(tp, []).append(m.member_id)
        in_flight = described.in_flight
        if holders or described.offsets or in_flight:
            states = () if in_flight is None else IN_FLIGHT_STATES
            rows = [("TOPIC", "PARTITION", "START-OFFSET", "LAG",
                     *(s.upper() for s in states), "MEMBERS")]
            for topic, p in sorted({*holders, *described.offsets, *(in_flight or ())}):
                start, lag = described.offsets.get((topic, p), (None, None))
                counts = (in_flight or {}).get((topic, p))
                rows.append((topic, str(p), MISSING if start is None or start < 0 else str(start),
                             MISSING if lag is None or lag < 0 else str(lag),
                             *(MISSING if counts is None else str(counts[s]) for s in states),
                             ",".join(holders.get((topic, p), ())) or MISSING))
            lines += [""] + columns(rows)
        else:
            lines += ["", f"Group {group.group_id} has no assigned partitions."]
        return lines

    def members(self, described) -> list[Member]:
        return [Member(m.member_id, None, m.client_id, m.client_host,
                       tuple(_partitions(m))) for m in described.group.members]

    def strategy(self, described) -> str:
        return described.group.assignor_name


SHARE_VIEW = ShareView()
