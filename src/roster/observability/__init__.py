"""Observability: the group flight recorder (events.py, recorder.py: pure, used by the
coordinator cores), its internal topic `__roster_group_events` (event_log.py) and the
`roster groups history` timeline (history.py)."""
