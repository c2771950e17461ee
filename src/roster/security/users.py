"""`roster users`: SCRAM users, offline in a data directory or over the wire.

Offline (`--data-dir DIR`, the broker stopped): the credential file is written directly, as
`kafka-storage format --add-scram` does, so a fresh broker starts with its users and is never
open by accident. Over the wire: DescribeUserScramCredentials and AlterUserScramCredentials
through any client object with AdminClient's `call(api_key, **fields)` and
`entry(api_key, *path)` (roster.admin.client.AdminClient; a TLS/SASL-capable one works the
same), so the commands also manage users on Apache Kafka.

Passwords are read from a file (or stdin), never from the command line, and never printed.
The client side salts and iterates them (RFC 5802 Hi(), as Kafka's admin client does): only
the salt and salted password travel, and only StoredKey/ServerKey are kept.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from roster.security.credentials import (
    DEFAULT_ITERATIONS,
    HASHES,
    MAX_ITERATIONS,
    MECHANISM_IDS,
    MECHANISM_NAMES,
    MIN_ITERATIONS,
    ScramStore,
    from_password,
)

DESCRIBE, ALTER = 50, 51


class UsersError(Exception):
    pass


def read_password(path: str) -> str:
    """The first line of a file ('-': stdin), without its line ending."""
    import sys
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsersError(f"cannot read the password file {path}: "
                         f"{getattr(exc, 'strerror', None) or exc}") from None
    password = text.splitlines()[0] if text else ""
    if not password:
        raise UsersError(f"the password file {path} is empty")
    return password


def _check(name: str, mechanism: str, iterations: int) -> None:
    if not name:
        raise UsersError("a user name must not be empty")
    if mechanism not in MECHANISM_IDS:
        raise UsersError(f"unknown mechanism {mechanism}: use SCRAM-SHA-256 or SCRAM-SHA-512")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise UsersError(f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}")


def salted_password(mechanism: str, password: str, iterations: int,
                    salt: bytes | None = None) -> tuple[bytes, bytes]:
    """(salt, SaltedPassword) for an AlterUserScramCredentials upsertion: Hi() of RFC 5802,
    PBKDF2 with the mechanism's HMAC over the password's UTF-8 bytes (as Kafka's admin client
    computes it)."""
    salt = salt if salt is not None else os.urandom(32)
    return salt, hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode("utf-8"), salt,
                                     iterations)


# -- offline, in a data directory -----------------------------------------------------------

def add_offline(data_dir: Path, name: str, mechanism: str, password: str,
                iterations: int = DEFAULT_ITERATIONS) -> None:
    _check(name, mechanism, iterations)
    store = ScramStore.open(data_dir)
    store.apply([(name, mechanism, from_password(mechanism, password, iterations))])


def delete_offline(data_dir: Path, name: str, mechanism: str | None = None) -> list[str]:
    store = ScramStore.open(data_dir)
    mechanisms = [mechanism] if mechanism else sorted(store.mechanisms(name))
    if not mechanisms or any(store.lookup(name, m) is None for m in mechanisms):
        raise UsersError(f"user {name} has no {mechanism or 'SCRAM'} credential")
    store.apply(deletions=[(name, m) for m in mechanisms])
    return mechanisms


def list_offline(data_dir: Path) -> list[tuple[str, list[tuple[str, int]]]]:
    store = ScramStore.open(data_dir)
    return [(name, [(m, c.iterations) for m, c in sorted(store.mechanisms(name).items())])
            for name in store.users()]


# -- over the wire --------------------------------------------------------------------------

def _raise_for(results) -> None:
    failures = [f"{r.user}: {r.error_message or r.error_code.name}" for r in results
                if r.error_code != 0]
    if failures:
        raise UsersError("; ".join(failures))


def add_wire(client, name: str, mechanism: str, password: str,
             iterations: int = DEFAULT_ITERATIONS) -> None:
    _check(name, mechanism, iterations)
    salt, salted = salted_password(mechanism, password, iterations)
    upsertion = client.entry(ALTER, "upsertions")(
        name=name, mechanism=MECHANISM_IDS[mechanism], iterations=iterations, salt=salt,
        salted_password=salted)
    answer = client.call(ALTER, deletions=(), upsertions=(upsertion,))
    _raise_for(answer.results)


def delete_wire(client, name: str, mechanism: str | None = None) -> list[str]:
    mechanisms = [mechanism] if mechanism else [m for m, _ in _describe_one(client, name)]
    if not mechanisms:
        raise UsersError(f"user {name} has no SCRAM credential")
    deletion = client.entry(ALTER, "deletions")
    for mech in mechanisms:  # one alteration per user per request (Kafka's rule)
        answer = client.call(ALTER, upsertions=(), deletions=(
            deletion(name=name, mechanism=MECHANISM_IDS[mech]),))
        _raise_for(answer.results)
    return mechanisms


def _describe_one(client, name: str) -> list[tuple[str, int]]:
    user = client.entry(DESCRIBE, "users")
    answer = client.call(DESCRIBE, users=(user(name=name),))
    _raise_for(answer.results)
    return [(MECHANISM_NAMES.get(i.mechanism, str(i.mechanism)), i.iterations)
            for r in answer.results for i in r.credential_infos]


def list_wire(client) -> list[tuple[str, list[tuple[str, int]]]]:
    answer = client.call(DESCRIBE, users=None)
    if answer.error_code != 0:
        raise UsersError(answer.error_message or answer.error_code.name)
    _raise_for(answer.results)
    return sorted((r.user, [(MECHANISM_NAMES.get(i.mechanism, str(i.mechanism)), i.iterations)
                            for i in r.credential_infos]) for r in answer.results)


def format_users(rows) -> list[str]:
    return [f"{name}\t" + ",".join(f"{m}(iterations={i})" for m, i in mechs)
            for name, mechs in rows]
