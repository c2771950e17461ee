"""The client side of TLS and SASL, shared by the clients roster ships: roster.client (asyncio),
the blocking admin client behind the `roster` CLI, and the Spark connector.

Settings use librdkafka's names; Kafka's Java client names (what `--command-config` files and
Spark jobs carry) map onto them:

    security.protocol           PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    ssl.ca.location             ssl.truststore.location (PEM)     trusted CA certificates
    ssl.ca.pem                  ssl.truststore.certificates       ... as PEM text
    ssl.certificate.location    ssl.keystore.location (PEM)       client certificate chain
                                                                  (a keystore file may hold
                                                                  the key as well)
    ssl.certificate.pem         ssl.keystore.certificate.chain    ... as PEM text
    ssl.key.location                                              its private key
    ssl.key.pem                 ssl.keystore.key                  ... as PEM text
    ssl.key.password            ssl.keystore.password             an encrypted key's password
    ssl.endpoint.identification.algorithm  https (check the broker's name) | none / empty
    sasl.mechanism(s)           sasl.mechanism                    PLAIN, SCRAM-SHA-256/512
    sasl.username, sasl.password  sasl.jaas.config (PlainLoginModule / ScramLoginModule
                                  required username="..." password="...";)

A secret (a password, a private key, a JAAS entry) never appears in an error, a repr or a log
line: errors name the setting, not its value.

The SASL exchange is written once, as a generator of requests (`sasl_conversation`), and run by
the asyncio connection and by the blocking one alike.
"""
from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36

# Kafka's Java client names -> librdkafka's (the latter win when both are given)
JAVA_NAMES = {
    "ssl.truststore.location": "ssl.ca.location",
    "ssl.truststore.certificates": "ssl.ca.pem",
    "ssl.keystore.location": "ssl.certificate.location",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
    "ssl.keystore.key": "ssl.key.pem",
    "ssl.keystore.password": "ssl.key.password",
    "sasl.mechanisms": "sasl.mechanism",
}
NAMES = ("security.protocol", "ssl.ca.location", "ssl.ca.pem", "ssl.certificate.location",
         "ssl.certificate.pem", "ssl.key.location", "ssl.key.pem", "ssl.key.password",
         "ssl.endpoint.identification.algorithm", "ssl.truststore.type", "ssl.keystore.type",
         "sasl.mechanism", "sasl.username", "sasl.password", "sasl.jaas.config")
# every key from_config reads (a caller may pick these out of a larger set of options)
KEYS = NAMES + tuple(JAVA_NAMES)


class SecurityConfigError(ValueError):
    """A security setting is missing or wrong; the message names the setting, never a secret."""


class SecurityError(Exception):
    """Connecting securely failed: TLS (TlsError) or SASL (AuthenticationError)."""


class TlsError(SecurityError):
    pass


class AuthenticationError(SecurityError):
    pass


