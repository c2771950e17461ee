"""The share partitions' edge: broker.share_state (state.py) on the coordinator runtime,
__share_group_state (state_log.py), the dead-letter queue (dlq.py)."""
