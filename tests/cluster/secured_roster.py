"""roster secured as a site would secure it before moving to Kafka, for the tests that check
users and ACLs arrive on the three-node cluster: SCRAM-SHA-256/512 on a SASL_PLAINTEXT
listener, the StandardAuthorizer with no access without an ACL (as the cluster), the admin a
super user with the cluster admin's password, and a PLAINTEXT listener whose ANONYMOUS
principal is a super user too (for MirrorMaker and the tests' own set-up)."""
from __future__ import annotations

from pathlib import Path

from tests.support.kafka_cluster import ADMIN
from tests.support.kafka_peer import PEER_SETTINGS
from tests.support.security import PASSWORDS, SecureBroker, add_users_offline

SHA256, SHA512 = "SCRAM-SHA-256", "SCRAM-SHA-512"


def secured_roster(root: Path) -> SecureBroker:
    """Started; `.listener("SASL_PLAINTEXT")` and `.listener("PLAINTEXT")` name its ports."""
    # add_users_offline gives the admin security.py's password: the cluster's, so one
    # --command-config serves both sides
    assert PASSWORDS[ADMIN[0]] == ADMIN[1]
    root.mkdir(parents=True, exist_ok=True)
    add_users_offline(root / "data", root, users=(ADMIN[0],))
    return SecureBroker(root / "data", {
        **PEER_SETTINGS,
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": f"{SHA256},{SHA512}",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": f"User:{ADMIN[0]};User:ANONYMOUS",
        "connection.failed.authentication.delay.ms": "100",
    }).start()


def admin_properties(path: Path) -> str:
    """One client properties file for both sides (`roster migrate --command-config`): the
    same admin on roster and the cluster."""
    path.write_text("security.protocol=SASL_PLAINTEXT\n"
                    f"sasl.mechanism={SHA512}\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                    f'required username="{ADMIN[0]}" password="{ADMIN[1]}";\n')
    return str(path)