@dataclass(frozen=True)
class ClientSecurity:
    """How a client connects: picklable (the Spark connector ships it to executors); secrets
    are left out of repr()."""

    protocol: str = "PLAINTEXT"
    ca_location: str | None = None
    ca_pem: str | None = field(default=None, repr=False)
    certificate_location: str | None = None
    certificate_pem: str | None = field(default=None, repr=False)
    key_location: str | None = None
    key_pem: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    # the names the settings were given under (errors speak the user's dialect)
    spelled: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)

    def _name(self, name: str) -> str:
        return dict(self.spelled).get(name, name)

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> ClientSecurity:
        """From librdkafka-named (or Java-named) settings; other keys are ignored."""
        values: dict[str, str] = {}
        spelled: dict[str, str] = {}
        for key, raw in (config or {}).items():
            if raw is None:
                continue
            name = JAVA_NAMES.get(key, key)
            if name in NAMES and (name not in values or key == name):
                values[name] = str(raw)
                spelled[name] = key
        protocol = values.get("security.protocol", "PLAINTEXT").strip().upper()
        if protocol not in PROTOCOLS:
            raise SecurityConfigError(f"security.protocol={protocol}: use one of "
                                      f"{', '.join(PROTOCOLS)}")
        for key in ("ssl.truststore.type", "ssl.keystore.type"):
            kind = values.get(key, "PEM").strip().upper()
            if kind != "PEM":
                raise SecurityConfigError(f"{key}={kind}: roster's clients read PEM files only "
                                          "(convert a JKS or PKCS12 store with keytool/openssl)")
        identification = values.get("ssl.endpoint.identification.algorithm", "https")
        settings: dict[str, Any] = {
            "protocol": protocol,
            "ca_location": values.get("ssl.ca.location") or None,
            "ca_pem": values.get("ssl.ca.pem") or None,
            "certificate_location": values.get("ssl.certificate.location") or None,
            "certificate_pem": values.get("ssl.certificate.pem") or None,
            "key_location": values.get("ssl.key.location") or None,
            "key_pem": values.get("ssl.key.pem") or None,
            "key_password": values.get("ssl.key.password") or None,
            "check_hostname": identification.strip().lower() not in ("", "none"),
            "spelled": tuple((k, v) for k, v in spelled.items() if k != v),
        }
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            settings.update(_sasl_settings(values))
        return cls(**settings)

    # -- TLS -------------------------------------------------------------------------------------

    def ssl_context(self) -> ssl.SSLContext:
        """The client's SSLContext: the broker's certificate must chain to ssl.ca.location (the
        system's CAs when no CA is given, as librdkafka) and, unless
        ssl.endpoint.identification.algorithm is empty or none, name the host connected to."""
        try:
            if self.ca_location or self.ca_pem:
                context = ssl.create_default_context(cafile=self.ca_location,
                                                     cadata=self.ca_pem)
            else:
                context = ssl.create_default_context()
        except FileNotFoundError:
            raise SecurityConfigError(f"{self._name('ssl.ca.location')}={self.ca_location}: "
                                      "no such file") from None
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise SecurityConfigError(f"{self._name('ssl.ca.location')}: no usable CA certificate "
                                      f"({getattr(exc, 'reason', None) or exc}); PEM expected "
                                      "(keytool -exportcert -rfc turns a JKS entry into PEM)") \
                from None
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if not self.check_hostname:
            context.check_hostname = False
        if self.certificate_location or self.certificate_pem:
            self._load_chain(context)
        elif self.key_location or self.key_pem:
            raise SecurityConfigError("ssl.key.location is set without ssl.certificate.location")
        return context

    def _load_chain(self, context: ssl.SSLContext) -> None:
        where = (self._name("ssl.certificate.location") if not self.key_location
                 else "ssl.certificate.location / ssl.key.location")
        if self.certificate_pem or self.key_pem:
            # load_cert_chain reads files only: PEM text goes through a private temporary file
            fd, path = tempfile.mkstemp(prefix="roster-client-", suffix=".pem")
            try:
                with os.fdopen(fd, "w", encoding="ascii") as handle:
                    for part in (self.key_pem, self.certificate_pem):
                        if part:
                            handle.write(part.strip() + "\n")
                self._load(context, self.certificate_location or path,
                           self.key_location or (path if self.key_pem else None),
                           "ssl.certificate.pem / ssl.key.pem")
            finally:
                os.unlink(path)
            return
        self._load(context, self.certificate_location, self.key_location, where)

    def _load(self, context, certificate: str, key: str | None, where: str) -> None:
        for name, path in (("ssl.certificate.location", certificate), ("ssl.key.location", key)):
            if path and not os.path.exists(path):
                raise SecurityConfigError(f"{self._name(name)}={path}: no such file")
        try:
            context.load_cert_chain(certificate, key, password=self.key_password)
        except (ssl.SSLError, OSError) as exc:
            raise SecurityConfigError(f"{where}: not a usable certificate and private key "
                                      f"({getattr(exc, 'reason', None) or exc}; an encrypted "
                                      "key needs ssl.key.password)") from None


