"""TLS contexts from Kafka's PEM settings, principals from certificates, JAAS strings."""
from __future__ import annotations

import ssl

import pytest

from roster.security.jaas import JaasError, client_credentials, parse_jaas, plain_users
from roster.security.settings import SecuritySettings
from roster.security.tls import (
    PrincipalMapper,
    TlsConfigError,
    certificate_dn,
    parse_mapping_rules,
    server_context,
)

# -- ssl.principal.mapping.rules, with the examples of Kafka's documentation ------------------

RULES = (r"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
         r"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
         r"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,DEFAULT")


@pytest.mark.parametrize("dn,name", [
    ("CN=kafka1,OU=ServiceUsers,O=Org,C=US", "kafka1"),
    ("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "duke@javasoft"),
    ("cn=duke,ou=JavaSoft", "DUKE"),
    ("OU=nobody", "OU=nobody"),  # DEFAULT: the DN itself
])
def test_mapping_rules(dn, name):
    assert PrincipalMapper(RULES).name(dn) == name


def test_mapping_rule_details():
    # no rule applies: Kafka fails the connection
    assert PrincipalMapper(r"RULE:^CN=(.*)$/$1/").name("O=x") is None
    # a $n that names no group stays literal; a comma may sit inside a pattern
    assert PrincipalMapper(r"RULE:^CN=(\w+),O=x$/$1-$2/").name("CN=a,O=x") == "a-$2"
    # an escaped slash in a pattern
    assert PrincipalMapper(r"RULE:^CN=a\/b$/ab/").name("CN=a/b") == "ab"
    assert len(parse_mapping_rules("")) == 1  # empty: DEFAULT
    with pytest.raises(TlsConfigError):
        parse_mapping_rules("RULE:broken")
    with pytest.raises(TlsConfigError):
        parse_mapping_rules("RULE:(/x/")


# -- contexts -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    import trustme
    directory = tmp_path_factory.mktemp("tls-unit")
    ca = trustme.CA()
    server = ca.issue_cert("localhost")
    server.private_key_and_cert_chain_pem.write_to_path(str(directory / "server.pem"))
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    client = ca.issue_cert("c@example.com", common_name="alice", organization_name="Example",
                           organization_unit_name="eng")
    return directory, server, client


def context(pki, protocol="SSL", **values):
    directory, _, _ = pki
    base = {"ssl.keystore.location": str(directory / "server.pem"),
            "ssl.truststore.location": str(directory / "ca.pem")}
    return server_context(SecuritySettings({**base, **values}), "L", protocol)


def test_client_auth_per_kip_684(pki):
    assert context(pki).verify_mode == ssl.CERT_NONE
    assert context(pki, **{"ssl.client.auth": "required"}).verify_mode == ssl.CERT_REQUIRED
    assert context(pki, **{"ssl.client.auth": "requested"}).verify_mode == ssl.CERT_OPTIONAL
    # broker-wide ssl.client.auth does not reach a SASL_SSL listener; its own setting does
    assert context(pki, "SASL_SSL", **{"ssl.client.auth": "required"}).verify_mode == \
        ssl.CERT_NONE
    assert context(pki, "SASL_SSL", **{"listener.name.l.ssl.client.auth": "required"}) \
        .verify_mode == ssl.CERT_REQUIRED
    assert context(pki).minimum_version == ssl.TLSVersion.TLSv1_2
    assert context(pki, **{"ssl.enabled.protocols": "TLSv1.3"}).minimum_version == \
        ssl.TLSVersion.TLSv1_3


def test_pem_text_settings(pki):
    _, server, _ = pki
    settings = SecuritySettings({
        "ssl.keystore.certificate.chain": "".join(b.bytes().decode() for b in
                                                  server.cert_chain_pems),
        "ssl.keystore.key": server.private_key_pem.bytes().decode()})
    assert server_context(settings, "L", "SSL").verify_mode == ssl.CERT_NONE


@pytest.mark.parametrize("values,message", [
    ({"ssl.keystore.location": ""}, "needs a certificate"),
    ({"ssl.keystore.location": "/nonexistent.pem"}, "ssl.keystore.location=/nonexistent.pem"),
    ({"ssl.truststore.location": "", "ssl.client.auth": "required"}, "needs ssl.truststore"),
    ({"ssl.truststore.location": "/nonexistent.pem"}, "ssl.truststore.location"),
])
def test_context_errors_name_the_setting(pki, values, message):
    with pytest.raises(TlsConfigError, match=message):
        context(pki, **values)


def test_certificate_subject_as_java_prints_it(pki):
    _, _, client = pki
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding
    der = x509.load_pem_x509_certificate(client.cert_chain_pems[0].bytes()).public_bytes(
        Encoding.DER)
    assert certificate_dn(der) == "CN=alice,OU=eng,O=Example"


# -- JAAS -----------------------------------------------------------------------------------

def test_jaas_plain_users_and_client_credentials():
    text = ('org.apache.kafka.common.security.plain.PlainLoginModule required\n'
            '  username="admin" password="admin-secret"\n'
            '  user_admin="admin-secret" user_alice="a \\"quoted\\" secret" user_bob=plain;')
    assert plain_users(text) == {"admin": "admin-secret", "alice": 'a "quoted" secret',
                                 "bob": "plain"}
    assert client_credentials(text) == ("admin", "admin-secret")
    [entry] = parse_jaas(text)
    assert "secret" not in repr(entry)


@pytest.mark.parametrize("text", [
    "", "Module;", 'Module required user_a="x"', 'Module required user_a="x;',
    "Module required =x;", "Module maybe a=b;"])
def test_jaas_errors(text):
    with pytest.raises(JaasError):
        parse_jaas(text)


def test_an_encrypted_key_needs_ssl_key_password(pki, tmp_path):
    from cryptography.hazmat.primitives import serialization
    _, server, _ = pki
    key = serialization.load_pem_private_key(server.private_key_pem.bytes(), password=None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"key-secret"))
    path = tmp_path / "encrypted.pem"
    path.write_bytes(encrypted + b"".join(b.bytes() for b in server.cert_chain_pems))
    settings = {"ssl.keystore.location": str(path), "ssl.key.password": "key-secret"}
    assert server_context(SecuritySettings(settings), "L", "SSL")
    with pytest.raises(TlsConfigError) as failure:
        server_context(SecuritySettings({**settings, "ssl.key.password": "wrong-secret"}),
                       "L", "SSL")
    assert "wrong-secret" not in str(failure.value) and "key-secret" not in str(failure.value)
