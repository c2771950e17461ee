"""ConsumerGroupDescribe and ListGroups' consumer groups."""
from __future__ import annotations

from roster.coordinator.consumer.config import ConsumerConfig
from roster.coordinator.consumer.messages import DescribedGroup, DescribedMember
from roster.coordinator.consumer.model import Assignment, ConsumerGroup
from roster.coordinator.consumer.subscriptions import assignor_name
from roster.coordinator.messages import GroupOverview, GroupView, MemberView
from roster.protocol.errors import ErrorCode


def pairs(a: Assignment) -> tuple[tuple[bytes, tuple[int, ...]], ...]:
    return tuple((t, tuple(sorted(ps))) for t, ps in sorted(a.items()))


def not_described(group_id: str, another_type: bool) -> DescribedGroup:
    """ConsumerGroupDescribe of a group that is not a consumer group: another type's, or none."""
    return DescribedGroup(group_id, ErrorCode.group_id_not_found,
                          f"Group {group_id} is not a consumer group." if another_type
                          else f"Group {group_id} not found.")


def describe(groups: dict[str, ConsumerGroup], config: ConsumerConfig,
             group_ids) -> list[DescribedGroup]:
    """ConsumerGroupDescribe of consumer groups (one not found: not_described)."""
    out = []
    for group_id in group_ids:
        group = groups.get(group_id)
        if group is None:
            out.append(not_described(group_id, False))
            continue
        members = tuple(DescribedMember(
            m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id,
            m.client_host, m.subscribed_topic_names, m.subscribed_topic_regex,
            pairs(m.assigned), pairs(group.target.get(m.member_id, {})),
            member_type=1 if m.classic is None else 0)   # 0: classic (an upgrade)
            for m in group.members.values())
        out.append(DescribedGroup(group_id, state=group.state(),
                                  group_epoch=group.group_epoch,
                                  assignment_epoch=group.assignment_epoch,
                                  assignor_name=assignor_name(group, config),
                                  members=members))
    return out


def listed(groups: dict[str, ConsumerGroup], type_name: str) -> list[GroupOverview]:
    """Every consumer group (protocol type "consumer"); the shard filters them."""
    return [GroupOverview(group.group_id, type_name, "consumer", group.state(),
                          len(group.members), group.group_epoch) for group in groups.values()]


def console_view(groups: dict, group_id: str) -> GroupView | None:
    """A consumer group as the console's group page shows it (topics by name, as subscribed)."""
    group = groups.get(group_id)
    if group is None:
        return None
    state = group.state()
    names = {tid: name for name, (tid, _) in group.subscription_metadata.items()}
    members = tuple(
        MemberView(m.member_id, m.instance_id, m.client_id, m.client_host,
                   tuple((names.get(t, t.hex()), tuple(ps)) for t, ps in m.assigned.items()),
                   note=f"epoch {m.member_epoch}, {m.state.name.lower()}")
        for m in group.members.values())
    return GroupView(getattr(state, "value", str(state)), "consumer", group.group_epoch, members)
