"""SASL mechanisms, server side: bytes from the client in, a challenge or a principal out.

Each exchange is an object with `step(token) -> Step`; it raises AuthenticationFailed with the
message the client may see (never a password, never whether the user exists) and, separately,
the reason for the broker's log. They know nothing of Kafka's APIs (sasl.py does that).

- PLAIN (RFC 4616): users from the listener's JAAS `user_NAME="..."` options, else the SCRAM
  store (the password is checked against the stored keys).
- SCRAM-SHA-256/512 (RFC 5802, through `scramp`): stored keys from the SCRAM store. An unknown
  user is run through the exchange with a throw-away credential, so a client cannot tell an
  unknown user from a wrong password.
- OAUTHBEARER (RFC 7628): a JWT signed by a key in the configured JWKS, checked with `pyjwt`
  (signature, exp, nbf, iat, audience, issuer); the principal is its `sub` claim.
"""
from __future__ import annotations

import hmac
import json
import os
import time

from roster.frozen import frozen
from roster.security.credentials import HASHES, ScramCredential, ScramStore, password_matches


class AuthenticationFailed(Exception):
    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.message = message  # for the client
        self.reason = reason    # for the log


@frozen
class Step:
    challenge: bytes
    principal: str | None = None  # set when the exchange is complete
    expires_at_ms: int | None = None  # the credential's own end (OAUTHBEARER's exp)


def _invalid(mechanism: str) -> str:
    return (f"Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {mechanism}")


# -- PLAIN ------------------------------------------------------------------------------------

_DUMMY_CREDENTIAL = ScramCredential(os.urandom(32), os.urandom(64), os.urandom(64), 4096)


class PlainExchange:
    mechanism = "PLAIN"
    MESSAGE = "Authentication failed: Invalid username or password"

    def __init__(self, jaas_users: dict[str, str] | None, store: ScramStore) -> None:
        self._jaas_users = jaas_users
        self._store = store

    def step(self, token: bytes) -> Step:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens",
                                       "malformed PLAIN message")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise AuthenticationFailed(self.MESSAGE, "PLAIN message is not UTF-8") from None
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified",
                                       "PLAIN without a user name")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified",
                                       f"PLAIN without a password for user {user!r}")
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username", f"user {user!r} asked to act as {authzid!r}")
        if not self._check(user, password):
            raise AuthenticationFailed(self.MESSAGE, f"wrong password or unknown user {user!r}")
        return Step(b"", principal=f"User:{user}")

    def _check(self, user: str, password: str) -> bool:
        if self._jaas_users is not None and user in self._jaas_users:
            return hmac.compare_digest(self._jaas_users[user].encode(), password.encode())
        for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
            credential = self._store.lookup(user, mechanism)
            if credential is not None:
                return password_matches(credential, mechanism, password)
        # an unknown user costs the same hashing as a known one: time tells nothing either
        password_matches(_DUMMY_CREDENTIAL, "SCRAM-SHA-512", password)
        return False


# -- SCRAM ------------------------------------------------------------------------------------

_UNKNOWN_USER_KEY = os.urandom(32)


