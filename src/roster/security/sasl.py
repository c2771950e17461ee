"""SASL on a listener: which mechanisms it offers (Authenticator), and each connection's way
through SaslHandshake and SaslAuthenticate (SaslSession), as Kafka's SaslServerAuthenticator.

A connection on a SASL listener carries a SaslSession as `connection.auth`; the connection
shows it every request frame before dispatch (`screen`). Until authentication completes:

- ApiVersions (only as the first request) and SaslHandshake are served; after a handshake
  only SaslAuthenticate is. Anything else closes the connection, logged once, unanswered
  (Kafka: "Unexpected Kafka request of type X during SASL handshake").
- SaslHandshake v0 is followed by bare SASL tokens (a size and the bytes, no request header),
  which the session answers itself; v1 by SaslAuthenticate requests.
- A failure (unknown mechanism, wrong password, unknown user, malformed message, bad token)
  is answered after `connection.failed.authentication.delay.ms` (which slows guessing), and
  then the connection is closed; the broker logs it once, without the password.

Once authenticated, `connection.principal` is `User:<name>`. With `connections.max.reauth.ms`
(or an OAUTHBEARER token's expiry) the session has a lifetime, sent in SaslAuthenticate v1+
(KIP-368): before it ends the client re-authenticates on the same connection with a new
SaslHandshake (same mechanism, same principal); a request other than SaslHandshake after it
ends closes the connection. Without a lifetime the session detaches itself from the
connection, so an authenticated connection costs nothing per request.
"""
from __future__ import annotations

import asyncio
import logging
import struct
import time

from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import MalformedRequest
from roster.security.credentials import ScramStore
from roster.security.jaas import plain_users
from roster.security.mechanisms import (
    AuthenticationFailed,
    OAuthBearerExchange,
    OAuthValidator,
    PlainExchange,
    ScramExchange,
)
from roster.security.settings import SecuritySettings

log = logging.getLogger("roster.security")

API_VERSIONS, SASL_HANDSHAKE = ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE
SASL_AUTHENTICATE = ApiKey.SASL_AUTHENTICATE
_API_KEY = struct.Struct(">h")
_SIZE = struct.Struct(">i")

# session states
INITIAL, HANDSHAKE, AUTHENTICATE, AUTHENTICATE_V0, COMPLETE, FAILED = range(6)


class Authenticator:
    """A SASL listener's mechanisms and where their users come from."""

    def __init__(self, listener: str, settings: SecuritySettings, store: ScramStore) -> None:
        self.listener = listener
        self.store = store
        self.mechanisms: tuple[str, ...] = tuple(
            settings.get("sasl.enabled.mechanisms", listener))
        if not self.mechanisms:
            raise ValueError(f"listener {listener}: sasl.enabled.mechanisms is empty")
        self.failure_delay_s = settings.get("connection.failed.authentication.delay.ms",
                                            listener) / 1000
        self.max_token = settings.get("sasl.server.max.receive.size", listener)
        self.reauth_ms = {m: settings.get("connections.max.reauth.ms", listener, m)
                          for m in self.mechanisms}
        self.plain_users: dict[str, str] | None = None
        if "PLAIN" in self.mechanisms:
            jaas = settings.get("sasl.jaas.config", listener, "PLAIN")
            if jaas:
                self.plain_users = plain_users(jaas)
        self.oauth: OAuthValidator | None = None
        if "OAUTHBEARER" in self.mechanisms:
            url = settings.get("sasl.oauthbearer.jwks.endpoint.url", listener, "OAUTHBEARER")
            if not url:
                raise ValueError(f"listener {listener}: OAUTHBEARER needs "
                                 "sasl.oauthbearer.jwks.endpoint.url (the keys tokens are "
                                 "signed with)")
            audience = settings.get("sasl.oauthbearer.expected.audience", listener,
                                    "OAUTHBEARER")
            try:
                self.oauth = self._validator(url, listener, settings, audience)
            except Exception as exc:  # noqa: BLE001 - a missing file, a JWKS pyjwt cannot read
                raise ValueError(f"sasl.oauthbearer.jwks.endpoint.url={url}: cannot read "
                                 f"its keys ({exc})") from None

    @staticmethod
    def _validator(url: str, listener: str, settings: SecuritySettings,
                   audience: str) -> OAuthValidator:
        return OAuthValidator.from_url(
            url, audience=[a.strip() for a in audience.split(",") if a.strip()],
            issuer=settings.get("sasl.oauthbearer.expected.issuer", listener,
                                "OAUTHBEARER") or None,
            sub_claim=settings.get("sasl.oauthbearer.sub.claim.name", listener, "OAUTHBEARER"),
            clock_skew_s=settings.get("sasl.oauthbearer.clock.skew.seconds", listener,
                                      "OAUTHBEARER"))

    def exchange(self, mechanism: str):
        if mechanism == "PLAIN":
            return PlainExchange(self.plain_users, self.store)
        if mechanism.startswith("SCRAM-"):
            return ScramExchange(mechanism, self.store)
        return OAuthBearerExchange(self.oauth)

    def session(self, connection) -> SaslSession:
        return SaslSession(self, connection)


