"""The passwords `roster migrate --users-file FILE` carries SCRAM users with.

Neither roster nor Kafka keeps anything a credential can be re-made from (only StoredKey and
ServerKey), so a user moves to another cluster only with its password. The file is either
`user=password` lines (blank lines and lines starting with # are skipped; the password is
everything after the first '=', spaces included) or one JSON object {"user": "password"}.

Nothing read here is ever printed, logged or written: errors name the file and the line, never
what the line holds, and Passwords hides its values from repr().
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path


class UsersFileError(Exception):
    pass


class Passwords:
    """user -> password, read once; repr() and str() show the user names only."""

    def __init__(self, passwords: dict[str, str]) -> None:
        self._passwords = dict(passwords)

    def get(self, user: str) -> str | None:
        return self._passwords.get(user)

    def users(self) -> list[str]:
        return sorted(self._passwords)

    def __repr__(self) -> str:
        return f"Passwords(users={self.users()})"

    __str__ = __repr__


def world_readable(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & stat.S_IROTH)
    except OSError:
        return False


def read(path: str) -> Passwords:
    try:
        # utf-8-sig: an editor's byte-order mark would otherwise join the first user's name
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise UsersFileError(f"the users file {path} is not UTF-8 text") from None
    except OSError as exc:
        raise UsersFileError(f"cannot read the users file {path}: "
                             f"{exc.strerror or exc}") from None
    if text.lstrip().startswith(("{", "[")):
        return Passwords(_from_json(path, text))
    return Passwords(_from_lines(path, text))


def _from_json(path: str, text: str) -> dict[str, str]:
    try:
        data = json.loads(text, object_pairs_hook=_refuse_twice(path))
    except json.JSONDecodeError as exc:
        # the position only: the decoder's message may quote the text
        raise UsersFileError(f"the users file {path} is not valid JSON (line {exc.lineno}, "
                             f"column {exc.colno})") from None
    if not isinstance(data, dict):
        raise UsersFileError(f"the users file {path}: expected one JSON object "
                             '{"user": "password", ...}')
    for user, password in data.items():
        if not user:
            raise UsersFileError(f"the users file {path}: a user name is empty")
        if not isinstance(password, str) or not password:
            raise UsersFileError(f"the users file {path}: the password of user {user} is "
                                 "not a non-empty string")
    return data


def _refuse_twice(path: str):
    """json.loads keeps the last of a repeated key; a user given twice is refused instead, as
    in the line form (which of the two passwords was meant cannot be known)."""
    def pairs(items: list[tuple[str, object]]) -> dict:
        seen: dict = {}
        for key, value in items:
            if key in seen:
                raise UsersFileError(f"the users file {path}: user {key} is given twice")
            seen[key] = value
        return seen
    return pairs


def _from_lines(path: str, text: str) -> dict[str, str]:
    passwords: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        user, sep, password = line.partition("=")
        user = user.strip()
        if not sep or not user:
            raise UsersFileError(f"the users file {path}, line {number}: expected "
                                 "user=password")
        if not password:
            raise UsersFileError(f"the users file {path}, line {number}: user {user} has an "
                                 "empty password")
        if user in passwords:
            raise UsersFileError(f"the users file {path}, line {number}: user {user} is "
                                 "given twice")
        passwords[user] = password
    if not passwords:
        raise UsersFileError(f"the users file {path} names no user")
    return passwords
