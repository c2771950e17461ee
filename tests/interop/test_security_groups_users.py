"""Over SASL_SSL, groups behave as over PLAINTEXT: a static group (KIP-345) survives a rolling
bounce of its members with no rebalance. Users are durable: added and deleted over the wire
(admin clients' AlterUserScramCredentials, `roster users`), they survive kill -9, and a deleted
one can no longer authenticate."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.support import groups
from tests.support.groups import ConfluentMember, Watch
from tests.support.security import PASSWORDS, SecureBroker, add_users_offline, make_pki, secure_settings

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("security")]

HEARTBEAT_MS = 500
QUIET_S = 3 * HEARTBEAT_MS / 1000


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    root = tmp_path_factory.mktemp("security-groups")
    pki = make_pki(root / "pki")
    add_users_offline(root / "data", root)
    broker = SecureBroker(root / "data", secure_settings(pki)).start()
    broker.pki = pki
    broker.root = root
    yield broker
    broker.stop()


def sasl_ssl(broker, user="alice", mechanism="SCRAM-SHA-512", password=None) -> dict:
    return {"security.protocol": "SASL_SSL", "ssl.ca.location": str(broker.pki.ca),
            "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": password if password is not None else PASSWORDS[user]}


def test_static_group_over_sasl_ssl_survives_a_rolling_bounce(secured):
    broker = secured
    partitions, session_ms = 6, 10000
    topic = group = "secure-static"
    groups.create_topic(broker.listener("PLAINTEXT"), topic, partitions)
    watch = Watch()

    def member(i, name):
        return ConfluentMember(watch, broker.listener("SASL_SSL"), group, topic, name,
                               f"secure-instance-{i}",
                               {"heartbeat.interval.ms": HEARTBEAT_MS,
                                "session.timeout.ms": session_ms, **sasl_ssl(broker)})

    slots = [member(i, f"secure-{i}") for i in range(3)]
    started = list(slots)
    try:
        for m in slots:
            m.start()
        groups.wait_split(watch, slots, partitions)
        baseline = {id(m): m.callbacks() for m in slots}

        def changed(members):
            return [m for m in members if m.callbacks() != baseline[id(m)]]

        for i in range(len(slots)):
            old, others = slots[i], slots[:i] + slots[i + 1:]
            previous = old.assigned
            old.stop()  # a static member sends no LeaveGroup
            closed_at = time.monotonic()
            new = member(i, f"secure-{i}-again")
            started.append(new)
            slots[i] = new
            baseline[id(new)] = 1
            new.start()
            watch.wait_for(lambda: new.count("assign") >= 1 or changed(others),
                           groups.DEADLINE_S, lambda: "bounced member assigned")
            assert changed(others) == [], "the bounce rebalanced the others" + \
                groups.describe_assignment(slots)
            assert new.assigned == previous
            assert time.monotonic() - closed_at < session_ms / 1000
            assert not watch.quiet(lambda: changed(slots), QUIET_S)
        assert all(not m.errors for m in slots), [m.errors for m in slots]
    finally:
        for m in started:
            try:
                m.stop()
            except Exception:
                pass
    assert "Traceback" not in broker.log_text()


def _login(broker, user, password, mechanism="SCRAM-SHA-256") -> str:
    """What a real client (librdkafka's admin client) sees when it logs in as `user`:
    "accepted", or the SASL error it was refused with. Neither within the deadline (a broker
    that hangs or is gone) fails the test, so a refusal is never a timeout in disguise."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient
    errors = []
    admin = AdminClient({"bootstrap.servers": broker.listener("SASL_PLAINTEXT"),
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                         "sasl.username": user, "sasl.password": password,
                         "error_cb": errors.append})
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=1)
            return "accepted"
        except KafkaException:
            admin.poll(0)   # error_cb is served from poll()
            refusals = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
            if refusals:
                return refusals[0].str()
    raise AssertionError(f"{user}'s login was neither accepted nor refused in 20 s: {errors}")


def _refused(broker, user, password, mechanism="SCRAM-SHA-256") -> None:
    """The login is refused with the SASL error Kafka gives for bad credentials, and the broker
    still serves: a good login right after works."""
    answer = _login(broker, user, password, mechanism)
    assert ("Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {mechanism}") in answer, answer
    assert broker.proc.poll() is None, "the broker died refusing a login"
    assert _login(broker, "alice", PASSWORDS["alice"], "SCRAM-SHA-512") == "accepted"


