"""SCRAM credentials: salted, iterated, stored keys only, durable before anyone is told.

What is kept per user and mechanism is what RFC 5802 lets a server keep and what Kafka keeps in
its metadata log (UserScramCredentialRecord): salt, StoredKey, ServerKey and the iteration
count. The password, and the salted password an admin client sends in
AlterUserScramCredentials, are never written anywhere.

The file `scram-credentials.json` in the data directory holds them all; a change writes a new
file beside it, fsyncs it, renames it over the old one and fsyncs the directory, so a kill -9
or a power loss leaves either the old set or the new one, never a mix. A change is visible
(to authentications and DescribeUserScramCredentials) only once it is durable.

Kafka keeps these as records in its metadata log; roster's set is small and changes rarely, so
one snapshot file does the same job (docs/security.md).
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from roster.frozen import frozen
from roster.log.files import durable_replace

log = logging.getLogger("roster.security")

FILE_NAME = "scram-credentials.json"
# Kafka's ScramMechanism: the mechanisms' wire ids (DescribeUserScramCredentials,
# AlterUserScramCredentials), hash functions and iteration bounds.
MECHANISM_IDS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {v: k for k, v in MECHANISM_IDS.items()}
HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096


@frozen
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_json(self) -> dict:
        enc = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
        return {"salt": enc(self.salt), "stored_key": enc(self.stored_key),
                "server_key": enc(self.server_key), "iterations": self.iterations}

    @classmethod
    def from_json(cls, data: dict) -> ScramCredential:
        dec = base64.b64decode
        return cls(dec(data["salt"]), dec(data["stored_key"]), dec(data["server_key"]),
                   int(data["iterations"]))


def from_salted_password(mechanism: str, salt: bytes, salted_password: bytes,
                         iterations: int) -> ScramCredential:
    """RFC 5802 section 3: ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey =
    H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key"). This is what an admin
    client's AlterUserScramCredentials upsertion (salt and salted password) becomes."""
    name = HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", name).digest()
    stored_key = hashlib.new(name, client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", name).digest()
    return ScramCredential(salt, stored_key, server_key, iterations)


def from_password(mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS,
                  salt: bytes | None = None) -> ScramCredential:
    """A new credential from a password: SaltedPassword = Hi(password, salt, i), PBKDF2 with
    the mechanism's HMAC (RFC 5802), over the password's UTF-8 bytes as Kafka's
    ScramFormatter takes them (no SASLprep, so a password typed for Kafka works here)."""
    salt = salt if salt is not None else os.urandom(32)
    salted = hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode("utf-8"), salt, iterations)
    return from_salted_password(mechanism, salt, salted, iterations)


def password_matches(credential: ScramCredential, mechanism: str, password: str) -> bool:
    """For SASL/PLAIN against the SCRAM store: the password is salted and iterated as the
    credential was, and the StoredKeys compared in constant time."""
    candidate = from_password(mechanism, password, credential.iterations, credential.salt)
    return hmac.compare_digest(candidate.stored_key, credential.stored_key)


class CredentialError(ValueError):
    pass


class ScramStore:
    """Users' SCRAM credentials by user and mechanism, loaded at start, durable on change."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self._lock: asyncio.Lock | None = None
        self._stamp: tuple | None = None  # the file as last read or written

    @classmethod
    def open(cls, data_dir: Path) -> ScramStore:
        store = cls(data_dir)
        store.load()
        return store

    def _file_stamp(self) -> tuple | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def refresh(self) -> None:
        """Read the file again if something else (`roster users --data-dir` while the broker
        runs) replaced it: one stat."""
        stamp = self._file_stamp()
        if stamp != self._stamp:
            try:
                self.load()
            except CredentialError as exc:  # keep serving with the set read before
                self._stamp = stamp
                log.error("%s; keeping the credentials read before", exc)

    def load(self) -> None:
        self._stamp = self._file_stamp()
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self._users = {}
            return
        try:
            data = json.loads(text)
            users = {name: {mech: ScramCredential.from_json(c) for mech, c in mechs.items()
                            if mech in MECHANISM_IDS}
                     for name, mechs in data.get("users", {}).items()}
        except (ValueError, KeyError, TypeError) as exc:
            raise CredentialError(f"{self.path}: not a credential file roster wrote ({exc}); "
                                  "refusing to start with an unknown set of users") from None
        self._users = {name: mechs for name, mechs in users.items() if mechs}

    # -- reading ------------------------------------------------------------------------------

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        self.refresh()
        mechs = self._users.get(user)
        return None if mechs is None else mechs.get(mechanism)

    def users(self) -> list[str]:
        self.refresh()
        return sorted(self._users)

    def mechanisms(self, user: str) -> dict[str, ScramCredential]:
        self.refresh()
        return dict(self._users.get(user, {}))

    def __contains__(self, user: str) -> bool:
        self.refresh()
        return user in self._users

    # -- changing -----------------------------------------------------------------------------

    def _changed(self, upserts: Iterable[tuple[str, str, ScramCredential]],
                 deletions: Iterable[tuple[str, str]]) -> dict[str, dict[str, ScramCredential]]:
        self.refresh()  # build on what is on disk, changes made beside the broker included
        users = {name: dict(mechs) for name, mechs in self._users.items()}
        for name, mechanism in deletions:
            mechs = users.get(name)
            if mechs is not None:
                mechs.pop(mechanism, None)
                if not mechs:
                    del users[name]
        for name, mechanism, credential in upserts:
            users.setdefault(name, {})[mechanism] = credential
        return users

    def apply(self, upserts: Iterable[tuple[str, str, ScramCredential]] = (),
              deletions: Iterable[tuple[str, str]] = ()) -> None:
        """Write the changed set durably, then make it the live one (blocking)."""
        users = self._changed(upserts, deletions)
        self._write(users)
        self._users = users

    async def apply_async(self, upserts: Iterable[tuple[str, str, ScramCredential]] = (),
                          deletions: Iterable[tuple[str, str]] = ()) -> None:
        """apply(), with the file work off the event loop; changes are applied one at a time
        in the order they came."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        upserts, deletions = list(upserts), list(deletions)
        async with self._lock:
            users = self._changed(upserts, deletions)
            await asyncio.to_thread(self._write, users)
            self._users = users

    def _write(self, users: dict[str, dict[str, ScramCredential]]) -> None:
        data = {"version": 1, "users": {
            name: {mech: cred.to_json() for mech, cred in sorted(mechs.items())}
            for name, mechs in sorted(users.items())}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # a name of its own (0600), so the broker and `roster users` never share one
        durable_replace(self.path, json.dumps(data, indent=1, sort_keys=True).encode(),
                        mode=0o600, private_temp=True)
        self._stamp = self._file_stamp()
