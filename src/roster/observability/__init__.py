"""Observability: the group flight recorder (facts.py: what the coordinator cores note;
flight_recorder.py, recorder.py, consumer_recorder.py, events.py: pure, run by the group runtime
to make the events), its internal topic `__roster_group_events` (event_log.py) and the
`roster groups history` timeline (history.py)."""
