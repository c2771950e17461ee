"""Consumer group state from its records. Every change an operation makes goes through here
(the operation builds records, then replays them), and so does loading after a restart: the
state after a restart is the state before it (tests/unit/coordinator/consumer/test_replay.py).
"""
from __future__ import annotations

from roster.coordinator.consumer import changes as ch
from roster.coordinator.consumer import records as r
from roster.coordinator.consumer.model import ConsumerGroup, ConsumerMember, topic_names


def replay(groups: dict[str, ConsumerGroup], record: r.ConsumerRecord, now: int = -1,
           undo: list | None = None) -> None:
    """Apply one record. With `undo`, first note there the change that puts back what it
    changes (consumer/changes.py): the one switch per record type both for applying a record
    and for undoing it, so the two cannot drift apart (an operation's records: operation.py)."""
    key, value = record.key, record.value
    group = groups.get(key.group)
    if group is None:
        if undo is not None:
            undo.append(ch.GroupAbsent(groups, key.group))
            undo = None   # a group made now goes whole: nothing inside it to put back
        if value is None:
            return
        group = groups[key.group] = ConsumerGroup(key.group, created_ms=now)
    t = key.type
    if t == r.GROUP_METADATA:
        if undo is not None:
            undo.append(ch.GroupPutBack(groups, key.group, group, group.group_epoch))
        if value is None:
            del groups[key.group]
        else:
            group.group_epoch = value.epoch
    elif t == r.PARTITION_METADATA:
        if undo is not None:
            undo.append(ch.MetadataPutBack(groups, key.group, group.subscription_metadata))
        group.subscription_metadata = {} if value is None else {
            name: (tid, n) for tid, name, n in value.topics}
    elif t == r.MEMBER_METADATA:
        if undo is not None:
            undo.append(_member_put_back(groups, group, key))
        if value is None:
            group.remove_member(key.member)
        else:
            old = group.members.get(key.member) or ConsumerMember(key.member)
            group.put_member(old.replace(
                instance_id=value.instance_id, rack_id=value.rack_id,
                client_id=value.client_id, client_host=value.client_host,
                subscribed_topic_names=topic_names(value.subscribed_topic_names),
                subscribed_topic_regex=value.subscribed_topic_regex,
                rebalance_timeout_ms=value.rebalance_timeout_ms,
                server_assignor=value.server_assignor, classic=value.classic))
        group.subscribed_cache = group.regex_cache = None
    elif t == r.TARGET_METADATA:
        if undo is not None:
            undo.append(ch.TargetEpochPutBack(groups, key.group, group.assignment_epoch))
        group.assignment_epoch = -1 if value is None else value.assignment_epoch
    elif t == r.TARGET_MEMBER:
        if undo is not None:
            undo.append(ch.TargetPutBack(groups, key.group, key.member,
                                         group.target.get(key.member)))
        if value is None:
            group.target.pop(key.member, None)
        else:
            group.target[key.member] = value.partitions
    elif t == r.REGULAR_EXPRESSION:
        if undo is not None:
            undo.append(ch.RegexPutBack(groups, key.group, key.regex,
                                        group.resolved_regex.get(key.regex)))
        if value is None:
            group.resolved_regex.pop(key.regex, None)
        else:
            group.resolved_regex[key.regex] = frozenset(value.topics)
        group.subscribed_cache = None
    elif t == r.CURRENT_ASSIGNMENT:
        if undo is not None:
            undo.append(_member_put_back(groups, group, key))
        old = group.members.get(key.member) or ConsumerMember(key.member)
        if value is None:
            group.put_member(old.replace(member_epoch=-1, previous_member_epoch=-1,
                                         assigned={}, pending_revocation={},
                                         assignment_epochs={}))
        else:
            group.put_member(old.replace(
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                state=r.member_state(value.state), assigned=value.assigned,
                pending_revocation=value.pending_revocation,
                assignment_epochs=value.epochs))


def _member_put_back(groups, group: ConsumerGroup, key) -> ch.MemberPutBack:
    return ch.MemberPutBack(groups, key.group, key.member, group.members.get(key.member),
                            group.session_deadlines.get(key.member))
