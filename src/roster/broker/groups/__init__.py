"""The group coordinator at the edge: the runtime around the pure group shard, its records
in __consumer_offsets, its timers, group configs and the group types' broker-side effects."""
