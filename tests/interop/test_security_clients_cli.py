"""The `roster` CLI against a secured broker with `--command-config FILE`, a Java properties
file as Kafka's tools take it (Java client names, sasl.jaas.config over several lines; also
librdkafka's names): topics, groups, offsets and users over SASL_SSL, and a wrong password or
a broken file refused in one clear line with a non-zero exit code, never showing the
password."""
from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from roster.client.consumer import Consumer
from roster.client.producer import Producer
from tests.support.security import PASSWORDS, SecureBroker, add_users_offline, make_pki, secure_settings

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("security")]

CAROL = "carol-secret-5521"
WRONG = "wrong-password-3307"


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    root = tmp_path_factory.mktemp("security-cli")
    pki = make_pki(root / "pki")
    add_users_offline(root / "data", root)
    broker = SecureBroker(root / "data", secure_settings(pki)).start()
    yield broker, pki, root
    broker.stop()


def java_config(path, pki, user: str, password: str, mechanism: str = "SCRAM-SHA-512"):
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    path.write_text(
        "# as for kafka-topics.sh --command-config\n"
        "security.protocol=SASL_SSL\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={pki.ca}\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.jaas.config={module} required \\\n"
        f'    username="{user}" \\\n'
        f'    password="{password}";\n'
        "request.timeout.ms=30000\n")
    return path


def roster(broker, config, *args, input_text=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "roster", *args[:1], "--bootstrap-server",
         broker.listener("SASL_SSL"), "--command-config", str(config), *args[1:]],
        capture_output=True, text=True, timeout=60, input=input_text)


def ok(result) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def no_secret(result, *secrets):
    for secret in secrets:
        assert secret not in result.stdout and secret not in result.stderr


def test_topics_groups_offsets_over_sasl_ssl(secured, tmp_path):
    broker, pki, _ = secured
    config = java_config(tmp_path / "alice.properties", pki, "alice", PASSWORDS["alice"])
    secret = PASSWORDS["alice"]
    created = roster(broker, config, "topics", "create", "cli-secure", "--partitions", "2")
    assert ok(created).strip() == "Created topic cli-secure."
    listed = roster(broker, config, "topics", "list")
    assert "cli-secure" in ok(listed).split()
    described = roster(broker, config, "topics", "describe", "cli-secure")
    assert "cli-secure" in ok(described)

    security = {"security.protocol": "SASL_SSL", "ssl.ca.location": str(pki.ca),
                "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "bob",
                "sasl.password": PASSWORDS["bob"]}

    async def consume():
        producer = Producer(broker.listener("SASL_SSL"), security=security)
        for i in range(4):
            await producer.send("cli-secure", b"v%d" % i, partition=i % 2)
        await producer.close()
        consumer = Consumer(broker.listener("SASL_SSL"), "cli-secure-group",
                            group_instance_id="cli-member", security=security)
        await consumer.subscribe(["cli-secure"])
        seen = []
        while len(seen) < 4:
            seen.extend(await consumer.poll(timeout_ms=500))
        await consumer.commit()
        await consumer.close()  # static: stays in the group

    asyncio.run(asyncio.wait_for(consume(), 60))
    groups = roster(broker, config, "groups", "describe", "cli-secure-group")
    assert "cli-member" in ok(groups), groups.stdout
    offsets = roster(broker, config, "offsets", "describe", "cli-secure-group")
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
    rows = [line.split() for line in ok(offsets).splitlines()[1:]]
    assert sorted(r[1:6] for r in rows) == [["cli-secure", "0", "2", "2", "0"],
                                            ["cli-secure", "1", "2", "2", "0"]], offsets.stdout
    for result in (created, listed, described, groups, offsets):
        no_secret(result, secret)


