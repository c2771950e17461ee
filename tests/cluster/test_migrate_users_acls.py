"""`roster migrate` carries SCRAM users and ACLs into the three-node cluster, and there they
do what they did on roster: a secured roster (SCRAM, StandardAuthorizer, no access without an
ACL) holds two users and ACLs of every kind MirrorMaker 2 drops (a topic WRITE allow, a
prefixed READ allow, a DENY beside it, a group ACL, a transactional-id ACL);
`roster migrate --execute` with the users' passwords in a file moves them; then the same
operations, with confluent-kafka as each user over SASL_PLAINTEXT, give the same answers on
roster and on the cluster: each user logs in with both mechanisms, a wrong password is
refused (the broker's answer, not a timeout), each ACL allows what it allowed and refuses what
it refused. A second run finds nothing to do."""
from __future__ import annotations

import os

import pytest

from roster.admin import acls as acl_wire
from roster.admin import topics as topic_wire
from roster.admin.client import AdminClient
from roster.security import users as user_wire
from roster.security.acls import AclBinding, AclFilter, Operation, Pattern, Permission, Resource
from roster.security.client import ClientSecurity
from tests.cluster import access
from tests.cluster.secured_roster import SHA256, SHA512, admin_properties, secured_roster
from tests.support.cli import roster
from tests.support.kafka_cluster import ADMIN
from tests.support.kafka_peer import unique_name

pytestmark = pytest.mark.xdist_group("kafka_cluster")


