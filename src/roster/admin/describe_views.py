"""How `roster groups describe` (and the views of admin/group_views.py) asks for a group of each
type and draws it: one DescribeView per group type, handed over by the type's registration
(GroupTypeRegistration.describe_view, roster/group_types.py), so admin/groups.py asks every
registered type alike and names none.

- the classic view asks DescribeGroups (it answers for classic and simple groups; any other
  group is "not found" or Dead there, as in Kafka);
- the consumer view asks ConsumerGroupDescribe (KIP-848), when the broker serves it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from roster.protocol.api_keys import ApiKey
from roster.protocol.consumer_protocol import ConsumerProtocolError, decode_assignment


@dataclass(frozen=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    partitions: tuple[tuple[str, int], ...]   # what it owns now, sorted


class DescribedGroup:
    """What the generic views (admin/group_views.py) read of a describe answer, for a view's
    description that wraps the type's DescribedGroup (`self.group`) with what else it asked."""

    __slots__ = ()

    @property
    def group_id(self) -> str:
        return self.group.group_id

    @property
    def group_state(self) -> str:
        return self.group.group_state

    @property
    def members(self) -> tuple:
        return self.group.members


class DescribeView(Protocol):
    name: str   # the group type it draws

    def ask(self, client, group_id: str) -> tuple[Any, bool]:
        """(the answer or None, whether it describes a group of this type). Raises
        admin.client.Loading while the coordinator loads, AdminError when refused."""

    def not_found(self, group_id: str, answer) -> Any:
        """No type found the group; this view answered first: what describe returns (or
        raises GroupNotFound)."""

    def recognises(self, answer) -> bool:
        """The answer is one this view asked for (views are asked in registration order)."""

    def lines(self, answer, record=None) -> list[str]:
        """`roster groups describe`'s text; `record`: the group's last written metadata record
        (admin/groups.last_written), or None."""

    def members(self, answer) -> list[Member]: ...

    def strategy(self, answer) -> str:
        """What the state view shows as ASSIGNMENT-STRATEGY ("" when none)."""


def _table(rows: list[tuple[str, ...]], last_free: bool = False) -> list[str]:
    count = len(rows[0]) - 1 if last_free else len(rows[0])
    widths = [max(len(row[i]) for row in rows) for i in range(count)]
    lines = []
    for row in rows:
        cells = "  ".join(cell.ljust(width) for cell, width in zip(row, widths))
        lines.append(cells + "  " + row[-1] if last_free else cells.rstrip())
    return lines


def format_assignment(protocol_type: str, assignment: bytes) -> str:
    if protocol_type != "consumer":
        return f"{len(assignment)} bytes"
    try:
        decoded = decode_assignment(assignment)
    except ConsumerProtocolError:
        return f"{len(assignment)} bytes (not a consumer assignment)"
    return ", ".join(f"{topic}:{','.join(map(str, sorted(parts)))}"
                     for topic, parts in sorted(decoded.partitions)) or "-"


def _embedded_partitions(protocol_type: str, assignment: bytes) -> list[tuple[str, int]]:
    if protocol_type != "consumer" or not assignment:
        return []
    try:
        decoded = decode_assignment(assignment)
    except ConsumerProtocolError:
        return []
    return [(topic, p) for topic, parts in decoded.partitions for p in parts]


