"""Streams groups (KIP-1071) at the edge: the registration of the streams group type
(coordinator/streams/) and the one effect it asks of the broker, creating the internal topics a
group's topology needs (its changelogs compacted, its repartition topics as Streams configures
them), once the heartbeat that found them missing is durable; its flight recorder
(observability/streams_recorder.py) and its view for `roster groups describe`
(admin/streams_view.py). roster/group_types.py lists it with the broker's other types."""
from __future__ import annotations

import logging

from roster.admin.streams_view import STREAMS_VIEW
from roster.broker.groups.streams_configs import STREAMS_CONFIGS
from roster.coordinator.group_type import GroupTypeRegistration, OnFirstUse, TypeContext
from roster.coordinator.streams.effects import InternalTopicsWanted

log = logging.getLogger("roster.groups")


def _make(context: TypeContext):
    from roster.coordinator.streams.coordinator import StreamsCoordinator
    return StreamsCoordinator(context.settings_of("streams"), topics=context.topics)


def _settings(config, group_configs):
    """The group.streams.* settings (roster/config.py validated them) and the groups' own
    streams.* configs, the live mapping group_configs.py keeps."""
    from roster.coordinator.streams.messages import StreamsConfig
    return StreamsConfig.from_broker(config, group_configs)


def create_internal_topics(broker, effect) -> None:
    """Create those of `effect.topics` that do not exist yet (another heartbeat may have asked
    first): each with its partition count and the configs the topology gave it. A topic that
    cannot be created is logged; the group reports MISSING_INTERNAL_TOPICS meanwhile."""
    from roster.broker.partitions.topics import TopicError
    for topic in effect.topics:
        if topic.name in broker.topics:
            continue
        try:
            broker.topics.create(topic.name, topic.partitions, dict(topic.configs))
        except TopicError as exc:
            log.warning("streams group %s: internal topic %s not created: %s",
                        effect.group_id, topic.name, exc)
        else:
            log.info("streams group %s: created internal topic %s (%d partitions)",
                     effect.group_id, topic.name, topic.partitions)


def _recorder():
    from roster.observability.streams_recorder import StreamsRecorder
    return StreamsRecorder()


STREAMS = GroupTypeRegistration(
    "streams", make=_make, configure=_settings, recorder=_recorder,
    effects={InternalTopicsWanted: create_internal_topics},
    describe_view=STREAMS_VIEW, group_configs=STREAMS_CONFIGS,
    # built on its first heartbeat or record (coordinator/unbuilt_type.py): a broker without
    # streams groups never loads coordinator/streams/; its records are types 17 and 19-23
    on_first_use=OnFirstUse(accepts=frozenset({"streams", "classic"}),
                            serves=frozenset({"streams", "classic"}),
                            record_types=frozenset({17, 19, 20, 21, 22, 23})))


def streams_type(broker):
    """The broker's streams group type, or None when it is not registered."""
    for group_type in broker.groups.shard.types:
        if group_type.name == "streams":
            return group_type
    return None
