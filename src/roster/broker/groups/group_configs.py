"""Group configs (Kafka's ConfigResource type GROUP, KIP-848): per-group settings, set with
IncrementalAlterConfigs and read with DescribeConfigs (what `kafka-configs --entity-type groups`
and the admin clients send). Each group type brings its own table of them through its
registration (GroupTypeRegistration.group_configs): the consumer protocol's session timeout and
heartbeat interval (consumer_configs.py), a streams group's streams.* (streams_configs.py),
and roster's pre-registered static members of a classic group (expected_members.py).

A table answers, for its names:
  `names`                        the names it takes, in the order DescribeConfigs lists them;
  `parse(name, value)`           the value from its text (or from the file), ValueError with
                                 Kafka's message otherwise;
  `validate(own, broker)`        the group's values set on it (`own`, every table's) against
                                 the broker's settings, ValueError with Kafka's message;
  `described(name, own)`         whether DescribeConfigs lists `name` (Kafka leaves its
                                 internal ones out until they are set);
  `default(name, broker)`        the value when the group has none;
  `origin(name)`                 the broker setting it defaults to (a synonym), or None;
  `kind(name)`                   its ConfigType: "int", "long", "list" or "boolean".

Kafka keeps them in its metadata log; roster keeps them in `group-configs.json` in the data
directory, replaced atomically and fsynced before the answer.
"""
from __future__ import annotations

import json
from pathlib import Path

from roster.log.files import durable_replace

FILE = "group-configs.json"
SET, DELETE = 0, 1   # IncrementalAlterConfigs operations (APPEND/SUBTRACT: not for these)
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


class GroupConfigError(ValueError):
    """INVALID_CONFIG (or INVALID_REQUEST for an operation these settings do not take)."""

    def __init__(self, message: str, code: str = "invalid_config") -> None:
        super().__init__(message)
        self.code = code


def number(name: str, value, kind: str = "int", at_least: int | None = None) -> int:
    """A number from its text as Kafka's ConfigDef parses an INT or a LONG, in its words."""
    most = INT_MAX if kind == "int" else LONG_MAX
    try:
        parsed = int(str(value).strip())
    except (TypeError, ValueError):
        parsed = None
    if parsed is None or not -most - 1 <= parsed <= most:
        raise ValueError(f"Invalid value {value} for configuration {name}: Not a number of "
                         f"type {kind.upper()}")
    if at_least is not None and parsed < at_least:
        raise ValueError(f"Invalid value {value} for configuration {name}: Value must be at "
                         f"least {at_least}")
    return parsed


def boolean(name: str, value) -> bool:
    """A BOOLEAN from its text as Kafka's ConfigDef parses it, in its words."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"Invalid value {value} for configuration {name}: Expected value to "
                         "be either true or false")
    return text == "true"


class GroupConfigStore:
    def __init__(self, data_dir: Path, config, tables=()) -> None:
        self._path = Path(data_dir) / FILE
        self._config = config
        self._tables = tuple(tables)
        self._table_of = {name: table for table in self._tables for name in table.names}
        # group id -> {name: value}; shared with the coordinators (they read it live)
        self.values: dict[str, dict[str, object]] = {}
        if self._path.exists():
            loaded = json.loads(self._path.read_text())
            self.values.update({g: {k: self._parse(k, v) for k, v in c.items()
                                    if k in self._table_of}
                                for g, c in loaded.items()})

    def own(self, group_id: str) -> dict:
        """The configs set on the group (none: empty)."""
        return self.values.get(group_id, {})

    def effective(self, group_id: str) -> list[tuple[str, object, bool, str | None, str]]:
        """(name, value, set on the group, the broker setting it defaults to, its kind) for
        each config DescribeConfigs lists, table by table."""
        own = self.own(group_id)
        return [(name, own[name] if name in own else table.default(name, self._config),
                 name in own, table.origin(name), table.kind(name))
                for table in self._tables for name in table.names
                if table.described(name, own)]

    def alter(self, group_id: str, changes, validate_only: bool = False) -> None:
        """changes: (name, operation, value) triples."""
        own = dict(self.own(group_id))
        for name, operation, value in changes:
            if name not in self._table_of:
                raise GroupConfigError(f"Unknown group config name: {name}")
            if operation == DELETE:
                own.pop(name, None)
                continue
            if operation != SET:
                raise GroupConfigError(f"{name}: only SET and DELETE apply to group configs",
                                       "invalid_request")
            own[name] = self._parse(name, value)
        for table in self._tables:
            try:
                table.validate(own, self._config)
            except ValueError as exc:
                raise GroupConfigError(str(exc)) from None
        if validate_only:
            return
        updated = {g: dict(c) for g, c in self.values.items()}
        if own:
            updated[group_id] = own
        else:
            updated.pop(group_id, None)
        durable_replace(self._path, json.dumps(updated, sort_keys=True).encode())
        self.values.clear()
        self.values.update(updated)

    def _parse(self, name: str, value) -> object:
        try:
            return self._table_of[name].parse(name, value)
        except ValueError as exc:
            raise GroupConfigError(str(exc)) from None
