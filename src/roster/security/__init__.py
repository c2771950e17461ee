"""Security: listeners, TLS, SASL authentication and SCRAM credentials (docs/security.md).

The layers stay apart: tls.py knows certificates, mechanisms.py turns SASL bytes into a
principal and knows nothing of Kafka's APIs, sasl.py is the per-connection state machine the
connection consults before dispatch, credentials.py keeps the SCRAM users durable.
"""
from __future__ import annotations

ANONYMOUS = "User:ANONYMOUS"


def scram_store(broker):
    """The broker's SCRAM credential store, opened on first use."""
    store = getattr(broker, "scram", None)
    if store is None:
        from roster.security.credentials import ScramStore
        store = broker.scram = ScramStore.open(broker.data_dir)
    return store
