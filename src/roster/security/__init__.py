"""Security: listeners, TLS, SASL authentication and SCRAM credentials (docs/security.md).

The layers stay apart: tls.py knows certificates, mechanisms.py turns SASL bytes into a
principal and knows nothing of Kafka's APIs, sasl.py is the per-connection state machine the
connection consults before dispatch, credentials.py keeps the SCRAM users durable.
"""
from __future__ import annotations

ANONYMOUS = "User:ANONYMOUS"

