"""Share partitions (KIP-932), the pure core: for each (group, topic id, partition) the
share-partition start offset, the in-flight records and their states, delivery counts and
acquisition locks (partition.py); the records that make them durable in __share_group_state
(records.py) and the coordinator that decides what to write and replays it (coordinator.py).
No I/O and no clock: every operation takes `now`; the edge is roster.broker.share."""
