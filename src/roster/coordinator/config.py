"""Group coordinator settings (Kafka's names and defaults)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
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