def test_users_over_the_wire_survive_kill_9(secured):
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )
    broker = secured
    admin = AdminClient({"bootstrap.servers": broker.listener("SASL_SSL"),
                         **sasl_ssl(broker, "alice")})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    futures = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("dave", info, b"dave-secret"),
        UserScramCredentialUpsertion("erin", ScramCredentialInfo(
            ScramMechanism.SCRAM_SHA_512, 4096), b"erin-secret"),
        UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256)])
    for future in futures.values():
        future.result(10)
    # refusals come back per user, and change nothing
    bad = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("frank", ScramCredentialInfo(
            ScramMechanism.SCRAM_SHA_256, 100), b"x"),
        UserScramCredentialDeletion("nobody", ScramMechanism.SCRAM_SHA_256)])
    for user, future in bad.items():
        with pytest.raises(Exception) as failure:
            future.result(10)
        assert ("iterations" in str(failure.value)) if user == "frank" else \
            ("does not exist" in str(failure.value))

    broker.kill9()  # the answers above came after the fsync: nothing may be lost
    broker.start()

    described = admin.describe_user_scram_credentials(["dave", "erin", "bob"])
    dave = described["dave"].result(10)
    assert [(i.mechanism, i.iterations) for i in dave.scram_credential_infos] == \
        [(ScramMechanism.SCRAM_SHA_256, 8192)]
    bob = described["bob"].result(10)
    assert [i.mechanism for i in bob.scram_credential_infos] == [ScramMechanism.SCRAM_SHA_512]
    assert _login(broker, "dave", "dave-secret") == "accepted"
    assert _login(broker, "erin", "erin-secret", "SCRAM-SHA-512") == "accepted"
    _refused(broker, "bob", PASSWORDS["bob"], "SCRAM-SHA-256")
    _refused(broker, "frank", "x")
    text = broker.log_text()
    for secret in ("dave-secret", "erin-secret", *PASSWORDS.values()):
        assert secret not in text
    stored = (broker.data_dir / "scram-credentials.json").read_text()
    assert "dave-secret" not in stored and "salted" not in stored


def test_roster_users_command_over_the_wire(secured):
    """`roster users` over the PLAINTEXT listener (a TLS/SASL-capable --command-config is the
    client side's part): add, list, delete; the password comes from a file and is printed
    nowhere."""
    broker = secured
    password_file = broker.root / "grace.password"
    password_file.write_text("grace-secret\n")
    base = [sys.executable, "-m", "roster", "users", "--bootstrap-server",
            broker.listener("PLAINTEXT")]

    def roster(*args):
        result = subprocess.run([*base, *args], capture_output=True, text=True, timeout=30)
        assert "grace-secret" not in result.stdout + result.stderr
        return result

    added = roster("add", "grace", "--mechanism", "SCRAM-SHA-512", "--password-file",
                   str(password_file))
    assert added.returncode == 0, added.stderr
    listing = roster("list")
    assert "grace\tSCRAM-SHA-512(iterations=4096)" in listing.stdout
    assert _login(broker, "grace", "grace-secret", "SCRAM-SHA-512") == "accepted"
    assert roster("delete", "grace").returncode == 0
    assert "grace" not in roster("list").stdout
    _refused(broker, "grace", "grace-secret", "SCRAM-SHA-512")
    refused = roster("delete", "grace")
    assert refused.returncode == 1 and "grace" in refused.stderr


def test_roster_users_over_sasl_ssl_with_a_command_config(secured):
    """The same over SASL_SSL, authenticated with a Kafka tools' --command-config file."""
    broker = secured
    config = broker.root / "admin.properties"
    config.write_text(
        "security.protocol=SASL_SSL\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={broker.pki.ca}\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="alice" password="{PASSWORDS["alice"]}";\n')
    password_file = broker.root / "heidi.password"
    password_file.write_text("heidi-secret\n")
    base = [sys.executable, "-m", "roster", "users"]
    where = ["--bootstrap-server", broker.listener("SASL_SSL"), "--command-config", str(config)]
    added = subprocess.run([*base, "add", "heidi", "--password-file", str(password_file),
                            *where], capture_output=True, text=True, timeout=30)
    assert added.returncode == 0, added.stderr
    listing = subprocess.run([*base, *where, "list"], capture_output=True, text=True, timeout=30)
    assert "heidi\tSCRAM-SHA-256(iterations=4096)" in listing.stdout, listing.stderr
    for output in (added.stdout + added.stderr, listing.stdout + listing.stderr):
        assert "heidi-secret" not in output and PASSWORDS["alice"] not in output
    assert _login(broker, "heidi", "heidi-secret") == "accepted"
