"""Streams groups (KIP-1071): the pure core of Kafka Streams' own group type.

What is here (pure: no I/O, no clock; time comes in as `now`):
- `messages.py`   the facts of StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89) at
                  v0-1, and `StreamsConfig` (Kafka's defaults, per-group overrides);
- `model.py`      the group (epochs, members, static members, target assignment, topology)
                  and its members (process id, instance id, rack, client tags, endpoint, task
                  offsets, active/standby/warm-up tasks and their pending revocation);
- `records.py`    the `__consumer_offsets` records of streams groups (types 17, 19-23) in
                  Kafka's layouts, encoded and decoded (kio has no coordinator records),
                  byte for byte what Kafka 4.4.0 writes, and the factories that make them;
- `replay.py`     those records applied to the groups (load and live operations alike);
- `topology.py`   subtopologies, their validation against the topic catalog with Kafka's
                  status codes, and the internal topics to create;
- `assignor.py`   the sticky task assignor (active, standby) as Kafka 4.4.0 assigns, and a
                  warm-up refinement, off by default (Kafka 4.4.0 refines nothing);
- `static_members.py` static membership as Kafka 4.4 defines it for streams groups;
- `endpoints.py`  the partitions each Interactive Query endpoint serves
                  (PartitionsByUserEndpoint).

- `coordinator.py` the StreamsCoordinator, the shard's third group type (GroupType):
                  StreamsGroupHeartbeat (join with the topology, member epochs, target
                  assignment, reconciliation, static members, sessions), what
                  StreamsGroupDescribe reads, offsets and deletion as the shard asks;
- `reconcile.py`  a member's current tasks moved towards its target, revoked before they
                  are given to another member;
- `heartbeat.py`  the heartbeat's request and reply as the coordinator reads them.

Registered by broker/groups/streams_group.py (STREAMS, with the effect creating internal topics);
served by broker/handlers/streams_group_heartbeat.py (v0-1, protocol/streams_group_wire.py) and
streams_group_describe.py (v0-1; v1's schema in protocol/schema_extensions.py). Its settings are
the broker's group.streams.* (roster/config.py) and each group's own streams.* configs
(broker/groups/streams_configs.py), read live through messages.StreamsConfig; the initial
rebalance delay is a timer of the core (StreamsInitialRebalance), the assignment interval a
check on the heartbeat. `facts.py` holds what the coordinator tells the flight recorder
(observability/streams_recorder.py).
"""