class ClassicView:
    """DescribeGroups: classic and simple groups."""
    name = "classic"

    def ask(self, client, group_id: str):
        from roster.admin.client import AdminError, Loading
        answer = client.call(ApiKey.DESCRIBE_GROUPS, groups=(group_id,),
                             include_authorized_operations=False)
        group = answer.groups[0]
        code = group.error_code.name
        if code == "coordinator_load_in_progress":
            raise Loading(group_id)
        missing = code == "group_id_not_found" or group.group_state == "Dead"
        if group.error_code.value and not missing:
            raise AdminError(f"cannot describe {group_id}: {code.upper()}")
        return group, not missing

    def not_found(self, group_id: str, answer):
        from roster.admin.groups import GroupNotFound
        if answer.error_code.name == "group_id_not_found":
            raise GroupNotFound(f"consumer group '{group_id}' does not exist")
        return answer   # Dead: `lines` says it does not exist

    def recognises(self, answer) -> bool:
        return True   # registered last: whatever no other view took

    def lines(self, group, record=None) -> list[str]:
        if group.group_state == "Dead":
            return [f"Group {group.group_id} does not exist."]
        lines = [f"Group: {group.group_id}\tState: {group.group_state}\t"
                 f"ProtocolType: {group.protocol_type or '-'}\t"
                 f"Protocol: {group.protocol_data or '-'}\tMembers: {len(group.members)}"]
        if record is not None:
            lines.append(f"Generation: {record.generation}\tLeader: {record.leader or '-'}"
                         "\t(from the group's last saved state; a rebalance under way may have "
                         "moved on)")
        rows = [("MEMBER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT")]
        for m in sorted(group.members, key=lambda m: (m.group_instance_id or "", m.member_id)):
            rows.append((m.member_id, getattr(m, "group_instance_id", None) or "-",
                         m.client_id, m.client_host,
                         format_assignment(group.protocol_type, m.member_assignment)))
        return lines + _table(rows, last_free=True)

    def strategy(self, group) -> str:
        return group.protocol_data or ""

    def members(self, group) -> list[Member]:
        return [Member(m.member_id, getattr(m, "group_instance_id", None), m.client_id,
                       m.client_host, tuple(sorted(_embedded_partitions(
                           group.protocol_type, m.member_assignment))))
                for m in group.members]


def describe_one(client, api_key: int, group_id: str):
    """One group as a type's own describe API (ConsumerGroupDescribe, StreamsGroupDescribe)
    answers it, or None when the broker does not serve that API; a group still loading raises
    Loading (the caller retries)."""
    from roster.admin.client import AdminError, Loading
    try:
        client.version(api_key)
    except AdminError:
        return None   # a broker without the API
    group = client.call(api_key, group_ids=(group_id,),
                        include_authorized_operations=False).groups[0]
    if group.error_code.name == "coordinator_load_in_progress":
        raise Loading(group_id)
    return group


class ConsumerView:
    """ConsumerGroupDescribe: consumer groups (KIP-848)."""
    name = "consumer"

    def ask(self, client, group_id: str):
        group = describe_one(client, ApiKey.CONSUMER_GROUP_DESCRIBE, group_id)
        return group, group is not None and not group.error_code.value

    def not_found(self, group_id: str, answer):
        from roster.admin.groups import GroupNotFound
        raise GroupNotFound(f"consumer group '{group_id}' does not exist")

    def recognises(self, answer) -> bool:
        return hasattr(answer, "group_epoch")   # ConsumerGroupDescribe's answer

    def lines(self, group, record=None) -> list[str]:
        lines = [f"Group: {group.group_id}\tState: {group.group_state}\t"
                 f"Type: consumer (KIP-848)\t"
                 f"Assignor: {group.assignor_name}\tMembers: {len(group.members)}",
                 f"GroupEpoch: {group.group_epoch}\tAssignmentEpoch: {group.assignment_epoch}"]

        def parts(assignment) -> str:
            return " ".join(
                f"{tp.topic_name}:{','.join(str(p) for p in sorted(tp.partitions))}"
                for tp in sorted(assignment.topic_partitions, key=lambda tp: tp.topic_name)) \
                or "-"

        rows = [("MEMBER-ID", "INSTANCE-ID", "EPOCH", "CLIENT-ID", "HOST", "ASSIGNMENT",
                 "TARGET")]
        for m in sorted(group.members, key=lambda m: (m.instance_id or "", m.member_id)):
            rows.append((m.member_id, m.instance_id or "-", str(m.member_epoch), m.client_id,
                         m.client_host, parts(m.assignment), parts(m.target_assignment)))
        return lines + _table(rows)

    def strategy(self, group) -> str:
        return group.assignor_name or ""

    def members(self, group) -> list[Member]:
        return [Member(m.member_id, m.instance_id, m.client_id, m.client_host,
                       tuple(sorted((tp.topic_name, p) for tp in m.assignment.topic_partitions
                                    for p in tp.partitions)))
                for m in group.members]


CLASSIC_VIEW = ClassicView()
CONSUMER_VIEW = ConsumerView()
