"""ConsumerGroupDescribe and ListGroups' consumer groups."""
from __future__ import annotations

from roster.coordinator.consumer.config import ConsumerConfig
from roster.coordinator.consumer.messages import DescribedGroup, DescribedMember
from roster.coordinator.messages import GroupOverview
from roster.coordinator.consumer.model import Assignment, ConsumerGroup
from roster.coordinator.consumer.subscriptions import assignor_name
from roster.protocol.errors import ErrorCode


def pairs(a: Assignment) -> tuple[tuple[bytes, tuple[int, ...]], ...]:
    return tuple((t, tuple(sorted(ps))) for t, ps in sorted(a.items()))


def describe(groups: dict[str, ConsumerGroup], config: ConsumerConfig, classic,
             group_ids) -> list[DescribedGroup]:
    """ConsumerGroupDescribe (`classic`: the classic coordinator, to tell its groups apart)."""
    out = []
    for group_id in group_ids:
        group = groups.get(group_id)
        if group is None:
            classic = classic is not None and group_id in classic.groups
            out.append(DescribedGroup(group_id, ErrorCode.group_id_not_found,
                                      f"Group {group_id} is not a consumer group." if classic
                                      else f"Group {group_id} not found."))
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
