"""How `roster groups describe` asks for and draws a share group (KIP-932): the share type's
DescribeView (admin/describe_views.py's protocol), handed over by its registration
(broker/groups/share_group.py).

A share group's members share partitions: each partition is assigned to one member or, with
more members than partitions, to several. The view asks ShareGroupDescribe and draws the
members with their assigned partitions, then every partition with the members it is assigned
to. Over the wire only, so it works against Kafka 4.4 as against roster.
"""
from __future__ import annotations

from roster.admin.describe_views import Member, describe_one
from roster.admin.table import MISSING, columns
from roster.protocol.api_keys import ApiKey


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
        return group, group is not None and not group.error_code.value

    def not_found(self, group_id: str, answer):
        from roster.admin.groups import GroupNotFound
        raise GroupNotFound(f"share group '{group_id}' does not exist")

    def recognises(self, answer) -> bool:
        return "share_group_describe" in type(answer).__module__   # ShareGroupDescribe's

    def lines(self, group, record=None) -> list[str]:
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
        if holders:
            rows = [("TOPIC", "PARTITION", "MEMBERS")]
            rows += [(topic, str(p), ",".join(who)) for (topic, p), who in sorted(holders.items())]
            lines += [""] + columns(rows)
        else:
            lines += ["", f"Group {group.group_id} has no assigned partitions."]
        return lines

    def members(self, group) -> list[Member]:
        return [Member(m.member_id, None, m.client_id, m.client_host,
                       tuple(_partitions(m))) for m in group.members]

    def strategy(self, group) -> str:
        return group.assignor_name


SHARE_VIEW = ShareView()
