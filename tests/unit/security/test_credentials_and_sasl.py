"""SCRAM credentials (salted, durable, never the password) and the SASL state machine each
connection goes through, driven without sockets."""
from __future__ import annotations

import asyncio
import json
import os
import stat
import time

import pytest

from roster.protocol.errors import MalformedRequest
from roster.security.credentials import (
    CredentialError,
    ScramStore,
    from_password,
    from_salted_password,
    password_matches,
)
from roster.security.mechanisms import AuthenticationFailed, OAuthBearerExchange, OAuthValidator
from roster.security.sasl import Authenticator
from roster.security.settings import SecuritySettings
from roster.security.users import add_offline, delete_offline, list_offline, salted_password

# -- credentials ----------------------------------------------------------------------------

def test_a_credential_from_the_salted_password_equals_one_from_the_password():
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        salt, salted = salted_password(mechanism, "pässword", 4096, salt=b"s" * 16)
        assert from_salted_password(mechanism, salt, salted, 4096) == \
            from_password(mechanism, "pässword", 4096, salt=b"s" * 16)
        credential = from_password(mechanism, "pässword")
        assert password_matches(credential, mechanism, "pässword")
        assert not password_matches(credential, mechanism, "password")


def test_the_store_is_durable_private_and_holds_no_password(tmp_path):
    add_offline(tmp_path, "alice", "SCRAM-SHA-256", "alice-secret")
    add_offline(tmp_path, "alice", "SCRAM-SHA-512", "alice-secret", 8192)
    add_offline(tmp_path, "bob", "SCRAM-SHA-256", "bob-secret")
    path = tmp_path / "scram-credentials.json"
    text = path.read_text()
    assert "secret" not in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert list_offline(tmp_path) == [("alice", [("SCRAM-SHA-256", 4096),
                                                 ("SCRAM-SHA-512", 8192)]),
                                      ("bob", [("SCRAM-SHA-256", 4096)])]
    assert delete_offline(tmp_path, "alice", "SCRAM-SHA-256") == ["SCRAM-SHA-256"]
    assert delete_offline(tmp_path, "bob") == ["SCRAM-SHA-256"]
    store = ScramStore.open(tmp_path)
    assert store.users() == ["alice"] and store.lookup("alice", "SCRAM-SHA-256") is None
    assert not list(tmp_path.glob("*.tmp"))


def test_a_damaged_store_stops_the_broker_rather_than_opening_it(tmp_path):
    (tmp_path / "scram-credentials.json").write_text("{not json")
    with pytest.raises(CredentialError, match="refusing to start"):
        ScramStore.open(tmp_path)


def test_changes_over_the_wire_are_applied_in_order_once_written(tmp_path):
    store = ScramStore.open(tmp_path)

    async def run():
        credential = from_password("SCRAM-SHA-256", "x")
        await asyncio.gather(
            store.apply_async([("u", "SCRAM-SHA-256", credential)]),
            store.apply_async(deletions=[("u", "SCRAM-SHA-256")]),
            store.apply_async([("v", "SCRAM-SHA-256", credential)]))

    asyncio.run(run())
    assert store.users() == ["v"] and ScramStore.open(tmp_path).users() == ["v"]


# -- the SASL state machine -------------------------------------------------------------------

class FakeConnection:
    peer = "127.0.0.1:1"
    principal = "User:ANONYMOUS"
    auth = None

    def allow_full_requests(self) -> None:   # Connection's interface to the SASL gate
        pass


def frame(api_key: int) -> bytes:
    return api_key.to_bytes(2, "big") + b"\0\0\0\0\0\1\0\0"


@pytest.fixture
def authenticator(tmp_path):
    add_offline(tmp_path, "alice", "SCRAM-SHA-256", "alice-secret")
    settings = SecuritySettings({
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "sasl.jaas.config": 'M required user_admin="admin-secret";',
        "connection.failed.authentication.delay.ms": "0"})
    return Authenticator("SASL_SSL", settings, ScramStore.open(tmp_path))


def session_for(authenticator):
    connection = FakeConnection()
    connection.auth = authenticator.session(connection)
    return connection, connection.auth


def test_only_versions_and_handshake_before_authentication(authenticator):
    connection, session = session_for(authenticator)
    with pytest.raises(MalformedRequest, match="api key 3"):
        session.screen(frame(3))
    connection, session = session_for(authenticator)
    assert session.screen(frame(18)) is None  # ApiVersions, once, first
    with pytest.raises(MalformedRequest):
        session.screen(frame(18))
    assert session.screen(frame(17)) is None
    accepted, mechanisms = asyncio.run(session.handshake("PLAIN", 1))
    assert accepted and mechanisms == ("PLAIN", "SCRAM-SHA-256")
    with pytest.raises(MalformedRequest, match="during SASL authentication"):
        session.screen(frame(17))
    assert session.screen(frame(36)) is None
    error, _, lifetime = asyncio.run(session.authenticate(b"\0admin\0admin-secret", 2))
    assert error is None and lifetime == 0
    assert connection.principal == "User:admin"
    assert connection.auth is None  # no lifetime: nothing is checked per request any more


