"""The consumer group protocol (KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe), beside
the classic coordinator in the same pure core: its own state (model.py), records (records.py,
Kafka's record types 3-8), replay (replay.py), reconciliation (reconcile.py), server-side
assignors (assignors.py) and operations (coordinator.py)."""
