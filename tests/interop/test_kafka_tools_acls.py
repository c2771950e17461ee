"""kafka-acls (org.apache.kafka.tools.AclCommand from the resolved 4.4.0 jars) against an
ACL-enabled roster (StandardAuthorizer, SASL PLAIN) and against the secure Apache Kafka peer,
with the same assertions: add, list by resource and by principal, a prefixed group pattern,
remove, and the refusal a non-super user gets. The normalised outputs are equal."""
from __future__ import annotations

import subprocess

import pytest

from tests.interop.test_acls import acl_settings
from tests.support.kafka_peer import java_command, unique_name
from tests.support.security import PASSWORDS, SecureBroker

ACLS = "org.apache.kafka.tools.AclCommand"


@pytest.fixture(scope="module")
def roster_secure(tmp_path_factory):
    broker = SecureBroker(tmp_path_factory.mktemp("tools-acls") / "data", acl_settings()).start()
    yield broker
    broker.stop()


@pytest.fixture
def secure(request, tmp_path):
    """(bootstrap of the SASL_PLAINTEXT listener, command-config writer) for roster or Kafka."""
    if request.param == "kafka":
        peer = request.getfixturevalue("kafka_peer_secure")
        return peer.bootstrap
    return request.getfixturevalue("roster_secure").listener("SASL_PLAINTEXT")


def acls(bootstrap: str, tmp_path, user: str, *args: str) -> subprocess.CompletedProcess:
    config = tmp_path / f"{user}.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                      "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                      f'required username="{user}" password="{PASSWORDS[user]}";\n')
    done = subprocess.run(java_command(ACLS, "--bootstrap-server", bootstrap, "--command-config",
                                       str(config), *args),
                          capture_output=True, text=True, timeout=120)
    print(f"$ kafka-acls ({user}) {' '.join(args)} -> {done.returncode}\n{done.stdout}{done.stderr}")
    return done


def pattern(kind: str, name: str, pattern_type: str = "LITERAL") -> str:
    return f"ResourcePattern(resourceType={kind}, name={name}, patternType={pattern_type})"


def entry(principal: str, operation: str, permission: str = "ALLOW") -> str:
    return f"(principal={principal}, host=*, operation={operation}, permissionType={permission})"


@pytest.mark.parametrize("secure", [
    pytest.param("roster", marks=[pytest.mark.interop, pytest.mark.xdist_group("tools-acls")]),
    pytest.param("kafka", marks=[pytest.mark.interop, pytest.mark.xdist_group("kafka")]),
], indirect=True)
def test_kafka_acls_adds_lists_and_removes_acls_and_refuses_a_non_super_user(secure, tmp_path):
    topic, prefix = unique_name("acl-topic"), unique_name("acl-group")
    added = acls(secure, tmp_path, "admin", "--add", "--allow-principal", "User:alice",
                 "--operation", "Read", "--operation", "Describe", "--topic", topic)
    assert added.returncode == 0, added.stderr
    assert f"Adding ACLs for resource `{pattern('TOPIC', topic)}`: " in added.stdout
    assert entry("User:alice", "READ") in added.stdout
    assert entry("User:alice", "DESCRIBE") in added.stdout

    prefixed = acls(secure, tmp_path, "admin", "--add", "--deny-principal", "User:bob",
                    "--operation", "Read", "--group", prefix, "--resource-pattern-type",
                    "prefixed")
    assert prefixed.returncode == 0, prefixed.stderr
    assert f"`{pattern('GROUP', prefix, 'PREFIXED')}`" in prefixed.stdout

    by_topic = acls(secure, tmp_path, "admin", "--list", "--topic", topic)
    assert by_topic.returncode == 0
    assert by_topic.stdout.splitlines()[0].rstrip() == \
        f"Current ACLs for resource `{pattern('TOPIC', topic)}`:"
    assert sorted(line.strip() for line in by_topic.stdout.splitlines()[1:] if line.strip()) == \
        sorted([entry("User:alice", "DESCRIBE"), entry("User:alice", "READ")])

    by_principal = acls(secure, tmp_path, "admin", "--list", "--principal", "User:bob")
    assert by_principal.returncode == 0
    assert "ACLs for principal `User:bob`" in by_principal.stdout
    assert f"Current ACLs for resource `{pattern('GROUP', prefix, 'PREFIXED')}`:" \
        in by_principal.stdout
    assert entry("User:bob", "READ", "DENY") in by_principal.stdout
    assert topic not in by_principal.stdout

    refused = acls(secure, tmp_path, "alice", "--list", "--topic", topic)
    assert refused.returncode == 1
    assert "ClusterAuthorizationException" in refused.stdout + refused.stderr

    removed = acls(secure, tmp_path, "admin", "--remove", "--force", "--allow-principal",
                   "User:alice", "--operation", "Read", "--topic", topic)
    assert removed.returncode == 0, removed.stderr
    left = acls(secure, tmp_path, "admin", "--list", "--topic", topic)
    assert [line.strip() for line in left.stdout.splitlines()[1:] if line.strip()] == \
        [entry("User:alice", "DESCRIBE")]
    for args in (["--allow-principal", "User:alice", "--operation", "Describe", "--topic", topic],
                 ["--deny-principal", "User:bob", "--group", prefix,
                  "--resource-pattern-type", "prefixed"]):
        assert acls(secure, tmp_path, "admin", "--remove", "--force", *args).returncode == 0
    assert acls(secure, tmp_path, "admin", "--list", "--topic", topic).stdout.strip() == ""
