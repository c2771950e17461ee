"""What a consumer group subscribes to and how it is assigned: its members' regexes resolved
against the topic catalog (records of type 16), the subscribed topics' metadata, the server
assignor's choice and the target assignment it computes. Each returns records or values; the
coordinator writes them through its operation."""
from __future__ import annotations

from collections import Counter

from roster.coordinator.consumer import records as rec
from roster.coordinator.consumer.assignors import ASSIGNORS, DEFAULT_ASSIGNOR, MemberSpec
from roster.coordinator.consumer.config import ConsumerConfig
from roster.coordinator.consumer.model import ConsumerGroup, TopicImage
from roster.protocol import client_regex
from roster.protocol.java_order import timeline_hash_order


def resolve_regexes(group: ConsumerGroup, image: TopicImage, now: int) -> list:
    """Records for what the members' regexes resolve to now (type 16), and tombstones for
    regexes no member uses any more."""
    version = image.version()
    regexes = group.regexes()
    if not regexes and not group.resolved_regex:
        return []
    if version is not None and version == group.regex_version \
            and regexes == set(group.resolved_regex):
        return []
    names = list(image.names())
    records = []
    for regex in sorted(regexes):
        try:
            pattern = client_regex.compiled(regex)
        except client_regex.InvalidRegex:
            resolved = frozenset()
        else:
            resolved = frozenset(n for n in names if pattern.fullmatch(n))
        if group.resolved_regex.get(regex) != resolved:
            records.append(rec.regex_record(group.group_id, regex, resolved, now))
    records += [rec.regex_tombstone(group.group_id, regex)
                for regex in sorted(set(group.resolved_regex) - regexes)]
    group.regex_version = version
    return records


def metadata(group: ConsumerGroup, image: TopicImage) -> dict[str, tuple[bytes, int]]:
    """The subscribed topics' (id, partition count) in the catalog (those with partitions)."""
    metadata = {}
    for name in group.subscribed_names():
        found = image.lookup(name)
        if found is not None and found[1] > 0:
            metadata[name] = found
    return metadata


def metadata_without_image(group: ConsumerGroup) -> dict[str, tuple[bytes, int]]:
    names = group.subscribed_names()
    return {n: v for n, v in group.subscription_metadata.items() if n in names}


def assignor_name(group: ConsumerGroup, config: ConsumerConfig) -> str:
    """The server assignor most members ask for, else the first configured. A tie goes to the
    first in the order Kafka's count of them iterates (java_order.timeline_hash_order: of the
    two built-in names, "uniform" before "range"), as Kafka's Stream.max keeps the first."""
    counts = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
    if not counts:
        return config.assignors[0] if config.assignors else DEFAULT_ASSIGNOR
    best = max(counts.values())
    return next(name for name in timeline_hash_order(list(counts)) if counts[name] == best)


def target_records(group: ConsumerGroup, config: ConsumerConfig) -> list:
    """A new target assignment for the group epoch: the members' targets that changed, then the
    target epoch."""
    metadata = group.subscription_metadata
    partitions = dict(metadata.values())
    specs = {}
    for member in group.members.values():
        ids = frozenset(metadata[n][0] for n in group.member_topics(member) if n in metadata)
        specs[member.member_id] = MemberSpec(ids, group.target.get(member.member_id, {}),
                                             member.instance_id, member.rack_id)
    plan = ASSIGNORS[assignor_name(group, config)](specs, partitions)
    epoch = group.group_epoch
    records = [rec.target_record(group.group_id, m, a) for m, a in sorted(plan.items())
               if group.target.get(m) != a]
    records.append(rec.target_epoch_record(group.group_id, epoch))
    return records
