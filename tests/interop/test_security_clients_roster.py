"""roster.client over TLS and SASL: Producer, Consumer (a static group member) and GroupMember
over SSL with a client certificate, SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512, against a real secured broker (trustme certificates made in the test's
directory). And what is refused: a wrong password, a mechanism the listener does not offer or
the client does not speak, an untrusted broker certificate, a missing client certificate: each
a clear exception naming the problem, quickly, never carrying the password."""
from __future__ import annotations

import asyncio
import itertools
import logging
import time

import pytest

from roster.admin.client import AdminClient
from roster.admin.offsets import describe_lines
from roster.client.connection import BrokerConnection
from roster.client.consumer import Consumer
from roster.client.member import GroupMember, parse_bootstrap
from roster.client.membership import MemberConfig
from roster.client.producer import Producer
from roster.security.client import (
    AuthenticationError,
    ClientSecurity,
    SecurityConfigError,
    TlsError,
)
from tests.support.security import PASSWORDS, SecureBroker, add_users_offline, make_pki, secure_settings

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("security")]

COUNT = 5
DEADLINE_S = 30
REFUSED_WITHIN_S = 5.0
WRONG = "wrong-password-8121"
CASES = [("SSL", None)] + [(protocol, mechanism)
                           for protocol in ("SASL_PLAINTEXT", "SASL_SSL")
                           for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")]
_names = itertools.count()


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    root = tmp_path_factory.mktemp("security-roster-client")
    pki = make_pki(root / "pki")
    add_users_offline(root / "data", root)
    settings = secure_settings(pki, **{
        # two more listeners: one offering less, one with a session lifetime (KIP-368)
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
                     "SASL_SSL://127.0.0.1:0,NARROW://127.0.0.1:0,SHORT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                          "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,"
                                          "NARROW:SASL_PLAINTEXT,SHORT:SASL_SSL",
        "listener.name.narrow.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.short.connections.max.reauth.ms": "1500",
        "listener.name.short.plain.sasl.jaas.config": secure_settings(pki)[
            "listener.name.sasl_ssl.plain.sasl.jaas.config"],
    })
    broker = SecureBroker(root / "data", settings).start()
    yield broker, pki, root
    broker.stop()


def config(broker, pki, protocol, mechanism=None, user="alice", password=None,
           listener=None) -> dict:
    """librdkafka's names, as a confluent-kafka user writes them."""
    settings = {"security.protocol": protocol}
    if "SSL" in protocol:
        settings["ssl.ca.location"] = str(pki.ca)
    if protocol == "SSL":
        settings["ssl.certificate.location"] = str(pki.client_cert)
        settings["ssl.key.location"] = str(pki.client_key)
    if mechanism:
        settings.update({"sasl.mechanism": mechanism, "sasl.username": user,
                         "sasl.password": PASSWORDS[user] if password is None else password})
    return settings


def committed_plaintext(broker, group: str) -> str:
    with AdminClient(broker.listener("PLAINTEXT")) as admin:
        return "\n".join(describe_lines(admin, group))


async def produce_and_consume(bootstrap: str, security, topic: str, group: str) -> list[bytes]:
    producer = Producer(bootstrap, security=security)
    try:
        for i in range(COUNT):
            await producer.send(topic, f"{topic}-{i}".encode(), partition=0)
    finally:
        await producer.close()
    consumer = Consumer(bootstrap, group, group_instance_id=f"{group}-member",
                        security=security)
    seen: list[bytes] = []
    await consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + DEADLINE_S
        while len(seen) < COUNT and time.monotonic() < deadline:
            seen.extend(r.value for r in await consumer.poll(timeout_ms=500))
        await consumer.commit()
    finally:
        await consumer.leave()
    return seen


@pytest.mark.parametrize("protocol,mechanism", CASES, ids=lambda v: str(v))
def test_produce_consume_commit(secured, protocol, mechanism):
    broker, pki, _ = secured
    topic = group = f"rc-{protocol.lower()}-{(mechanism or 'tls').lower()}-{next(_names)}"
    seen = asyncio.run(produce_and_consume(broker.listener(protocol),
                                           config(broker, pki, protocol, mechanism),
                                           topic, group))
    assert seen == [f"{topic}-{i}".encode() for i in range(COUNT)]
    # read back on the PLAINTEXT listener: the commit went through the secured coordinator
    # connection (FindCoordinator sent the member to its own listener)
    lines = committed_plaintext(broker, group)
    assert _row(lines, topic) == (COUNT, COUNT, 0), lines


def _row(lines: str, topic: str):
    for line in lines.splitlines():
        fields = line.split()
        if fields[:2] == [topic, "0"]:
            return tuple(int(f) for f in fields[2:5])
    return None


def test_group_member_with_java_names(secured):
    """GroupMember on its own, configured with Java client names (truststore, JAAS)."""
    broker, pki, _ = secured
    topic = group = f"rc-member-{next(_names)}"
    security = ClientSecurity.from_config({
        "security.protocol": "SASL_SSL", "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca), "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                            f'username="bob" password="{PASSWORDS["bob"]}";'})
    assert PASSWORDS["bob"] not in repr(security)

    async def run():
        producer = Producer(broker.listener("SASL_SSL"), security=security)
        await producer.send(topic, b"x", partition=0)
        await producer.close()
        assigned = []
        member = GroupMember(broker.listener("SASL_SSL"),
                             MemberConfig(group, "member-1", 30_000, 60_000, 1_000),
                             security=security, on_assigned=assigned.extend)
        await member.start([topic])
        await member.wait_stable(DEADLINE_S)
        assert assigned == [(topic, 0)]
        await member.commit({(topic, 0): 1})
        assert await member.committed([(topic, 0)]) == {(topic, 0): 1}
        await member.leave()

    asyncio.run(run())
    assert _row(committed_plaintext(broker, group), topic)[0] == 1


def test_session_lifetime_is_renewed(secured):
    """A listener with connections.max.reauth.ms=1500: the connection re-authenticates before
    the session ends and keeps working (the broker closes one that does not)."""
    broker, pki, _ = secured
    security = ClientSecurity.from_config(config(broker, pki, "SASL_SSL", "SCRAM-SHA-256"))

    async def run():
        host, port = parse_bootstrap(broker.listener("SHORT"))
        connection = await BrokerConnection.open(host, port, "reauth-test", security=security)
        try:
            for _ in range(4):
                await asyncio.sleep(0.8)
                answer = await connection.call_version(18, 0)
                assert answer.error_code == 0
        finally:
            connection.close()

    asyncio.run(run())


# -- refusals --------------------------------------------------------------------------------

def _refused(coroutine_function, expected):
    started = time.monotonic()
    with pytest.raises(expected) as caught:
        asyncio.run(coroutine_function())
    assert time.monotonic() - started < REFUSED_WITHIN_S, "refused, but slowly"
    return str(caught.value)


@pytest.mark.parametrize("protocol,mechanism,user", [
    ("SASL_PLAINTEXT", "PLAIN", "admin"), ("SASL_SSL", "SCRAM-SHA-256", "alice"),
    ("SASL_SSL", "SCRAM-SHA-512", "bob")])
def test_wrong_password(secured, caplog, protocol, mechanism, user):
    broker, pki, _ = secured
    caplog.set_level(logging.DEBUG)
    security = config(broker, pki, protocol, mechanism, user=user, password=WRONG)
    topic = f"rc-refused-{next(_names)}"

    async def produce():
        producer = Producer(broker.listener(protocol), security=security)
        try:
            await producer.send(topic, b"must not be written")
        finally:
            await producer.close()

    message = _refused(produce, AuthenticationError)
    assert mechanism in message and repr(user) in message, message
    assert "Invalid username or password" in message or "invalid credentials" in message
    assert WRONG not in message and WRONG not in caplog.text

    async def consume():
        consumer = Consumer(broker.listener(protocol), "refused-group", security=security)
        try:
            await consumer.subscribe([topic])
        finally:
            await consumer.close()

    message = _refused(consume, AuthenticationError)
    assert mechanism in message and WRONG not in message and WRONG not in caplog.text
    with AdminClient(broker.listener("PLAINTEXT")) as admin:
        from roster.admin.topics import list_names
        assert topic not in list_names(admin, False)


def test_mechanism_the_listener_does_not_offer(secured):
    broker, pki, _ = secured

    async def produce():
        producer = Producer(broker.listener("NARROW"),
                            security=config(broker, pki, "SASL_PLAINTEXT", "SCRAM-SHA-256"))
        try:
            await producer.send("rc-narrow", b"x")
        finally:
            await producer.close()

    message = _refused(produce, AuthenticationError)
    assert "does not offer SASL mechanism SCRAM-SHA-256" in message, message
    assert "SCRAM-SHA-512" in message, message  # names what the listener offers


def test_mechanism_the_client_does_not_speak(secured):
    broker, pki, _ = secured
    for mechanism in ("GSSAPI", "OAUTHBEARER", "SCRAM-SHA-1"):
        settings = {**config(broker, pki, "SASL_SSL", "PLAIN"), "sasl.mechanism": mechanism}
        with pytest.raises(SecurityConfigError, match=f"sasl.mechanism={mechanism}: roster's "
                                                      "clients speak PLAIN, SCRAM-SHA-256"):
            Producer(broker.listener("SASL_SSL"), security=settings)
    with pytest.raises(SecurityConfigError, match="sasl.mechanism: set PLAIN"):
        Consumer(broker.listener("SASL_SSL"), "g", security={"security.protocol": "SASL_SSL"})
    jaas = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                                f'required username="alice" password="{WRONG}";'}
    with pytest.raises(SecurityConfigError) as caught:
        ClientSecurity.from_config(jaas)
    assert "needs ScramLoginModule" in str(caught.value) and WRONG not in str(caught.value)


