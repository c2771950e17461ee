"""Streams groups (KIP-1071): the pure core of Kafka Streams' own group type, NOT YET WIRED.

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

What is not here yet: a StreamsCoordinator implementing the shard's GroupType (heartbeat and
describe operations, reconciliation of current towards target assignment with revocation,
session timers, the typed changes that undo an operation), the
wire codecs (kio has v0 only), the handlers, internal topic creation at the edge, group configs,
the flight recorder's streams events, and the admin paths (ListGroups, DescribeGroups,
DeleteGroups, offsets). Nothing outside this package imports it.
"""
