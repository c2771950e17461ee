"""Share groups (KIP-932): the pure core of the share group type's membership.

What is here (pure: no I/O, no clock; time comes in as `now`):
- `messages.py`    ShareGroupHeartbeat (76, v1) as the coordinator reads and answers it, Kafka
                   4.4.0's words for what it refuses, `ShareConfig` (group.share.* with each
                   group's own share.* configs);
- `model.py`       the group (epochs, members, target assignment, initialised partitions) and
                   its members (rack, client, subscribed topic names, epoch, partitions);
- `records.py`     the `__consumer_offsets` records of share groups (types 10-15) in Kafka's
                   layouts, encoded and decoded, and the factories that make them;
- `replay.py`      those records applied to the groups (load and live operations alike);
- `assignor.py`    Kafka's SimpleAssignor: partitions spread evenly, shared when there are
                   more members than partitions;
- `effects.py`     what the coordinator asks of the share-partition state through the edge
                   (initialise partitions, a member gone, a group deleted);
- `coordinator.py` the ShareCoordinator, a group type (GroupType): heartbeats, leaves,
                   sessions, what ShareGroupDescribe reads, offsets and deletion as the shard
                   asks.

Registered by broker/groups/share_group.py (SHARE, with the effect handlers that call
broker.share_state); served by broker/handlers/share_group_heartbeat.py and
share_group_describe.py. Its group configs are broker/groups/share_configs.py's.
"""
