"""Group configs (Kafka's ConfigResource type GROUP, KIP-848): per-group overrides of the
consumer group protocol's session timeout and heartbeat interval, and of a streams group's
settings (streams.*, KIP-1071: streams_configs.py), set with IncrementalAlterConfigs and read
with DescribeConfigs (what `kafka-configs --entity-type groups` and the admin clients send).

roster adds the pre-registered static members of a classic group (KIP-345's future work;
coordinator/classic/expectations.py): `group.expected.instance.ids` (a list), or `group.expected.size`,
and `group.expected.refuse.unexpected` (default true). They have no broker-wide default.

Kafka keeps them in its metadata log; roster keeps them in `group-configs.json` in the data
directory, replaced atomically and fsynced before the answer. Validation is Kafka's
GroupConfig.validate: known names, integers, within the broker's
group.consumer.{min,max}.{session.timeout,heartbeat.interval}.ms, and a session timeout larger
than the heartbeat interval; the streams.* ones within the broker's group.streams.* bounds
(streams_configs.validate).
"""
from __future__ import annotations

import json
from pathlib import Path

from roster.broker.groups import streams_configs as streams
from roster.coordinator.classic.expectations import Expected
from roster.log.files import durable_replace

FILE = "group-configs.json"
SESSION = "consumer.session.timeout.ms"
HEARTBEAT = "consumer.heartbeat.interval.ms"
NAMES = (HEARTBEAT, SESSION)   # the consumer group protocol's (validated together)
EXPECTED_IDS = "group.expected.instance.ids"
EXPECTED_SIZE = "group.expected.size"
REFUSE_UNEXPECTED = "group.expected.refuse.unexpected"
EXPECTATIONS = (EXPECTED_IDS, EXPECTED_SIZE, REFUSE_UNEXPECTED)
ALL_NAMES = NAMES + streams.NAMES + EXPECTATIONS
# what DescribeConfigs shows for an expectation not set on the group, and its ConfigType
UNSET = {EXPECTED_IDS: "", EXPECTED_SIZE: -1, REFUSE_UNEXPECTED: True}
TYPES = {EXPECTED_IDS: "list", EXPECTED_SIZE: "int", REFUSE_UNEXPECTED: "boolean",
         **{name: spec.kind for name, spec in streams.SPECS.items()}}
BROKER_DEFAULTS = {SESSION: "group.consumer.session.timeout.ms",
                   HEARTBEAT: "group.consumer.heartbeat.interval.ms",
                   **{name: spec.broker_setting for name, spec in streams.SPECS.items()}}
LIMITS = {SESSION: ("group.consumer.min.session.timeout.ms",
                    "group.consumer.max.session.timeout.ms"),
          HEARTBEAT: ("group.consumer.min.heartbeat.interval.ms",
                      "group.consumer.max.heartbeat.interval.ms")}
SET, DELETE = 0, 1   # IncrementalAlterConfigs operations (APPEND/SUBTRACT: not for these)


class GroupConfigError(ValueError):
    """INVALID_CONFIG (or INVALID_REQUEST for an operation these settings do not take)."""

    def __init__(self, message: str, code: str = "invalid_config") -> None:
        super().__init__(message)
        self.code = code


