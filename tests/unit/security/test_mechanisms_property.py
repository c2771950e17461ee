"""Whatever bytes a client sends, a mechanism either goes on, succeeds for the right
credentials, or fails with AuthenticationFailed: never another exception (which would close
the connection as an internal error) and never a principal it did not prove."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roster.security.credentials import ScramStore, from_password
from roster.security.mechanisms import (
    AuthenticationFailed,
    OAuthBearerExchange,
    OAuthValidator,
    PlainExchange,
    ScramExchange,
)

TOKENS = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(str.encode),
    st.builds(lambda n, r, extra: f"n,,n={n},r={r}{extra}".encode(),
              st.text(max_size=20), st.text(max_size=40), st.text(max_size=20)),
    st.builds(lambda r, p: f"c=biws,r={r},p={p}".encode(), st.text(max_size=60),
              st.text(max_size=60)),
)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    directory = tmp_path_factory.mktemp("prop")
    store = ScramStore.open(directory)
    store.apply([("alice", m, from_password(m, "alice-secret"))
                 for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")])
    return store


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=TOKENS, second=TOKENS)
def test_scram_never_raises_anything_else(store, first, second):
    exchange = ScramExchange("SCRAM-SHA-256", store)
    try:
        step = exchange.step(first)
        assert step.principal is None
        step = exchange.step(second)
        assert step.principal is None  # no proof was made with the password
    except AuthenticationFailed as failure:
        assert "alice-secret" not in failure.message + failure.reason


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=TOKENS)
def test_plain_never_raises_anything_else(store, token):
    try:
        step = PlainExchange({"admin": "admin-secret"}, store).step(token)
    except AuthenticationFailed:
        return
    assert token.split(b"\0")[2] in (b"admin-secret", b"alice-secret")
    assert step.principal in ("User:admin", "User:alice")


@settings(max_examples=200, deadline=None)
@given(token=TOKENS)
def test_oauthbearer_never_raises_anything_else(token):
    validator = OAuthValidator(json.dumps({"keys": [
        {"kty": "oct", "k": "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0", "kid": "a"}]}),
        audience=[], issuer=None)
    exchange = OAuthBearerExchange(validator)
    try:
        step = exchange.step(token)
        assert step.principal is None
        exchange.step(b"\x01")
    except AuthenticationFailed:
        pass
