"""The classic group type (JoinGroup, SyncGroup, Heartbeat, LeaveGroup; simple groups too):
its state machine and answer tables (states.py), its groups (group.py), one module per API,
its rebalances and sessions, and its facade, the Coordinator (coordinator.py), registered as
every group type is (roster/group_types.py)."""