class GroupConfigStore:
    def __init__(self, data_dir: Path, config) -> None:
        self._path = Path(data_dir) / FILE
        self._config = config
        # group id -> {name: value}; shared with the consumer coordinator (it reads it live)
        self.values: dict[str, dict[str, int]] = {}
        if self._path.exists():
            loaded = json.loads(self._path.read_text())
            self.values.update({g: {k: _parse(k, v) for k, v in c.items() if k in ALL_NAMES}
                                for g, c in loaded.items()})

    def effective(self, group_id: str) -> list[tuple[str, object, bool]]:
        """(name, value, set on the group) for each setting DescribeConfigs lists (Kafka's
        internal streams.* ones only once set on the group)."""
        own = self.values.get(group_id, {})
        defaulted = NAMES + tuple(n for n in streams.NAMES if streams.described(n, own))
        return [(name, own.get(name, self._config[BROKER_DEFAULTS[name]]), name in own)
                for name in defaulted] + [(name, own.get(name, UNSET[name]), name in own)
                                          for name in EXPECTATIONS]

    def expected(self, group_id: str) -> Expected | None:
        """The group's pre-registered static members (None: none), read live by the classic
        coordinator."""
        own = self.values.get(group_id)
        if not own or (EXPECTED_IDS not in own and EXPECTED_SIZE not in own):
            return None
        ids = own.get(EXPECTED_IDS)
        return Expected(instance_ids=frozenset(ids.split(",")) if ids else None,
                        size=own.get(EXPECTED_SIZE),
                        refuse_unexpected=own.get(REFUSE_UNEXPECTED, True))

    def alter(self, group_id: str, changes, validate_only: bool = False) -> None:
        """changes: (name, operation, value) triples."""
        own = dict(self.values.get(group_id, {}))
        for name, operation, value in changes:
            if name not in ALL_NAMES:
                raise GroupConfigError(f"Unknown group config name: {name}")
            if operation == DELETE:
                own.pop(name, None)
                continue
            if operation != SET:
                raise GroupConfigError(f"{name}: only SET and DELETE apply to group configs",
                                       "invalid_request")
            own[name] = _parse(name, value)
        self._validate(own)
        if validate_only:
            return
        updated = {g: dict(c) for g, c in self.values.items()}
        if own:
            updated[group_id] = own
        else:
            updated.pop(group_id, None)
        self._save(updated)
        self.values.clear()
        self.values.update(updated)

    def _validate(self, own: dict) -> None:
        ids, size = own.get(EXPECTED_IDS), own.get(EXPECTED_SIZE)
        if ids is not None and size is not None and size != len(ids.split(",")):
            raise GroupConfigError(f"{EXPECTED_SIZE} ({size}) must be the number of "
                                   f"{EXPECTED_IDS} ({len(ids.split(','))}) when both are set")
        try:
            streams.validate(own, self._config)
        except ValueError as exc:
            raise GroupConfigError(str(exc)) from None
        merged = {name: own.get(name, self._config[BROKER_DEFAULTS[name]]) for name in NAMES}
        for name in NAMES:
            low, high = (self._config[key] for key in LIMITS[name])
            if not low <= merged[name] <= high:   # Kafka's words (GroupConfig.validate)
                raise GroupConfigError(f"{name} must be in the range {low} to {high} inclusive.")
        if merged[SESSION] <= merged[HEARTBEAT]:
            raise GroupConfigError(f"{SESSION} must be greater than {HEARTBEAT}")

    def _save(self, values: dict[str, dict[str, int]]) -> None:
        durable_replace(self._path, json.dumps(values, sort_keys=True).encode())


def _parse(name: str, value) -> object:
    """A setting's value from its text (IncrementalAlterConfigs) or from the file."""
    if name in streams.SPECS:
        try:
            return streams.parse(name, value)
        except ValueError as exc:
            raise GroupConfigError(str(exc)) from None
    if name == EXPECTED_IDS:
        ids = [i.strip() for i in ("" if value is None else str(value)).split(",")]
        if any(not i for i in ids):
            raise GroupConfigError(f"Invalid value {value} for configuration {name}: a "
                                   "comma-separated list of group.instance.ids, none empty")
        return ",".join(dict.fromkeys(ids))   # each once, in the order given
    if name == REFUSE_UNEXPECTED:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text not in ("true", "false"):
            raise GroupConfigError(f"Invalid value {value} for configuration {name}: "
                                   "Expected value to be either true or false")
        return text == "true"
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise GroupConfigError(f"Invalid value {value} for configuration {name}: "
                               "Not a number of type INT") from None
    if name == EXPECTED_SIZE and number < 1:
        raise GroupConfigError(f"{name} must be at least 1")
    return number