def test_users_add_list_delete_over_the_wire(secured, tmp_path):
    broker, pki, _ = secured
    admin = java_config(tmp_path / "admin.properties", pki, "admin", PASSWORDS["admin"],
                        mechanism="PLAIN")
    password_file = tmp_path / "carol.password"
    password_file.write_text(CAROL + "\n")
    added = [roster(broker, admin, "users", "add", "carol", "--mechanism", mechanism,
                    "--password-file", str(password_file))
             for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")]
    assert [ok(r).strip() for r in added] == ["Set SCRAM-SHA-256 credential of user carol.",
                                              "Set SCRAM-SHA-512 credential of user carol."]
    from_stdin = roster(broker, admin, "users", "add", "dave", "--password-file", "-",
                        input_text="dave-secret-1\n")
    ok(from_stdin)
    listed = roster(broker, admin, "users", "list")
    lines = ok(listed).splitlines()
    assert "carol\tSCRAM-SHA-256(iterations=4096),SCRAM-SHA-512(iterations=4096)" in lines
    assert any(line.startswith("dave\t") for line in lines)

    # carol can now connect with the password that went over the wire (salted)
    carol = java_config(tmp_path / "carol.properties", pki, "carol", CAROL)
    ok(roster(broker, carol, "topics", "list"))

    deleted = roster(broker, admin, "users", "delete", "carol")
    assert ok(deleted).strip() == "Deleted the SCRAM credentials of user carol."
    ok(roster(broker, admin, "users", "delete", "dave"))
    after = roster(broker, admin, "users", "list")
    assert "carol" not in ok(after) and "dave" not in after.stdout
    refused = roster(broker, carol, "topics", "list")
    assert refused.returncode != 0 and "carol" in refused.stderr
    for result in added + [from_stdin, listed, deleted, after, refused]:
        no_secret(result, CAROL, "dave-secret-1", PASSWORDS["admin"])


@pytest.mark.parametrize("names", ["java", "librdkafka"])
@pytest.mark.parametrize("command", [("topics", "list"), ("groups", "describe", "some-group"),
                                     ("offsets", "describe", "some-group"), ("users", "list")])
def test_wrong_password_is_one_clear_line(secured, tmp_path, names, command):
    broker, pki, _ = secured
    path = tmp_path / "wrong.properties"
    if names == "java":
        java_config(path, pki, "alice", WRONG)
    else:
        path.write_text(f"security.protocol=SASL_SSL\nssl.ca.location={pki.ca}\n"
                        f"sasl.mechanism=SCRAM-SHA-256\nsasl.username=alice\n"
                        f"sasl.password={WRONG}\n")
    result = roster(broker, path, *command)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("roster: SASL SCRAM-SHA-") and "as user 'alice'" in lines[0]
    assert "invalid credentials" in lines[0], lines[0]
    no_secret(result, WRONG)


def test_broken_command_config(secured, tmp_path):
    broker, pki, _ = secured
    cases = {
        "missing": (None, "cannot read"),
        "jks": ("security.protocol=SSL\nssl.truststore.type=JKS\n"
                "ssl.truststore.location=/x.jks\n", "ssl.truststore.type=JKS"),
        "no-ca": ("security.protocol=SSL\nssl.truststore.location=/nonexistent/ca.pem\n",
                  "ssl.truststore.location=/nonexistent/ca.pem: no such file"),
        "gssapi": ("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n",
                   "sasl.mechanism=GSSAPI"),
        "no-password": ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                        "sasl.username=alice\n", "needs sasl.password"),
        "bad-jaas": ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                     f'x.PlainLoginModule required username="a" password="{WRONG}"\n',
                     "must end with ';'"),
    }
    (tmp_path / "truststore.jks").write_bytes(b"\xfe\xed\xfe\xed not PEM")
    cases["jks-file"] = (f"security.protocol=SSL\nssl.truststore.location={tmp_path}/"
                         "truststore.jks\n", "PEM expected")
    for name, (text, expected) in cases.items():
        path = tmp_path / f"{name}.properties"
        if text is not None:
            path.write_text(text)
        result = roster(broker, path, "topics", "list")
        assert result.returncode == 2, (name, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("roster: invalid --command-config: "), \
            (name, result.stderr)
        assert expected in lines[0], (name, lines[0])
        no_secret(result, WRONG)


def test_untrusted_broker_certificate(secured, tmp_path):
    import trustme
    broker, pki, _ = secured
    other = trustme.CA(organization_name="not the broker's CA")
    other.cert_pem.write_to_path(str(tmp_path / "other.pem"))
    path = tmp_path / "untrusted.properties"
    path.write_text(f"security.protocol=SASL_SSL\nssl.truststore.location={tmp_path}/other.pem\n"
                    f"sasl.mechanism=PLAIN\nsasl.username=admin\n"
                    f"sasl.password={PASSWORDS['admin']}\n")
    result = roster(broker, path, "topics", "list")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "certificate is not trusted" in lines[0], result.stderr
    no_secret(result, PASSWORDS["admin"])


# -- reading the file (no broker) --------------------------------------------------------------

def test_properties_file_as_java_reads_it(tmp_path):
    from roster.security.client import ClientSecurity, read_properties
    path = tmp_path / "client.properties"
    path.write_text(
        "# comment\n"
        "! another comment\n"
        "security.protocol = SASL_SSL\n"
        "ssl.truststore.location: /etc/kafka/ca.pem\n"
        "ssl.endpoint.identification.algorithm=\n"
        "sasl.mechanism SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '        username="svc\\u00e9" \\\n'
        '        password="p=a:s\\\\s";\n'
        "ssl.ca.location=/etc/librdkafka/ca.pem\n")
    properties = read_properties(str(path))
    assert properties["security.protocol"] == "SASL_SSL"
    assert properties["ssl.truststore.location"] == "/etc/kafka/ca.pem"
    assert properties["sasl.mechanism"] == "SCRAM-SHA-256"
    assert properties["sasl.jaas.config"].endswith('username="svcé" password="p=a:s\\s";')
    security = ClientSecurity.from_config(properties)
    # librdkafka's name wins over Java's when a file has both
    assert (security.ca_location, security.check_hostname) == ("/etc/librdkafka/ca.pem", False)
    # the JAAS value's own backslash escapes the next character
    assert (security.username, security.password) == ("svcé", "p=a:ss")
    assert "p=a:ss" not in repr(security)
