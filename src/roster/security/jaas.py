"""Kafka's JAAS configuration string, as `sasl.jaas.config` holds it:

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret"
        user_admin="admin-secret" user_alice="alice-secret";

On a broker, PLAIN's `user_<name>="<password>"` options are its users; Java clients (and Spark
users) give their own identity the same way with `username` and `password`. Values are
quoted strings (backslash escapes the next character) or bare words.
"""
from __future__ import annotations

from dataclasses import dataclass, field


class JaasError(ValueError):
    pass


@dataclass
class JaasEntry:
    module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def plain_users(self) -> dict[str, str]:
        return {k[len("user_"):]: v for k, v in self.options.items() if k.startswith("user_")}

    def __repr__(self) -> str:  # options hold passwords: never shown
        return f"JaasEntry({self.module!r}, {self.flag!r}, options=[{len(self.options)} hidden])"


_FLAGS = ("required", "requisite", "sufficient", "optional")


def _tokens(text: str):
    i = 0
    n = len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
        elif char in "=;":
            yield char
            i += 1
        elif char == '"':
            i += 1
            out = []
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                out.append(text[i])
                i += 1
            if i >= n:
                raise JaasError("sasl.jaas.config: a quoted value is not closed")
            i += 1
            yield ("quoted", "".join(out))
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in '=;"':
                i += 1
            yield ("word", text[start:i])


def parse_jaas(text: str) -> list[JaasEntry]:
    """Every login module entry in the string (Kafka takes exactly one)."""
    entries = []
    tokens = list(_tokens(text))
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not isinstance(token, tuple) or token[0] != "word":
            raise JaasError("sasl.jaas.config: expected a login module class name")
        module = token[1]
        if i + 1 >= len(tokens) or not isinstance(tokens[i + 1], tuple) \
                or tokens[i + 1][1].lower() not in _FLAGS:
            raise JaasError(f"sasl.jaas.config: {module} needs a control flag "
                            f"({', '.join(_FLAGS)})")
        entry = JaasEntry(module, tokens[i + 1][1].lower())
        i += 2
        while i < len(tokens) and tokens[i] != ";":
            key = tokens[i]
            if not (isinstance(key, tuple) and key[0] == "word") or i + 2 >= len(tokens) \
                    or tokens[i + 1] != "=" or not isinstance(tokens[i + 2], tuple):
                raise JaasError("sasl.jaas.config: expected name=\"value\" options")
            entry.options[key[1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise JaasError("sasl.jaas.config: the entry must end with ';'")
        i += 1
        entries.append(entry)
    if not entries:
        raise JaasError("sasl.jaas.config: no login module")
    return entries


def plain_users(text: str) -> dict[str, str]:
    users: dict[str, str] = {}
    for entry in parse_jaas(text):
        users.update(entry.plain_users)
    return users


def client_credentials(text: str) -> tuple[str, str]:
    """username and password from a client's JAAS entry (PlainLoginModule, ScramLoginModule)."""
    for entry in parse_jaas(text):
        if "username" in entry.options and "password" in entry.options:
            return entry.options["username"], entry.options["password"]
    raise JaasError("sasl.jaas.config: no username and password options")
