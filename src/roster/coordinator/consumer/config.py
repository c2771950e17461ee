"""The consumer group coordinator's settings (KIP-848; Kafka's names and defaults), and the
per-group overrides read at each use."""
from __future__ import annotations

from dataclasses import field

from roster.coordinator.consumer import migration
from roster.coordinator.consumer.assignors import ASSIGNORS
from roster.frozen import frozen


@frozen
class ConsumerConfig:
    session_timeout_ms: int = 45_000        # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5_000      # group.consumer.heartbeat.interval.ms
    max_size: int = 2**31 - 1               # group.consumer.max.size
    assignors: tuple[str, ...] = ("uniform", "range")   # group.consumer.assignors
    migration_policy: str = migration.DEFAULT_POLICY    # group.consumer.migration.policy
    # group configs: group id -> {"consumer.session.timeout.ms": ms,
    # "consumer.heartbeat.interval.ms": ms} (the edge keeps it; read at each use)
    group_overrides: dict = field(default_factory=dict)

    @classmethod
    def from_broker(cls, config, group_overrides: dict | None = None) -> ConsumerConfig:
        names = []
        for entry in str(config["group.consumer.assignors"]).split(","):
            name = entry.strip().rsplit(".", 1)[-1]   # Kafka's class names work too
            name = {"UniformAssignor": "uniform", "RangeAssignor": "range"}.get(name, name)
            if name:
                names.append(name)
        return cls(session_timeout_ms=config["group.consumer.session.timeout.ms"],
                   heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
                   max_size=config["group.consumer.max.size"],
                   assignors=tuple(n for n in names if n in ASSIGNORS) or ("uniform", "range"),
                   migration_policy=migration.parse_policy(
                       config["group.consumer.migration.policy"]),
                   group_overrides=group_overrides if group_overrides is not None else {})

    def session_ms(self, group_id: str) -> int:
        return self.group_overrides.get(group_id, {}).get("consumer.session.timeout.ms",
                                                          self.session_timeout_ms)

    def heartbeat_ms(self, group_id: str) -> int:
        return self.group_overrides.get(group_id, {}).get("consumer.heartbeat.interval.ms",
                                                          self.heartbeat_interval_ms)