def _sasl_settings(values: dict[str, str]) -> dict[str, Any]:
    mechanism = values.get("sasl.mechanism", "").strip().upper()
    if not mechanism:
        raise SecurityConfigError("sasl.mechanism: set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 "
                                  "(roster's clients have no GSSAPI, Kafka's default)")
    if mechanism not in MECHANISMS:
        raise SecurityConfigError(f"sasl.mechanism={mechanism}: roster's clients speak "
                                  f"{', '.join(MECHANISMS)}")
    username, password = values.get("sasl.username"), values.get("sasl.password")
    jaas = values.get("sasl.jaas.config")
    if (username is None or password is None) and jaas:
        from roster.security.jaas import JaasError, client_credentials, parse_jaas
        try:
            modules = [entry.module.rsplit(".", 1)[-1] for entry in parse_jaas(jaas)]
            jaas_user, jaas_password = client_credentials(jaas)
        except JaasError as exc:
            raise SecurityConfigError(str(exc)) from None
        expected = "PlainLoginModule" if mechanism == "PLAIN" else "ScramLoginModule"
        if expected not in modules:
            raise SecurityConfigError(f"sasl.jaas.config: sasl.mechanism={mechanism} needs "
                                      f"{expected} (found {', '.join(modules)})")
        username = jaas_user if username is None else username
        password = jaas_password if password is None else password
    if not username:
        raise SecurityConfigError(f"SASL {mechanism} needs sasl.username and sasl.password "
                                  "(or sasl.jaas.config with username and password)")
    if not password:
        raise SecurityConfigError(f"SASL {mechanism} needs sasl.password for user {username}")
    return {"mechanism": mechanism, "username": username, "password": password}


def tls_failure(exc: BaseException, where: str) -> TlsError:
    """A clear TlsError for a failed TLS handshake (or a TLS alert right after it)."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        reason = exc.verify_message or exc.reason or str(exc)
        if "hostname" in reason.lower() or "ip address mismatch" in reason.lower():
            hint = ("its certificate does not name this host (ssl.endpoint.identification."
                    "algorithm=none turns the check off)")
        else:
            hint = "ssl.ca.location must hold the CA that signed the broker's certificate"
        return TlsError(f"TLS handshake with {where} failed: the broker's certificate is not "
                        f"trusted ({reason}); {hint}")
    if not isinstance(exc, ssl.SSLError):  # closed without a TLS alert we could read
        return TlsError(f"TLS handshake with {where} failed: the broker closed the connection "
                        "before answering; it refused this client's certificate or wanted "
                        "one (ssl.certificate.location and ssl.key.location), or it is not a "
                        "TLS listener")
    reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
    lowered = reason.lower()
    if "certificate required" in lowered or "handshake failure" in lowered \
            or "unknown ca" in lowered or "bad certificate" in lowered \
            or "certificate expired" in lowered:
        hint = ("the broker refused this client's certificate (or wanted one: "
                "ssl.certificate.location and ssl.key.location)")
    elif "eof" in lowered or "wrong version" in lowered or "record layer" in lowered:
        hint = "is this a TLS listener? (security.protocol SSL or SASL_SSL needs one)"
    else:
        hint = "see the broker's log"
    return TlsError(f"TLS handshake with {where} failed: {reason}; {hint}")


# -- SASL ----------------------------------------------------------------------------------------

class _Exchange:
    """The client's half of one SASL mechanism: first() and then step(challenge) until None."""

    def __init__(self, security: ClientSecurity) -> None:
        self.mechanism = security.mechanism
        self._scram = None
        if self.mechanism == "PLAIN":
            self._first = b"\x00" + security.username.encode() + b"\x00" \
                + security.password.encode()
        else:
            from scramp import ScramClient
            self._scram = ScramClient([self.mechanism], security.username, security.password)
            self._first = self._scram.get_client_first().encode()
        self._stage = 0

    def first(self) -> bytes:
        return self._first

    def step(self, challenge: bytes) -> bytes | None:
        """The next token, or None once the exchange is complete."""
        if self._scram is None:
            return None  # PLAIN: one message, answered with nothing
        from scramp import ScramException
        self._stage += 1
        try:
            if self._stage == 1:
                self._scram.set_server_first(challenge.decode("utf-8"))
                return self._scram.get_client_final().encode()
            self._scram.set_server_final(challenge.decode("utf-8"))
            return None
        except (ScramException, UnicodeDecodeError, ValueError) as exc:
            raise AuthenticationError(f"the broker's {self.mechanism} answer is not valid: "
                                      f"{exc}") from None


Request = tuple[int, int, dict]