class SaslSession:
    __slots__ = ("authenticator", "connection", "state", "mechanism", "failed", "_exchange",
                 "_expires", "_reauthenticating", "_client_reauth", "authenticated_once")

    def __init__(self, authenticator: Authenticator, connection) -> None:
        self.authenticator = authenticator
        self.connection = connection
        self.state = INITIAL
        self.mechanism: str | None = None
        self.failed = False  # the answer being written is a failure: close after it
        self._exchange = None
        self._expires: float | None = None  # monotonic end of the session
        self._reauthenticating = False
        self._client_reauth = False  # the client used SaslAuthenticate v1+ (KIP-368)
        self.authenticated_once = False  # authentication.timeout.ms no longer applies

    @property
    def authenticated(self) -> bool:
        return self.state == COMPLETE

    # -- the gate -------------------------------------------------------------------------

    def screen(self, frame):
        """Called with every request frame before dispatch. None: serve it as usual; bytes or
        an awaitable: the answer to it (a bare SASL token after SaslHandshake v0). Raises
        MalformedRequest to close the connection."""
        state = self.state
        if state == AUTHENTICATE_V0:
            return self._bare_token(bytes(frame))
        if len(frame) < 2:
            raise MalformedRequest("a request too short for its header during SASL")
        api_key = _API_KEY.unpack_from(frame)[0]
        if state == COMPLETE:
            if api_key == SASL_HANDSHAKE and self._client_reauth:
                self._reauthenticating = True
                self.state = HANDSHAKE
                return None
            if self._expires is not None and time.monotonic() >= self._expires:
                raise MalformedRequest(f"SASL session of {self.connection.principal} expired "
                                       "without re-authentication (connections.max.reauth.ms)")
            return None
        if state == INITIAL:
            if api_key == API_VERSIONS:
                self.state = HANDSHAKE
                return None
            if api_key == SASL_HANDSHAKE:
                return None
        elif state == HANDSHAKE:
            if api_key == SASL_HANDSHAKE:
                return None
        elif state == AUTHENTICATE:
            if api_key == SASL_AUTHENTICATE:
                return None
            raise MalformedRequest(f"unexpected request (api key {api_key}) during SASL "
                                   "authentication")
        raise MalformedRequest(f"unexpected request (api key {api_key}) during SASL handshake "
                               f"on listener {self.authenticator.listener}")

    # -- SaslHandshake ----------------------------------------------------------------------

    @property
    def expects_handshake(self) -> bool:
        return self.state in (INITIAL, HANDSHAKE)

    async def handshake(self, mechanism: str, version: int) -> tuple[bool, tuple[str, ...]]:
        """(accepted, enabled mechanisms). A refused mechanism is answered after the failure
        delay, and the connection closed after the answer."""
        enabled = self.authenticator.mechanisms
        if self._reauthenticating and mechanism != self.mechanism:
            await self._fail(f"re-authentication with {mechanism!r} instead of "
                             f"{self.mechanism}")
            return False, enabled
        if mechanism not in enabled:
            await self._fail(f"mechanism {mechanism!r} is not enabled (enabled: "
                             f"{', '.join(enabled)})")
            return False, enabled
        self.mechanism = mechanism
        self._exchange = self.authenticator.exchange(mechanism)
        self.state = AUTHENTICATE if version >= 1 else AUTHENTICATE_V0
        return True, enabled

    # -- SaslAuthenticate -------------------------------------------------------------------

    @property
    def expects_token(self) -> bool:
        return self.state == AUTHENTICATE

    async def authenticate(self, token: bytes, version: int) -> tuple[str | None, bytes, int]:
        """(error message or None, bytes for the client, session lifetime in ms)."""
        if version >= 1:
            self._client_reauth = True
        if len(token) > self.authenticator.max_token:
            await self._fail(f"SASL token of {len(token)} bytes (sasl.server.max.receive.size)")
            return "Authentication failed: invalid request size", b"", 0
        try:
            step = await self._step(token)
        except AuthenticationFailed as failure:
            await self._fail(failure.reason)
            return failure.message, b"", 0
        if step.principal is None:
            return None, step.challenge, 0
        lifetime = self._complete(step)
        if self.failed:
            await self._delay()
            return (f"Cannot change principals during re-authentication from "
                    f"{self.connection.principal}: {step.principal}"), b"", 0
        return None, step.challenge, lifetime

    async def _step(self, token: bytes):
        if self.mechanism == "PLAIN":
            # checking a password against the SCRAM store iterates a hash: off the loop
            return await asyncio.to_thread(self._exchange.step, token)
        return self._exchange.step(token)

    def _complete(self, step) -> int:
        previous = self.connection.principal if self._reauthenticating else None
        if previous is not None and previous != step.principal:
            self.failed = True
            self.state = FAILED
            log.warning("closing connection from %s: re-authentication as %s, was %s",
                        self.connection.peer, step.principal, previous)
            return 0
        now_ms = time.time() * 1000
        reauth_ms = self.authenticator.reauth_ms.get(self.mechanism, 0)
        lifetime = 0
        if step.expires_at_ms is not None or reauth_ms > 0:
            candidates = []
            if reauth_ms > 0:
                candidates.append(reauth_ms)
            if step.expires_at_ms is not None:
                candidates.append(max(0, int(step.expires_at_ms - now_ms)))
            lifetime = min(candidates)
            self._expires = time.monotonic() + lifetime / 1000
        else:
            self._expires = None
        self.state = COMPLETE
        if not self.authenticated_once:  # requests may now be as large as the broker allows
            self.connection.allow_full_requests()
        self.authenticated_once = True
        self._exchange = None
        if not self._reauthenticating:
            log.info("%s authenticated as %s with %s on listener %s", self.connection.peer,
                     step.principal, self.mechanism, self.authenticator.listener)
        self._reauthenticating = False
        self.connection.principal = step.principal
        if self._expires is None:  # nothing more to check on this connection: detach
            self.connection.auth = None
        return lifetime

    # -- SaslHandshake v0: bare tokens -------------------------------------------------------

    def _bare_token(self, frame: bytes):
        async def answer():
            if len(frame) > self.authenticator.max_token:
                await self._fail(f"SASL token of {len(frame)} bytes")
                return None
            try:
                step = await self._step(frame)
            except AuthenticationFailed as failure:
                await self._fail(failure.reason)  # v0 has no way to say why: just close
                return None
            if step.principal is not None:
                self._complete(step)
                if self.failed:
                    await self._delay()
                    return None
            return _SIZE.pack(len(step.challenge)) + step.challenge
        return answer()

    # -- failure ------------------------------------------------------------------------------

    async def _fail(self, reason: str) -> None:
        self.failed = True
        self.state = FAILED
        log.warning("authentication failed for %s on listener %s (%s): %s",
                    self.connection.peer, self.authenticator.listener,
                    self.mechanism or "no mechanism", reason)
        await self._delay()

    async def _delay(self) -> None:
        await asyncio.sleep(self.authenticator.failure_delay_s)
