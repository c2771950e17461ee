"""TLS for a listener, with Python's `ssl`: the server context from Kafka's PEM settings, and
the principal a client certificate stands for.

    ssl.keystore.type=PEM
    ssl.keystore.location=server.pem          # private key and certificate chain, one file
    # or the PEM text itself: ssl.keystore.certificate.chain=... and ssl.keystore.key=...
    ssl.key.password=...                      # when the key is encrypted
    ssl.truststore.type=PEM
    ssl.truststore.location=ca.pem            # or ssl.truststore.certificates=<PEM text>
    ssl.client.auth=required|requested|none

TLS 1.2 is the oldest version served (`ssl.enabled.protocols`). A client certificate's subject
becomes the principal `User:<DN>` (RFC 2253 order, as Java's X500Principal prints it), mapped
by `ssl.principal.mapping.rules`.
"""
from __future__ import annotations

import os
import re
import ssl
import tempfile

from roster.frozen import frozen
from roster.security.settings import SecuritySettings

ANONYMOUS = "User:ANONYMOUS"


class TlsConfigError(ValueError):
    pass


def _read_pem(path: str, key: str) -> str:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise TlsConfigError(f"{key}={path}: cannot read it: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None


def _load_chain(context: ssl.SSLContext, certificates: str, private_key: str,
                password: str | None, where: str) -> None:
    """load_cert_chain reads files only: PEM text given in settings goes through a private
    temporary file (0600, removed at once)."""
    fd, path = tempfile.mkstemp(prefix="roster-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(private_key.strip() + "\n" + certificates.strip() + "\n")
        context.load_cert_chain(path, password=password or None)
    except ssl.SSLError as exc:
        raise TlsConfigError(f"{where}: not a usable private key and certificate chain "
                             f"({exc.reason or exc})") from None
    finally:
        os.unlink(path)


def server_context(settings: SecuritySettings, listener: str, protocol: str) -> ssl.SSLContext:
    """The SSLContext of one TLS listener. As in Kafka (KIP-684), the broker-wide
    ssl.client.auth applies to SSL listeners; a SASL_SSL listener asks for client certificates
    only when listener.name.<listener>.ssl.client.auth says so."""
    get = lambda key: settings.get(key, listener)  # noqa: E731
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = get("ssl.enabled.protocols")
    context.minimum_version = (ssl.TLSVersion.TLSv1_2 if "TLSv1.2" in versions
                               else ssl.TLSVersion.TLSv1_3)
    context.maximum_version = (ssl.TLSVersion.TLSv1_3 if "TLSv1.3" in versions
                               else ssl.TLSVersion.TLSv1_2)
    if get("ssl.cipher.suites"):
        try:
            context.set_ciphers(get("ssl.cipher.suites"))
        except ssl.SSLError:
            raise TlsConfigError(f"ssl.cipher.suites={get('ssl.cipher.suites')!r}: no cipher "
                                 "OpenSSL knows") from None
    password = get("ssl.key.password") or get("ssl.keystore.password") or None
    location = get("ssl.keystore.location")
    chain_text = get("ssl.keystore.certificate.chain")
    if location:
        try:
            context.load_cert_chain(location, password=password)
        except OSError as exc:  # ssl.SSLError is an OSError too
            reason = getattr(exc, "reason", None) or exc.strerror or exc
            raise TlsConfigError(f"ssl.keystore.location={location}: not a readable PEM file "
                                 f"with a private key and its certificate chain ({reason})") \
                from None
    elif chain_text:
        if not get("ssl.keystore.key"):
            raise TlsConfigError("ssl.keystore.certificate.chain needs ssl.keystore.key")
        _load_chain(context, chain_text, get("ssl.keystore.key"), password,
                    "ssl.keystore.certificate.chain/ssl.keystore.key")
    else:
        raise TlsConfigError(f"listener {listener} ({protocol}) needs a certificate: set "
                             "ssl.keystore.location (PEM: key and chain in one file)")
    trust_location = get("ssl.truststore.location")
    trust_text = get("ssl.truststore.certificates")
    if trust_location:
        try:
            context.load_verify_locations(cafile=trust_location)
        except (OSError, ssl.SSLError) as exc:
            raise TlsConfigError(f"ssl.truststore.location={trust_location}: not a readable "
                                 f"PEM file of certificates ({exc})") from None
    elif trust_text:
        try:
            context.load_verify_locations(cadata=trust_text)
        except ssl.SSLError as exc:
            raise TlsConfigError(f"ssl.truststore.certificates: not PEM certificates ({exc})") \
                from None
    if protocol == "SSL":
        client_auth = get("ssl.client.auth")
    elif settings.listener_has("ssl.client.auth", listener):
        client_auth = settings.get("ssl.client.auth", listener)
    else:
        client_auth = "none"
    if client_auth != "none" and not (trust_location or trust_text):
        raise TlsConfigError(f"ssl.client.auth={client_auth} on listener {listener} needs "
                             "ssl.truststore.location (the CAs client certificates come from)")
    context.verify_mode = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL,
                           "none": ssl.CERT_NONE}[client_auth]
    context.options |= ssl.OP_NO_COMPRESSION
    return context


# -- principals from certificates -----------------------------------------------------------

_RULE = re.compile(r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)")


@frozen
class MappingRule:
    pattern: re.Pattern | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(lambda m: _java_replacement(self.replacement, m), dn)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result


def _java_replacement(template: str, match: re.Match) -> str:
    """Java's Matcher replacement syntax: $n is a group (digits are taken while they name a
    group, as Java does; a $n naming no group stays literal, as Kafka escapes it), a
    backslash quotes the next character."""
    groups = match.re.groups
    out = []
    i = 0
    while i < len(template):
        char = template[i]
        if char == "\\" and i + 1 < len(template):
            out.append(template[i + 1])
            i += 2
            continue
        if char == "$" and i + 1 < len(template) and template[i + 1].isdigit():
            number = int(template[i + 1])
            if number > groups:
                out.append("$")
                i += 1
                continue
            i += 2
            while i < len(template) and template[i].isdigit() and \
                    number * 10 + int(template[i]) <= groups:
                number = number * 10 + int(template[i])
                i += 1
            out.append(match.group(number) or "")
            continue
        out.append(char)
        i += 1
    return "".join(out)


def parse_mapping_rules(text: str) -> list[MappingRule]:
    """Kafka's ssl.principal.mapping.rules: RULE:pattern/replacement/[LU] or DEFAULT, separated
    by commas (a pattern may hold commas; `\\/` is a slash inside one)."""
    rules = []
    position = 0
    text = text.strip()
    while position < len(text):
        while position < len(text) and text[position] in " ,\n":
            position += 1
        if position >= len(text):
            break
        match = _RULE.match(text, position)
        if match is None:
            raise TlsConfigError(f"ssl.principal.mapping.rules: invalid rule at "
                                 f"{text[position:]!r}")
        if match.group(1):
            rules.append(MappingRule(None))
        else:
            try:
                pattern = re.compile(match.group(2))
            except re.error as exc:
                raise TlsConfigError(f"ssl.principal.mapping.rules: {match.group(2)!r}: "
                                     f"{exc}") from None
            rules.append(MappingRule(pattern, match.group(3), match.group(4)))
        position = match.end()
        rest = text[position:].lstrip(" ")
        if rest and not rest.startswith((",", "\n")):
            raise TlsConfigError(f"ssl.principal.mapping.rules: invalid rule, unmatched "
                                 f"{rest!r}")
    return rules or [MappingRule(None)]


class PrincipalMapper:
    def __init__(self, rules_text: str) -> None:
        self.rules = parse_mapping_rules(rules_text)

    def name(self, dn: str) -> str | None:
        """The short name for a DN, or None when no rule applies (Kafka fails the
        connection then)."""
        for rule in self.rules:
            result = rule.apply(dn)
            if result is not None:
                return result
        return None


def certificate_dn(der: bytes) -> str:
    """The subject of a DER certificate as RFC 2253 prints it (most specific first:
    `CN=alice,OU=eng,O=example`), which is what Java's X500Principal.getName() gives Kafka."""
    from cryptography import x509
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


def peer_principal(ssl_object, mapper: PrincipalMapper) -> str | None:
    """User:<mapped DN> for a client that showed a certificate; ANONYMOUS without one; None
    when no mapping rule applies."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    name = mapper.name(certificate_dn(der))
    return None if name is None else f"User:{name}"