def test_plain_falls_back_to_the_scram_store_and_failures_close(authenticator):
    connection, session = session_for(authenticator)
    asyncio.run(session.handshake("PLAIN", 1))
    assert asyncio.run(session.authenticate(b"\0alice\0alice-secret", 2))[0] is None
    assert connection.principal == "User:alice"
    connection, session = session_for(authenticator)
    asyncio.run(session.handshake("PLAIN", 1))
    error, _, _ = asyncio.run(session.authenticate(b"\0alice\0wrong", 2))
    assert error == "Authentication failed: Invalid username or password"
    assert session.failed and connection.principal == "User:ANONYMOUS"


def test_unknown_mechanism_fails_the_session(authenticator):
    connection, session = session_for(authenticator)
    accepted, mechanisms = asyncio.run(session.handshake("SCRAM-SHA-512", 1))
    assert not accepted and session.failed and mechanisms == ("PLAIN", "SCRAM-SHA-256")


def test_scram_exchange_and_session_lifetime(tmp_path):
    from scramp import ScramClient
    add_offline(tmp_path, "alice", "SCRAM-SHA-256", "alice-secret")
    settings = SecuritySettings({"sasl.enabled.mechanisms": "SCRAM-SHA-256",
                                 "connections.max.reauth.ms": "60000"})
    connection, session = session_for(
        Authenticator("L", settings, ScramStore.open(tmp_path)))
    asyncio.run(session.handshake("SCRAM-SHA-256", 1))
    client = ScramClient(["SCRAM-SHA-256"], "alice", "alice-secret")
    error, first, _ = asyncio.run(session.authenticate(client.get_client_first().encode(), 1))
    client.set_server_first(first.decode())
    error, final, lifetime = asyncio.run(session.authenticate(
        client.get_client_final().encode(), 1))
    client.set_server_final(final.decode())  # the server proved it knows the credential too
    assert error is None and lifetime == 60000 and connection.auth is session
    assert session.screen(frame(3)) is None  # within its lifetime
    assert session.screen(frame(17)) is None  # a new SaslHandshake: re-authentication


# -- OAUTHBEARER ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def idp():
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk["kid"] = "k1"
    validator = OAuthValidator(json.dumps({"keys": [jwk]}), audience=["roster"],
                               issuer="https://idp")

    def token(key=key, **claims):
        now = int(time.time())
        body = {"sub": "carol", "exp": now + 60, "iat": now, "aud": "roster",
                "iss": "https://idp", **claims}
        return jwt.encode(body, key, algorithm="RS256", headers={"kid": "k1"})

    return validator, token


def bearer(token: str) -> bytes:
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


def test_oauthbearer_accepts_a_signed_token(idp):
    validator, token = idp
    step = OAuthBearerExchange(validator).step(bearer(token()))
    assert step.principal == "User:carol" and step.expires_at_ms > time.time() * 1000


@pytest.mark.parametrize("case", ["expired", "audience", "issuer", "other-key", "unsigned",
                                  "garbage"])
def test_oauthbearer_refusals(idp, case):
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    validator, token = idp
    if case == "expired":
        text = token(exp=int(time.time()) - 120)
    elif case == "audience":
        text = token(aud="someone-else")
    elif case == "issuer":
        text = token(iss="https://evil")
    elif case == "other-key":
        text = token(key=rsa.generate_private_key(public_exponent=65537, key_size=2048))
    elif case == "unsigned":
        text = jwt.encode({"sub": "carol", "exp": int(time.time()) + 60}, None,
                          algorithm="none")
    else:
        text = "not.a.jwt"
    exchange = OAuthBearerExchange(validator)
    challenge = exchange.step(bearer(text))
    assert challenge.principal is None and b"invalid_token" in challenge.challenge
    with pytest.raises(AuthenticationFailed):
        exchange.step(b"\x01")  # the client's answer to the error challenge ends it


def test_changes_made_beside_a_running_broker_are_seen(tmp_path):
    running = ScramStore.open(tmp_path)  # the broker's store
    add_offline(tmp_path, "late", "SCRAM-SHA-256", "x")  # `roster users --data-dir` meanwhile
    assert running.lookup("late", "SCRAM-SHA-256") is not None
    running.apply([("own", "SCRAM-SHA-256", from_password("SCRAM-SHA-256", "y"))])
    assert ScramStore.open(tmp_path).users() == ["late", "own"]  # built on the file, not lost
    (tmp_path / "scram-credentials.json").write_text("{damaged")
    assert running.users() == ["late", "own"]  # a damaged file: keep serving what was read