def test_untrusted_broker_certificate(secured, tmp_path):
    import trustme
    broker, pki, _ = secured
    other = trustme.CA(organization_name="not the broker's CA")
    other.cert_pem.write_to_path(str(tmp_path / "other-ca.pem"))
    for protocol, mechanism in (("SSL", None), ("SASL_SSL", "SCRAM-SHA-512")):
        security = {**config(broker, pki, protocol, mechanism),
                    "ssl.ca.location": str(tmp_path / "other-ca.pem")}

        async def produce():
            producer = Producer(broker.listener(protocol), security=security)
            try:
                await producer.send("rc-untrusted", b"x")
            finally:
                await producer.close()

        message = _refused(produce, TlsError)
        assert "certificate is not trusted" in message and "ssl.ca.location" in message, message


def test_client_certificate_required(secured):
    """The SSL listener wants a client certificate (ssl.client.auth=required); one from a CA
    it does not trust is refused too."""
    broker, pki, _ = secured
    without = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca)}
    rogue = {**without, "ssl.certificate.location": str(pki.rogue_cert),
             "ssl.key.location": str(pki.rogue_key)}
    for security in (without, rogue):
        async def produce():
            producer = Producer(broker.listener("SSL"), security=security)
            try:
                await producer.send("rc-no-cert", b"x")
            finally:
                await producer.close()

        message = _refused(produce, TlsError)
        assert "TLS handshake with" in message and "client" in message, message