class ScramExchange:
    def __init__(self, mechanism: str, store: ScramStore) -> None:
        from scramp import ScramMechanism
        self.mechanism = mechanism
        self._store = store
        self._scram = ScramMechanism(mechanism)
        self._server = None
        self._user: str | None = None
        self._known = True

    def _credentials(self, user: str):
        self._user = user
        credential = self._store.lookup(user, self.mechanism)
        if credential is None:
            # an unknown user fails at the proof like a wrong password does
            self._known = False
            # a salt that is the same at every try (as a real user's is) but that nobody can
            # compute, of the length roster's own salts have: it tells nothing either
            salt = hmac.new(_UNKNOWN_USER_KEY, user.encode(), "sha256").digest()
            size = len(hmac.new(b"k", b"", HASHES[self.mechanism]).digest())
            return salt, os.urandom(size), os.urandom(size), 4096
        return credential.salt, credential.stored_key, credential.server_key, \
            credential.iterations

    def _accept_kafka_nonce(self, client_final: str) -> None:
        """Kafka's ScramSaslServer accepts a client-final nonce that *ends with* the nonce of
        its server-first message, and librdkafka before 2.1 (kcat 1.7) sends its own nonce in
        front of it again. scramp wants equality: tell it the nonce the client used. The
        proof is still checked over exactly the messages the client signed, and the nonce
        still ends with this server's fresh one."""
        nonce = _client_final_nonce(client_final)
        expected = str(self._server.nonce)
        if nonce and nonce != expected and nonce.endswith(expected):
            from scramp.core import Nonce
            self._server.nonce = Nonce(nonce)

    def step(self, token: bytes) -> Step:
        from scramp import ScramException
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed(_invalid(self.mechanism),
                                       f"{self.mechanism} message is not UTF-8") from None
        try:
            if self._server is None:
                if ",a=" in text.split(",n=", 1)[0] and not text.startswith("n,,"):
                    raise AuthenticationFailed(_invalid(self.mechanism),
                                               "SCRAM authorization ids are not supported")
                self._server = self._scram.make_server(self._credentials)
                self._server.set_client_first(_without_extensions(text))
                return Step(self._server.get_server_first().encode())
            self._accept_kafka_nonce(text)
            self._server.set_client_final(text)
            final = self._server.get_server_final()
        except ScramException as exc:
            if self._user is not None and (not self._known or "proof" in str(exc).lower()):
                reason = (f"unknown user {self._user!r}" if not self._known
                          else f"wrong password for user {self._user!r}")
            else:
                reason = f"malformed {self.mechanism} message ({exc})"
            raise AuthenticationFailed(_invalid(self.mechanism), reason) from None
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise AuthenticationFailed(_invalid(self.mechanism),
                                       f"malformed {self.mechanism} message ({exc})") from None
        if not self._known:  # unreachable in practice: the proof cannot match random keys
            raise AuthenticationFailed(_invalid(self.mechanism), f"unknown user {self._user!r}")
        return Step(final.encode(), principal=f"User:{self._user}")


def _client_final_nonce(text: str) -> str | None:
    for field in text.split(","):
        if field.startswith("r="):
            return field[2:]
    return None


def _without_extensions(client_first: str) -> str:
    """Kafka's SCRAM client-first message may carry extensions (`tokenauth=true` for delegation
    tokens) after the nonce; roster has no delegation tokens, so a tokenauth extension fails
    the proof like any wrong credential, and other extensions are dropped before scramp, which
    knows none."""
    head, sep, bare = client_first.partition(",,")
    if not sep:
        return client_first
    fields = bare.split(",")
    kept = [f for f in fields if f[:2] in ("n=", "r=", "m=")]
    return head + sep + ",".join(kept)


# -- OAUTHBEARER ------------------------------------------------------------------------------

# the algorithms each JWK key type may sign with
_FAMILIES = {"RSA": ("RS", "PS"), "EC": ("ES",), "oct": ("HS",), "OKP": ("EdDSA",)}


