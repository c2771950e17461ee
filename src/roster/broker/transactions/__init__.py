"""The transaction coordinator at the edge: its runtime, its records in __transaction_state
and the markers it writes."""