def test_sasl_client_on_a_plain_listener(secured):
    broker, pki, _ = secured

    async def produce():
        producer = Producer(broker.listener("PLAINTEXT"),
                            security=config(broker, pki, "SASL_PLAINTEXT", "PLAIN", "admin"))
        try:
            await producer.send("rc-wrong-listener", b"x")
        finally:
            await producer.close()

    message = _refused(produce, AuthenticationError)
    assert "not a SASL listener" in message, message


def test_encrypted_key_and_one_file_keystore(secured, tmp_path):
    """An encrypted client key with ssl.key.password, and Kafka's PEM keystore (key and chain in
    one file, ssl.keystore.location); a wrong key password is a configuration error that does
    not show it."""
    from cryptography.hazmat.primitives import serialization
    broker, pki, _ = secured
    key = serialization.load_pem_private_key(pki.client_key.read_bytes(), password=None)
    encrypted = tmp_path / "client-encrypted.key"
    encrypted.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"key-pass-9931")))
    keystore = tmp_path / "keystore.pem"
    keystore.write_text(pki.client_key.read_text() + pki.client_cert.read_text())
    topic = f"rc-keys-{next(_names)}"

    async def produce(security):
        producer = Producer(broker.listener("SSL"), security=security)
        try:
            return await producer.send(topic, b"x", partition=0)
        finally:
            await producer.close()

    base = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca)}
    assert asyncio.run(produce({**base, "ssl.certificate.location": str(pki.client_cert),
                                "ssl.key.location": str(encrypted),
                                "ssl.key.password": "key-pass-9931"})) == (0, 0)
    assert asyncio.run(produce({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                                "ssl.truststore.location": str(pki.ca),
                                "ssl.keystore.type": "PEM",
                                "ssl.keystore.location": str(keystore)})) == (0, 1)
    # refused when the client is made, before any connection
    with pytest.raises(SecurityConfigError) as caught:
        Producer(broker.listener("SSL"), security={
            **base, "ssl.certificate.location": str(pki.client_cert),
            "ssl.key.location": str(encrypted), "ssl.key.password": "not-it-5817"})
    assert "not a usable certificate and private key" in str(caught.value)
    assert "not-it-5817" not in str(caught.value)
    with pytest.raises(SecurityConfigError, match="ssl.ca.location=/nonexistent/ca.pem: no "):
        Consumer(broker.listener("SSL"), "g", security={**base,
                                                        "ssl.ca.location": "/nonexistent/ca.pem"})