class OAuthValidator:
    """Checks signed JWTs against the keys of a JWKS (`sasl.oauthbearer.jwks.endpoint.url`,
    a file: URL or an https: one read at start), as Kafka's OAuthBearerValidatorCallbackHandler
    does."""

    def __init__(self, jwks_json: str, audience: list[str], issuer: str | None,
                 sub_claim: str = "sub", clock_skew_s: int = 30) -> None:
        import jwt
        self._jwt = jwt
        self.keys = jwt.PyJWKSet.from_json(jwks_json)
        self.audience = audience or None
        self.issuer = issuer or None
        self.sub_claim = sub_claim
        self.clock_skew_s = clock_skew_s

    @classmethod
    def from_url(cls, url: str, **kwargs) -> OAuthValidator:
        if url.startswith("file:"):
            from urllib.parse import unquote, urlparse
            path = unquote(urlparse(url).path)
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        elif url.startswith(("https:", "http:")):
            from urllib.request import urlopen
            with urlopen(url, timeout=10) as response:  # noqa: S310 - an https/http URL
                text = response.read().decode("utf-8")
        else:
            raise ValueError(f"sasl.oauthbearer.jwks.endpoint.url={url}: use a file: or "
                             "https: URL")
        return cls(text, **kwargs)

    def validate(self, token: str) -> tuple[str, int]:
        """(principal name, expiry in ms) of a valid token; raises AuthenticationFailed."""
        jwt = self._jwt
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise AuthenticationFailed("invalid_token", f"not a JWT ({exc})") from None
        kid = header.get("kid")
        candidates = [k for k in self.keys.keys if kid is None or k.key_id == kid]
        if not candidates:
            raise AuthenticationFailed("invalid_token", f"no key with id {kid!r} in the JWKS")
        alg = header.get("alg")
        if not alg or alg == "none":
            raise AuthenticationFailed("invalid_token", "unsigned token")
        last_error = None
        for key in candidates:
            if not alg.startswith(_FAMILIES.get(key.key_type, ("-",))):
                continue  # never HS256 with an RSA key's bytes, and so on
            try:
                claims = jwt.decode(
                    token, key.key, algorithms=[alg], audience=self.audience,
                    issuer=self.issuer, leeway=self.clock_skew_s,
                    options={"require": ["exp", self.sub_claim],
                             "verify_aud": self.audience is not None})
            except jwt.PyJWTError as exc:
                last_error = exc
                continue
            subject = claims.get(self.sub_claim)
            if not isinstance(subject, str) or not subject:
                raise AuthenticationFailed("invalid_token", f"no {self.sub_claim} claim")
            return subject, int(claims["exp"]) * 1000
        raise AuthenticationFailed("invalid_token", f"token refused: {last_error}")


class OAuthBearerExchange:
    """RFC 7628's client response: `n,[a=authzid],` \\x01 `auth=Bearer <jwt>` \\x01 ... \\x01\\x01.
    A refused token is answered with an error JSON challenge; the client's \\x01 that follows
    ends the exchange as a failure (Kafka's OAuthBearerSaslServer does the same)."""

    mechanism = "OAUTHBEARER"

    def __init__(self, validator: OAuthValidator | None) -> None:
        self._validator = validator
        self._error: AuthenticationFailed | None = None

    def step(self, token: bytes) -> Step:
        if self._error is not None:
            error, self._error = self._error, None
            raise AuthenticationFailed(f"Authentication failed: {error.message}", error.reason)
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed("Authentication failed: invalid OAUTHBEARER message",
                                       "OAUTHBEARER message is not UTF-8") from None
        gs2, sep, rest = text.partition("\x01")
        if not sep or not gs2.startswith(("n,", "y,")):
            raise AuthenticationFailed("Authentication failed: invalid OAUTHBEARER message",
                                       "malformed OAUTHBEARER message")
        authzid = None
        for part in gs2.split(",")[1:]:
            if part.startswith("a="):
                authzid = part[2:]
        pairs = {}
        for item in rest.split("\x01"):
            if item:
                key, eq, value = item.partition("=")
                if not eq:
                    raise AuthenticationFailed("Authentication failed: invalid OAUTHBEARER "
                                               "message", "malformed OAUTHBEARER key/value")
                pairs[key] = value
        scheme, _, jwt_text = pairs.get("auth", "").partition(" ")
        if scheme.lower() != "bearer" or not jwt_text:
            raise AuthenticationFailed("Authentication failed: invalid OAUTHBEARER message",
                                       "OAUTHBEARER without a bearer token")
        try:
            if self._validator is None:
                raise AuthenticationFailed("invalid_token", "no JWKS configured")
            subject, expires_ms = self._validator.validate(jwt_text.strip())
            if authzid and authzid != subject:
                raise AuthenticationFailed("invalid_token",
                                           f"authorization id {authzid!r} is not the subject")
        except AuthenticationFailed as failure:
            self._error = failure
            return Step(json.dumps({"status": "invalid_token"}).encode())
        if expires_ms <= time.time() * 1000:
            raise AuthenticationFailed("Authentication failed: token expired", "expired token")
        return Step(b"", principal=f"User:{subject}", expires_at_ms=expires_ms)
