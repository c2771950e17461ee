"""The group types this broker serves, each registered once, as any new type is
(coordinator/group_type.py: GroupTypeRegistration). The shard asks them in this order which one
holds a group id; the last one holds any id nobody holds (commits from admin tools and assign()
users make a "simple" classic group, as in Kafka). A new type adds its line here (before the
built-in ones) or is handed to Broker(group_types=...).

Each registration imports its type when it is built, so reading this list (the admin tools do,
for their describe views) loads none of the coordinator."""
from __future__ import annotations

import functools
from collections.abc import Mapping

from roster.admin.describe_views import CLASSIC_VIEW, CONSUMER_VIEW
from roster.broker.groups.consumer_configs import CONSUMER_CONFIGS
from roster.broker.groups.expected_members import EXPECTED_MEMBERS
from roster.broker.groups.share_group import SHARE
from roster.broker.groups.streams_group import STREAMS
from roster.coordinator.group_type import GroupTypeRegistration, OnFirstUse, TypeContext


def _consumer(context: TypeContext):
    from roster.coordinator.consumer.coordinator import ConsumerCoordinator
    return ConsumerCoordinator(context.settings_of("consumer"), context.new_uuid,
                               classic=context.built.get("classic"))


def _consumer_settings(config, group_configs):
    from roster.coordinator.consumer.config import ConsumerConfig
    return ConsumerConfig.from_broker(config, group_configs)


def _consumer_recorder():
    from roster.observability.consumer_recorder import ConsumerRecorder
    return ConsumerRecorder()


def _classic(context: TypeContext):
    from roster.coordinator.classic.coordinator import Coordinator
    return Coordinator(context.config, context.new_member_id, topics=context.topics,
                       expected=context.expected)


def _classic_recorder():
    from roster.observability.recorder import ClassicRecorder
    return ClassicRecorder()


GROUP_TYPES: tuple[GroupTypeRegistration, ...] = (
    SHARE,        # share groups (KIP-932): broker/groups/share_group.py
    STREAMS,      # Kafka Streams' own groups (KIP-1071): broker/groups/streams_group.py
    GroupTypeRegistration("consumer", make=_consumer, recorder=_consumer_recorder,
                          configure=_consumer_settings, describe_view=CONSUMER_VIEW,
                          group_configs=CONSUMER_CONFIGS,
                          # built on its first ConsumerGroupHeartbeat or record (types 3-8, 16):
                          # a broker of classic groups alone never loads coordinator/consumer/
                          on_first_use=OnFirstUse(
                              accepts=frozenset({"consumer", "classic"}),
                              serves=frozenset({"consumer", "classic"}),
                              record_types=frozenset({3, 4, 5, 6, 7, 8, 16}))),
    GroupTypeRegistration("classic", make=_classic, recorder=_classic_recorder,
                          describe_view=CLASSIC_VIEW, group_configs=EXPECTED_MEMBERS),
)


def with_built_in(more: tuple[GroupTypeRegistration, ...] = ()
                  ) -> tuple[GroupTypeRegistration, ...]:
    """`more` (asked first), then the types above."""
    return (*more, *GROUP_TYPES)


def settings(types: tuple[GroupTypeRegistration, ...], config, group_configs=None) -> Mapping:
    """Each type's own settings from the broker's config and the per-group configs, read when
    the type is built (a type built on first use loads its settings' code then too)."""
    return _OnFirstRead({t.name: functools.partial(t.configure, config, group_configs)
                         for t in types if t.configure is not None})


class _OnFirstRead(Mapping):
    """name -> value, each made by its maker the first time it is read."""

    def __init__(self, makers: dict) -> None:
        self._makers = makers
        self._made: dict = {}

    def __getitem__(self, name):
        if name not in self._made:
            self._made[name] = self._makers[name]()
        return self._made[name]

    def __iter__(self):
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)
