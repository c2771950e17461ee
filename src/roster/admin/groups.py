"""`roster groups ...`: list, describe, delete, and remove static members by instance id
(the command-line tool KIP-345 proposes). Everything goes over the wire protocol."""
from __future__ import annotations

from roster.admin.client import AdminClient, AdminError, Loading, retry_while_loading
from roster.protocol.consumer_protocol import ConsumerProtocolError, decode_assignment

LIST_GROUPS, DESCRIBE_GROUPS, DELETE_GROUPS, LEAVE_GROUP = 16, 15, 42, 13


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


def describe(client: AdminClient, group_id: str):
    return retry_while_loading(lambda: _describe_once(client, group_id))


def _describe_once(client: AdminClient, group_id: str):
    answer = client.call(DESCRIBE_GROUPS, groups=(group_id,), include_authorized_operations=False)
    group = answer.groups[0]
    if group.error_code.name == "coordinator_load_in_progress":
        raise Loading(group_id)
    if group.error_code.value:
        raise AdminError(f"cannot describe {group_id}: {group.error_code.name.upper()}")
    return group


def format_assignment(protocol_type: str, assignment: bytes) -> str:
    if protocol_type != "consumer":
        return f"{len(assignment)} bytes"
    try:
        decoded = decode_assignment(assignment)
    except ConsumerProtocolError:
        return f"{len(assignment)} bytes (not a consumer assignment)"
    return ", ".join(f"{topic}:{','.join(map(str, sorted(parts)))}"
                     for topic, parts in sorted(decoded.partitions)) or "-"


def describe_lines(group) -> list[str]:
    if group.group_state == "Dead":
        return [f"Group {group.group_id} does not exist."]
    lines = [f"Group: {group.group_id}\tState: {group.group_state}\t"
             f"ProtocolType: {group.protocol_type or '-'}\t"
             f"Protocol: {group.protocol_data or '-'}\tMembers: {len(group.members)}"]
    rows = [("MEMBER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT")]
    for m in sorted(group.members, key=lambda m: (m.group_instance_id or "", m.member_id)):
        rows.append((m.member_id, getattr(m, "group_instance_id", None) or "-", m.client_id,
                     m.client_host, format_assignment(group.protocol_type, m.member_assignment)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths))
                     + "  " + row[4])
    return lines


def delete(client: AdminClient, group_ids: list[str]) -> None:
    answer = client.call(DELETE_GROUPS, groups_names=tuple(group_ids))
    failures = [f"{r.group_id}: {r.error_code.name.upper()}" for r in answer.results
                if r.error_code.value]
    if failures:
        raise AdminError("cannot delete " + "; ".join(failures))


def remove_members(client: AdminClient, group_id: str, instance_ids: list[str]) -> None:
    """LeaveGroup v3+ with member id "" and the instance ids: the admin path of KIP-345."""
    if client.version(LEAVE_GROUP) < 3:
        raise AdminError("the broker does not support removing members by instance id "
                         "(LeaveGroup v3+)")
    member = client.entry(LEAVE_GROUP, "members")
    answer = client.call(LEAVE_GROUP, group_id=group_id, members=tuple(
        member(member_id="", group_instance_id=i, reason="removed by roster groups "
               "remove-members") for i in instance_ids))
    failures = [f"{m.group_instance_id}: {m.error_code.name.upper()}" for m in answer.members
                if m.error_code.value]
    if answer.error_code.value:
        failures.insert(0, answer.error_code.name.upper())
    if failures:
        raise AdminError(f"cannot remove members of {group_id}: " + "; ".join(failures))