def test_broker_certificate_must_name_the_host(tmp_path):
    """A broker whose certificate names another host is refused unless
    ssl.endpoint.identification.algorithm is empty (as Java's and librdkafka's clients)."""
    import trustme
    ca = trustme.CA(organization_name="roster tests")
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    ca.issue_cert("broker.invalid").private_key_and_cert_chain_pem.write_to_path(
        str(tmp_path / "server.pem"))
    broker = SecureBroker(tmp_path / "data", {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.location": str(tmp_path / "server.pem"),
        "ssl.truststore.location": str(tmp_path / "ca.pem")}).start()
    try:
        security = {"security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "ca.pem")}

        async def produce(settings):
            producer = Producer(broker.listener("SSL"), security=settings)
            try:
                return await producer.send("rc-hostname", b"x", partition=0)
            finally:
                await producer.close()

        message = _refused(lambda: produce(security), TlsError)
        assert "does not name this host" in message, message
        assert asyncio.run(produce({**security,
                                    "ssl.endpoint.identification.algorithm": ""})) == (0, 0)
        from roster.admin.client import AdminError
        with pytest.raises(AdminError, match="does not name this host"):
            AdminClient(broker.listener("SSL"), security=security)
    finally:
        broker.stop()


def test_a_listener_that_never_answers_is_not_a_hang():
    """Connecting to something that accepts and stays silent (a TLS client at a non-TLS port
    of another service, a stuck proxy) ends after the connection timeout, with a reason."""
    from roster.client.connection import ConnectionClosed

    async def run():
        server = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            messages = []
            for security in (None, ClientSecurity(protocol="SSL"),
                             ClientSecurity(protocol="SASL_PLAINTEXT", mechanism="PLAIN",
                                            username="u", password=WRONG)):
                started = time.monotonic()
                with pytest.raises(ConnectionClosed) as caught:
                    await BrokerConnection.open("127.0.0.1", port, "silent", timeout_s=0.5,
                                                security=security)
                assert time.monotonic() - started < 3
                messages.append(str(caught.value))
            return messages
        finally:
            server.close()

    plain, tls, sasl = asyncio.run(run())
    assert "did not answer ApiVersions within 0.5 s" in plain
    assert "no connection and TLS handshake within 0.5 s" in tls
    assert "did not answer ApiVersions" in sasl and WRONG not in sasl