def sasl_conversation(security: ClientSecurity, versions: Mapping[int, int],
                      where: str) -> Generator[Request, Any, int]:
    """SaslHandshake v1 then SaslAuthenticate: yields (api_key, version, fields) requests and is
    sent each decoded answer; returns the session lifetime in ms (0: none, KIP-368). Raises
    AuthenticationError naming the mechanism, the user and the broker's reason."""
    from roster.protocol.errors import ErrorCode
    mechanism, user = security.mechanism, security.username
    if SASL_HANDSHAKE not in versions or versions[SASL_HANDSHAKE] < 1 \
            or SASL_AUTHENTICATE not in versions:
        raise AuthenticationError(f"{where} does not offer SaslHandshake v1 and "
                                  "SaslAuthenticate (Kafka 1.0 or later)")
    answer = yield SASL_HANDSHAKE, 1, {"mechanism": mechanism}
    if answer.error_code is ErrorCode.unsupported_sasl_mechanism:
        raise AuthenticationError(
            f"{where} does not offer SASL mechanism {mechanism} (it offers "
            f"{', '.join(answer.mechanisms) or 'none'}): set sasl.mechanism to one of those")
    if answer.error_code is ErrorCode.illegal_sasl_state:
        raise AuthenticationError(f"{where} is not a SASL listener (SaslHandshake: "
                                  "ILLEGAL_SASL_STATE); check security.protocol")
    if answer.error_code is not ErrorCode.none:
        raise AuthenticationError(f"SaslHandshake with {where} failed: "
                                  f"{answer.error_code.name}")
    version = min(versions[SASL_AUTHENTICATE], 2)
    exchange = _Exchange(security)
    token: bytes | None = exchange.first()
    lifetime = 0
    while token is not None:
        answer = yield SASL_AUTHENTICATE, version, {"auth_bytes": token}
        if answer.error_code is not ErrorCode.none:
            reason = answer.error_message or answer.error_code.name
            raise AuthenticationError(f"SASL {mechanism} authentication as user {user!r} with "
                                      f"{where} failed: {reason}")
        lifetime = _milliseconds(getattr(answer, "session_lifetime", None))
        token = exchange.step(bytes(answer.auth_bytes or b""))
    return lifetime


def _milliseconds(value) -> int:
    """SaslAuthenticate v1+'s session lifetime (a timedelta in the codec; 0: none)."""
    if value is None:
        return 0
    if hasattr(value, "total_seconds"):
        return max(0, int(value.total_seconds() * 1000))
    return max(0, int(value))


def run_conversation(conversation: Generator[Request, Any, int], call) -> int:
    """Drive a conversation with a blocking call(api_key, version, fields) -> answer."""
    try:
        request = next(conversation)
        while True:
            request = conversation.send(call(*request))
    except StopIteration as stop:
        return stop.value


async def run_conversation_async(conversation: Generator[Request, Any, int], call) -> int:
    """Drive a conversation with an async call(api_key, version, fields) -> answer."""
    try:
        request = next(conversation)
        while True:
            request = conversation.send(await call(*request))
    except StopIteration as stop:
        return stop.value


def read_properties(path: str) -> dict[str, str]:
    """A Java properties file, as Kafka's tools read `--command-config`: `key=value` or
    `key: value` or `key value`, `#`/`!` comments, a trailing backslash continues the line
    (a multi-line sasl.jaas.config), backslash escapes."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SecurityConfigError(f"cannot read {path}: "
                                  f"{getattr(exc, 'strerror', None) or exc}") from None
    logical, pending = [], None
    for line in lines:
        text = line.lstrip()
        if pending is None and (not text or text[0] in "#!"):
            continue
        trailing = len(text) - len(text.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + text[:-1]
            continue
        logical.append((pending or "") + text)
        pending = None
    if pending is not None:
        logical.append(pending)
    properties = {}
    for text in logical:
        key, i = [], 0
        while i < len(text) and text[i] not in "=: \t":
            if text[i] == "\\" and i + 1 < len(text):
                i += 1
            key.append(text[i])
            i += 1
        rest = text[i:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        properties["".join(key)] = _unescape(rest)
    return properties


def _unescape(text: str) -> str:
    out, i = [], 0
    escapes = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            i += 1
            nxt = text[i]
            if nxt == "u" and len(text) >= i + 5:
                try:
                    out.append(chr(int(text[i + 1:i + 5], 16)))
                    i += 5
                    continue
                except ValueError:
                    pass
            out.append(escapes.get(nxt, nxt))
        else:
            out.append(char)
        i += 1
    return "".join(out)
