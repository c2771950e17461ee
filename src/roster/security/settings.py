"""The security settings, under Kafka's names, and how one listener sees them.

Kafka reads a security setting first as `listener.name.<listener>.<key>` (the listener's name
in lower case; for SASL mechanism settings also `listener.name.<listener>.<mechanism>.<key>`)
and then as the broker-wide `<key>`. `SecuritySettings.get(key, listener)` does the same, so a
Kafka server.properties carries over.

This module imports nothing from the rest of roster (config.py imports it): values are checked
here and a bad one raises ValueError naming the key, which config.py turns into ConfigError.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from roster.frozen import frozen

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
LISTENER_PREFIX = "listener.name."


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError("expected true or false")


def choice(*allowed: str) -> Callable[[str], str]:
    """A name from a fixed list, case-insensitive, as Kafka's enum-valued settings (the broker
    config's table uses it too)."""
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return value
    return parse


def _upper_choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().upper()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return value
    return parse


def _mechanisms(text: str) -> tuple[str, ...]:
    names = tuple(m.strip().upper() for m in text.split(",") if m.strip())
    for name in names:
        if name not in MECHANISMS:
            raise ValueError(f"unsupported SASL mechanism {name} (roster has "
                             f"{', '.join(MECHANISMS)})")
    return names


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must be at least 0")
    return value


def _tls_versions(text: str) -> tuple[str, ...]:
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    for name in names:
        if name not in ("TLSv1.2", "TLSv1.3"):
            raise ValueError(f"{name}: roster serves TLSv1.2 and TLSv1.3 only")
    if not names:
        raise ValueError("name at least one of TLSv1.2, TLSv1.3")
    return names


AUTHORIZER_CLASSES = ("org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                      "kafka.security.authorizer.AclAuthorizer",
                      "kafka.security.auth.SimpleAclAuthorizer")


def _authorizer_class(text: str) -> str:
    value = text.strip()
    if value and value not in AUTHORIZER_CLASSES:
        raise ValueError(f"roster's authorizer is Kafka's StandardAuthorizer ({AUTHORIZER_CLASSES[0]}"
                         "; AclAuthorizer's names are accepted too)")
    return value


@frozen
class SecuritySetting:
    name: str
    default: Any
    parse: Callable[[str], Any] = str
    doc: str = ""
    sensitive: bool = False  # never logged, never shown

    def coerce(self, raw: Any) -> Any:
        if not isinstance(raw, str):
            return raw
        try:
            return self.parse(raw)
        except ValueError as exc:
            shown = "[hidden]" if self.sensitive else repr(raw)
            raise ValueError(f"{self.name}={shown}: {exc}") from None


