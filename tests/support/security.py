"""Secured brokers for tests: certificates made with trustme in the test's directory (never
committed), SCRAM users added offline before the first start, an OAUTHBEARER JWKS, and a
broker process with one listener of each security protocol."""
from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.process import START_TIMEOUT_S, BrokerProcess

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
LISTENER_LINE = re.compile(r"roster listener (\S+) \((\S+)\) on (\S+):(\d+)")


@dataclass
class Pki:
    directory: Path
    ca: Path            # trusted CA (PEM)
    server: Path        # server key + chain (PEM), for 127.0.0.1 and localhost
    client_cert: Path   # client certificate chain, CN=client
    client_key: Path
    rogue_cert: Path    # a client certificate from a CA the broker does not trust
    rogue_key: Path
    expired_cert: Path  # a client certificate of the trusted CA, expired
    expired_key: Path


def make_pki(directory: Path) -> Pki:
    import trustme
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="roster tests")
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    server = ca.issue_cert("localhost", "127.0.0.1", common_name="broker")
    server.private_key_and_cert_chain_pem.write_to_path(str(directory / "server.pem"))
    client = ca.issue_cert("client@example.com", common_name="client",
                           organization_name="roster tests", organization_unit_name="apps")
    client.cert_chain_pems[0].write_to_path(str(directory / "client.pem"))
    client.private_key_pem.write_to_path(str(directory / "client.key"))
    rogue_ca = trustme.CA(organization_name="somebody else")
    rogue = rogue_ca.issue_cert("rogue@example.com", common_name="rogue")
    rogue.cert_chain_pems[0].write_to_path(str(directory / "rogue.pem"))
    rogue.private_key_pem.write_to_path(str(directory / "rogue.key"))
    now = datetime.datetime.now(datetime.timezone.utc)
    expired = ca.issue_cert("old@example.com", common_name="expired",
                            not_before=now - datetime.timedelta(days=30),
                            not_after=now - datetime.timedelta(days=1))
    expired.cert_chain_pems[0].write_to_path(str(directory / "expired.pem"))
    expired.private_key_pem.write_to_path(str(directory / "expired.key"))
    return Pki(directory, directory / "ca.pem", directory / "server.pem",
               directory / "client.pem", directory / "client.key",
               directory / "rogue.pem", directory / "rogue.key",
               directory / "expired.pem", directory / "expired.key")


@dataclass
class OAuth:
    jwks: Path
    private_key: object
    kid: str = "test-key"

    def token(self, subject: str, lifetime_s: int = 3600, audience: str = "roster",
              key=None) -> str:
        import jwt
        now = int(time.time())
        return jwt.encode({"sub": subject, "iat": now, "exp": now + lifetime_s,
                           "aud": audience, "iss": "https://idp.test"},
                          key or self.private_key, algorithm="RS256",
                          headers={"kid": self.kid})


def make_oauth(directory: Path) -> OAuth:
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": "test-key", "use": "sig", "alg": "RS256"})
    path = directory / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk]}))
    return OAuth(path, key)


def add_users_offline(data_dir: Path, directory: Path, users=("alice", "bob")) -> None:
    """`roster users add` before the first start, through the real command line."""
    for name in users:
        password_file = directory / f"{name}.password"
        password_file.write_text(PASSWORDS[name] + "\n")
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            subprocess.run([sys.executable, "-m", "roster", "users", "--data-dir",
                            str(data_dir), "add", name, "--mechanism", mechanism,
                            "--password-file", str(password_file)],
                           check=True, capture_output=True, text=True)


def plain_jaas(users=("admin",)) -> str:
    options = " ".join(f'user_{u}="{PASSWORDS[u]}"' for u in users)
    return ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="admin" password="{PASSWORDS["admin"]}" {options};')


def secure_settings(pki: Pki, oauth: OAuth | None = None, **extra: str) -> dict[str, str]:
    settings = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,"
                     "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "ssl.client.auth": "required",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS + (("OAUTHBEARER",) if oauth else ())),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(),
        "group.initial.rebalance.delay.ms": "0",
        "connection.failed.authentication.delay.ms": "100",
    }
    if oauth is not None:
        settings.update({"sasl.oauthbearer.jwks.endpoint.url": oauth.jwks.as_uri(),
                         "sasl.oauthbearer.expected.audience": "roster",
                         "sasl.oauthbearer.expected.issuer": "https://idp.test"})
    settings.update(extra)
    return settings


class SecureBroker(BrokerProcess):
    """A broker with several listeners; `listener("SASL_SSL")` is its host:port. After the
    first start the ports are pinned, so a restart listens where clients expect it."""

    def start(self, timeout_s: float = START_TIMEOUT_S) -> SecureBroker:
        super().start(timeout_s)
        self.listeners = {}
        for line in self.output:
            match = LISTENER_LINE.match(line)
            if match:
                self.listeners[match.group(1)] = f"{match.group(3)}:{match.group(4)}"
        if self.listeners:
            self.settings["listeners"] = ",".join(
                f"{name}://{address}" for name, address in self.listeners.items())
        return self

    def listener(self, name: str) -> str:
        return self.listeners[name]

    def log_text(self) -> str:
        return "\n".join(self.output)


def secure_broker_with_console(tmp_path: Path, **extra: str) -> tuple[SecureBroker, str]:
    """A started SecureBroker (secure_settings and `extra`) whose users alice and bob were
    added before its first start (their password files in tmp_path), with its HTTP console on
    a free loopback port; and the console's URL."""
    from tests.support.ports import free_port
    pki = make_pki(tmp_path / "pki")
    add_users_offline(tmp_path / "data", tmp_path)
    port = free_port()
    broker = SecureBroker(tmp_path / "data", secure_settings(
        pki, **{"http.port": str(port), **extra})).start()
    return broker, f"http://127.0.0.1:{port}/"
