"""Group coordinator settings (Kafka's names and defaults)."""
from __future__ import annotations

from dataclasses import dataclass

from roster.frozen import frozen


@frozen
class GroupConfig:
    min_session_timeout_ms: int = 6000            # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000       # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000        # group.initial.rebalance.delay.ms
    max_size: int = 2**31 - 1                     # group.max.size
    new_member_join_timeout_ms: int = 300_000     # hard-coded in Kafka
    offset_metadata_max_bytes: int = 4096         # offset.metadata.max.bytes
    offsets_retention_ms: int = 7 * 24 * 3_600_000  # offsets.retention.minutes
    metadata_watch: bool = True                   # group.coordinator.metadata.watch (roster's)

    @classmethod
    def from_broker(cls, config) -> GroupConfig:
        return cls(
            min_session_timeout_ms=config["group.min.session.timeout.ms"],
            max_session_timeout_ms=config["group.max.session.timeout.ms"],
            initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
            max_size=config["group.max.size"],
            offset_metadata_max_bytes=config["offset.metadata.max.bytes"],
            offsets_retention_ms=config["offsets.retention.minutes"] * 60_000,
            metadata_watch=config["group.coordinator.metadata.watch"],
        )


class PerGroupConfig:
    """The settings of a group type whose group configs (<type>.* on a GROUP resource) override
    its broker settings (group.<config>) per group, read at each use so a config altered while
    a group runs applies from its next heartbeat, as in Kafka. A subclass (a frozen dataclass
    with a `max_size` and a `group_overrides` field) names `config_fields` (group config -> the
    field it overrides) and `max_size_setting` (the broker setting of max_size)."""

    __slots__ = ()
    config_fields: dict = {}
    max_size_setting: str = ""

    @classmethod
    def from_broker(cls, config, group_overrides: dict | None = None):
        """From the broker's validated settings (roster/config.py checks them at start)."""
        values = {f: config["group." + name] for name, f in cls.config_fields.items()}
        return cls(max_size=config[cls.max_size_setting],
                   group_overrides=group_overrides if group_overrides is not None else {},
                   **values)

    def of(self, group_id: str, name: str) -> int:
        """The value of group config `name` for this group: its own, else the broker's."""
        own = self.group_overrides.get(group_id)
        if own and name in own:
            return own[name]
        return getattr(self, self.config_fields[name])