SECURITY_SETTINGS: dict[str, SecuritySetting] = {s.name: s for s in [
    SecuritySetting("listeners", "", doc="NAME://host:port,... (default: PLAINTEXT on --host "
                    "and --port)"),
    SecuritySetting("listener.security.protocol.map",
                    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
                    doc="listener name -> security protocol"),
    SecuritySetting("ssl.keystore.type", "PEM", _upper_choice("PEM")),
    SecuritySetting("ssl.keystore.location", "", doc="PEM file with the private key and the "
                    "certificate chain"),
    SecuritySetting("ssl.keystore.certificate.chain", "", doc="the certificate chain itself "
                    "(PEM text), with ssl.keystore.key"),
    SecuritySetting("ssl.keystore.key", "", doc="the private key itself (PEM text)",
                    sensitive=True),
    SecuritySetting("ssl.key.password", "", doc="password of an encrypted private key",
                    sensitive=True),
    SecuritySetting("ssl.keystore.password", "", sensitive=True),
    SecuritySetting("ssl.truststore.type", "PEM", _upper_choice("PEM")),
    SecuritySetting("ssl.truststore.location", "", doc="PEM file of trusted CA certificates"),
    SecuritySetting("ssl.truststore.certificates", "", doc="trusted CA certificates (PEM text)"),
    SecuritySetting("ssl.truststore.password", "", sensitive=True),
    SecuritySetting("ssl.client.auth", "none", choice("required", "requested", "none"),
                    doc="client certificates on SSL listeners (SASL_SSL: only per listener)"),
    SecuritySetting("ssl.principal.mapping.rules", "DEFAULT",
                    doc="RULE:pattern/replacement/[LU],...,DEFAULT"),
    SecuritySetting("ssl.enabled.protocols", ("TLSv1.2", "TLSv1.3"), _tls_versions),
    SecuritySetting("ssl.protocol", "TLSv1.3", doc="accepted for compatibility; "
                    "ssl.enabled.protocols decides"),
    SecuritySetting("ssl.cipher.suites", "", doc="OpenSSL cipher list for TLSv1.2"),
    SecuritySetting("ssl.endpoint.identification.algorithm", "https",
                    doc="a client-side setting; accepted and ignored by the broker"),
    SecuritySetting("sasl.enabled.mechanisms", ("SCRAM-SHA-256", "SCRAM-SHA-512"), _mechanisms,
                    doc="Kafka's default is GSSAPI, which roster does not have"),
    SecuritySetting("sasl.mechanism.inter.broker.protocol", "PLAIN",
                    doc="accepted for compatibility (one broker)"),
    SecuritySetting("sasl.jaas.config", "", doc="JAAS entry; PLAIN users as user_NAME=\"...\"",
                    sensitive=True),
    SecuritySetting("sasl.server.max.receive.size", 524288, _non_negative,
                    doc="largest SASL token before authentication"),
    SecuritySetting("connections.max.reauth.ms", 0, _non_negative,
                    doc="session lifetime (KIP-368); 0: sessions never expire"),
    SecuritySetting("connection.failed.authentication.delay.ms", 100, _non_negative,
                    doc="delay before a failed authentication is answered and closed"),
    SecuritySetting("sasl.oauthbearer.jwks.endpoint.url", "",
                    doc="JWKS with the keys OAUTHBEARER tokens are signed with (file: URL)"),
    SecuritySetting("sasl.oauthbearer.expected.audience", "", doc="comma-separated"),
    SecuritySetting("sasl.oauthbearer.expected.issuer", ""),
    SecuritySetting("sasl.oauthbearer.sub.claim.name", "sub"),
    SecuritySetting("sasl.oauthbearer.scope.claim.name", "scope"),
    SecuritySetting("sasl.oauthbearer.clock.skew.seconds", 30, _non_negative),
    SecuritySetting("authorizer.class.name", "", _authorizer_class,
                    doc="org.apache.kafka.metadata.authorizer.StandardAuthorizer turns ACLs on "
                    "(empty: everyone may do everything)"),
    SecuritySetting("super.users", "", doc="principals allowed everything, separated by "
                    "semicolons (User:admin;User:CN=ops,O=example)"),
    SecuritySetting("allow.everyone.if.no.acl.found", False, _bool,
                    doc="a resource no ACL matches is open to everyone (false: to no one)"),
    SecuritySetting("authentication.timeout.ms", 10000, _non_negative,
                    doc="roster: TLS handshake and SASL authentication must finish within this "
                    "long after connecting"),
]}

# keys that only make sense per listener or per mechanism (a Kafka server.properties has them)
_MECHANISM_KEYS = ("sasl.jaas.config", "connections.max.reauth.ms")


def is_security_key(key: str) -> bool:
    return key in SECURITY_SETTINGS or key.startswith(LISTENER_PREFIX)


def _setting_for(key: str) -> SecuritySetting | None:
    """The setting a (possibly listener-prefixed) key is about."""
    if key in SECURITY_SETTINGS:
        return SECURITY_SETTINGS[key]
    if not key.startswith(LISTENER_PREFIX):
        return None
    rest = key[len(LISTENER_PREFIX):]
    _, _, tail = rest.partition(".")
    if tail in SECURITY_SETTINGS:
        return SECURITY_SETTINGS[tail]
    mechanism, _, tail = tail.partition(".")
    if mechanism.upper() in MECHANISMS and tail in SECURITY_SETTINGS:
        return SECURITY_SETTINGS[tail]
    return None


def is_sensitive(key: str) -> bool:
    setting = _setting_for(key)
    return setting is not None and setting.sensitive


class SecuritySettings(Mapping[str, Any]):
    """Checked security settings: broker-wide ones by name, listener overrides by their
    prefixed key. A prefixed key whose setting roster does not know is kept (and logged by
    the caller) but never read."""

    def __init__(self, overrides: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {k: s.default for k, s in SECURITY_SETTINGS.items()}
        self.unknown: list[str] = []
        for key, raw in (overrides or {}).items():
            setting = _setting_for(key)
            if setting is None:
                self.unknown.append(key)
                continue
            self._values[key] = setting.coerce(raw)
        self.explicit = frozenset(k for k in (overrides or {}) if _setting_for(k) is not None)

    def get(self, key: str, listener: str | None = None, mechanism: str | None = None) -> Any:
        """Kafka's order: listener.name.<l>.<mechanism>.<key>, listener.name.<l>.<key>, <key>."""
        if listener is not None:
            prefix = f"{LISTENER_PREFIX}{listener.lower()}."
            if mechanism is not None:
                value = self._values.get(f"{prefix}{mechanism.lower()}.{key}")
                if value is not None:
                    return value
            value = self._values.get(prefix + key)
            if value is not None:
                return value
        return self._values[key]

    def listener_has(self, key: str, listener: str) -> bool:
        return f"{LISTENER_PREFIX}{listener.lower()}.{key}" in self._values

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def shown(self, key: str) -> str:
        """A value fit for a log line or an error message."""
        return "[hidden]" if is_sensitive(key) else str(self._values.get(key, ""))