def test_users_and_acls_move_and_refuse_on_the_cluster_what_they_refused_on_roster(
        cluster, tmp_path):
    tag = unique_name("uacl")
    reader, writer = f"reader-{tag}", f"writer-{tag}"
    passwords = {reader: "reader pass=word", writer: "writer-s3cret"}
    orders, secret, events = f"{tag}-orders", f"{tag}-secret", f"{tag}-events"
    readers, others = f"{tag}-readers", f"{tag}-others"
    tx, other_tx = f"{tag}-tx", f"{tag}-tx-other"
    allow, deny = Permission.ALLOW, Permission.DENY
    bindings = [
        # the reader: every topic of the prefix but the secret one, in its own group only
        AclBinding(Resource.TOPIC, f"{tag}-", Pattern.PREFIXED, f"User:{reader}", "*",
                   Operation.READ, allow),
        AclBinding(Resource.TOPIC, secret, Pattern.LITERAL, f"User:{reader}", "*",
                   Operation.READ, deny),
        AclBinding(Resource.GROUP, readers, Pattern.LITERAL, f"User:{reader}", "*",
                   Operation.READ, allow),
        # the writer: orders alone (MirrorMaker never copies a WRITE allow), and its
        # transactions under one transactional id
        AclBinding(Resource.TOPIC, orders, Pattern.LITERAL, f"User:{writer}", "*",
                   Operation.WRITE, allow),
        AclBinding(Resource.TRANSACTIONAL_ID, tx, Pattern.LITERAL, f"User:{writer}", "*",
                   Operation.WRITE, allow),
    ]
    source = secured_roster(tmp_path / "roster")
    try:
        admin = ClientSecurity(protocol="SASL_PLAINTEXT", mechanism=SHA512,
                               username=ADMIN[0], password=ADMIN[1])
        with AdminClient(source.listener("SASL_PLAINTEXT"), security=admin) as client:
            for topic in (orders, secret, events):
                topic_wire.create(client, topic, 1, {})
            acl_wire.add(client, bindings)
            for mechanism in (SHA256, SHA512):
                user_wire.add_wire(client, reader, mechanism, passwords[reader], 8192)
            user_wire.add_wire(client, writer, SHA512, passwords[writer], 4096)

        def operations(bootstrap: str) -> dict[str, str]:
            """The same questions on either side, in an order that gives the reads a
            record: the writer writes first."""
            r, w = (reader, passwords[reader]), (writer, passwords[writer])
            return {
                "reader logs in (SHA-256)": access.login(bootstrap, *r, SHA256),
                "reader logs in (SHA-512)": access.login(bootstrap, *r, SHA512),
                "writer logs in": access.login(bootstrap, *w, SHA512),
                "wrong password": access.login(bootstrap, reader, "not-the-password", SHA512),
                "writer writes orders": access.produce(bootstrap, *w, SHA512, orders, b"o"),
                "writer writes events": access.produce(bootstrap, *w, SHA512, events, b"e"),
                "writer's transaction": access.produce_transactionally(
                    bootstrap, *w, SHA512, tx, orders, b"t"),
                "writer's other transactional id": access.produce_transactionally(
                    bootstrap, *w, SHA512, other_tx, orders, b"t"),
                "reader reads orders in its group": access.consume(
                    bootstrap, *r, SHA256, orders, readers),
                "reader reads the secret topic": access.consume(
                    bootstrap, *r, SHA512, secret, readers),
                "reader reads orders in another group": access.consume(
                    bootstrap, *r, SHA512, orders, others),
            }

        expected = {
            "reader logs in (SHA-256)": "ok", "reader logs in (SHA-512)": "ok",
            "writer logs in": "ok", "wrong password": "_AUTHENTICATION",
            "writer writes orders": "ok",
            "writer writes events": "TOPIC_AUTHORIZATION_FAILED",
            "writer's transaction": "ok",
            "writer's other transactional id": "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
            "reader reads orders in its group": "ok",
            "reader reads the secret topic": "TOPIC_AUTHORIZATION_FAILED",
            "reader reads orders in another group": "GROUP_AUTHORIZATION_FAILED",
        }
        on_roster = operations(source.listener("SASL_PLAINTEXT"))
        assert on_roster == expected

        users = tmp_path / "users.txt"
        users.write_text("".join(f"{u}={p}\n" for u, p in passwords.items()))
        os.chmod(users, 0o600)
        argv = ("migrate", "--bootstrap-server", source.listener("SASL_PLAINTEXT"),
                "--command-config", admin_properties(tmp_path / "admin.properties"),
                "--to", cluster.sasl_bootstrap, "--users-file", str(users))
        done = roster(*argv, "--execute")
        again = roster(*argv)
    finally:
        source.stop()
    print(f"--- execute\n{done.stdout}{done.stderr}--- again\n{again.stdout}{again.stderr}")
    for run in (done, again):
        assert all(p not in run.stdout + run.stderr for p in passwords.values())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "to the Kafka cluster" in done.stdout and "(3 broker(s))" in done.stdout
    for binding in bindings:
        assert f"add {binding.permission.name} {binding.operation.name} for " \
               f"{binding.principal} from host *" in done.stdout, binding
    for user, mechanism in ((reader, SHA256), (reader, SHA512), (writer, SHA512)):
        assert f"{user} {mechanism}" in done.stdout, (user, mechanism)
    assert "the target shows nothing left to migrate" in done.stdout
    assert again.returncode == 0, again.stderr
    assert "nothing to migrate" in again.stdout and "Dry run" not in again.stdout

    with AdminClient(cluster.sasl_bootstrap, security=admin) as client:
        present = set(acl_wire.describe(client, AclFilter()))
        assert set(bindings) <= present
        carried = dict(user_wire.list_wire(client))
    assert sorted(carried[reader]) == [(SHA256, 8192), (SHA512, 8192)]
    assert carried[writer] == [(SHA512, 4096)]
    # a credential reaches each node's metadata image a moment after the controller commits
    # it: every node takes both users before the clients below ask any of them
    for user, mechanism in ((reader, SHA256), (reader, SHA512), (writer, SHA512)):
        cluster.wait_authenticates(user, passwords[user], mechanism)
    assert operations(cluster.sasl_bootstrap) == on_roster
