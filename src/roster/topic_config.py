"""Topic configs as Kafka checks, resolves and describes them, driven by topic_config_table.

- `parse(name, text)`: Kafka's ConfigDef parsing and validators, with Kafka's messages (the
  text a Kafka admin client shows with INVALID_CONFIG);
- `check(configs)`: a topic's own settings as Kafka's controller checks them (null values,
  unknown names, each value in Kafka's definition order, then the checks across settings);
- `incremental(current, operations)`: IncrementalAlterConfigs' SET, DELETE, APPEND, SUBTRACT;
- `resolve(configs, broker_values, explicit)`: each config's effective value, where it comes from
  (DYNAMIC_TOPIC_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG)
  and Kafka's synonyms.

Nothing here imports the broker's configuration (roster.config imports this module to add the
broker settings the table names).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from roster.topic_config_table import (
    BROKER_SYNONYM_DEFAULTS,
    BY_NAME,
    INTERNAL_SEGMENT_BYTES,
    TOPIC_CONFIGS,
)

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
_INTEGER = re.compile(r"[+-]?\d+")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[dDfF]?")
_LIST_SEPARATOR = re.compile(r"\s*,\s*")
_THROTTLED = re.compile(r"([0-9]+:[0-9]+)?")

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3   # IncrementalAlterConfigs' operations
_OPERATION_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
DYNAMIC_TOPIC_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = \
    1, 3, 4, 5   # ConfigSource
# The broker settings a KRaft cluster holds as cluster-wide dynamic defaults from the start:
# since Kafka 4.1 (KIP-966) formatting a cluster writes min.insync.replicas, with the static
# value, as a config record of the cluster's default broker resource, so Kafka 4.4 describes
# it (and the topic config it backs) as DYNAMIC_DEFAULT_BROKER_CONFIG. roster has no format
# step: its cluster-wide default is the setting's current value.
CLUSTER_DEFAULTS = ("min.insync.replicas",)
CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "LONG": 5, "DOUBLE": 6, "LIST": 7}


class ConfigInvalid(ValueError):
    """A topic config Kafka refuses; the message is Kafka's (answered with INVALID_CONFIG)."""


def _invalid(name: str, value: Any, message: str) -> ConfigInvalid:
    """Kafka's ConfigException(name, value, message)."""
    return ConfigInvalid(f"Invalid value {_java(value)} for configuration {name}: {message}")


def _java(value: Any) -> str:
    """A parsed value as Java's toString writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    return str(value)


def java_double(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == int(value) and abs(value) < 1e7:
        return f"{int(value)}.0"
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        mantissa = mantissa if "." in mantissa else mantissa + ".0"
        return f"{mantissa}E{int(exponent)}"
    return text


# -- parsing: ConfigDef.parseType, then the validator ----------------------------------------------

def _parse_type(name: str, kind: str, text: str) -> Any:
    trimmed = text.strip()
    if kind == "BOOLEAN":
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise _invalid(name, text, "Expected value to be either true or false")
    if kind == "STRING":
        return trimmed
    if kind == "LIST":
        return [] if not trimmed else _LIST_SEPARATOR.split(trimmed)
    if kind in ("INT", "LONG"):
        low, high = INT_RANGE if kind == "INT" else LONG_RANGE
        if _INTEGER.fullmatch(trimmed) and low <= int(trimmed) <= high:
            return int(trimmed)
    elif kind == "DOUBLE" and _DOUBLE.fullmatch(trimmed):
        return float(trimmed.rstrip("dDfF").replace("Infinity", "inf"))
    raise _invalid(name, text, f"Not a number of type {kind}")


def _validate(name: str, valid: tuple | None, value: Any) -> None:
    if valid is None:
        return
    rule = valid[0]
    if rule in ("at_least", "between"):
        if value < valid[1]:
            raise _invalid(name, value, f"Value must be at least {valid[1]}")
        if rule == "between" and value > valid[2]:
            raise _invalid(name, value, f"Value must be no more than {valid[2]}")
    elif rule == "one_of":
        if value not in valid[1]:
            raise _invalid(name, value, "String must be one of: " + ", ".join(valid[1]))
    elif rule == "list_of":
        for item in value:
            if not item:
                raise ConfigInvalid(f"Configuration '{name}' values must not be empty.")
            if item not in valid[1]:
                raise _invalid(name, item, "String must be one of: " + ", ".join(valid[1]))
    elif rule == "gzip_level":
        if value > 9 or (value < 1 and value != -1):
            raise _invalid(name, value, "Value must be between 1 and 9 or equal to -1")
    elif rule == "throttled_replicas":
        items = [item.strip() for item in value]
        if not (all(_THROTTLED.fullmatch(i) for i in items) or "".join(items) == "*"):
            raise _invalid(name, value, f"{name} must be the literal '*' or a list of replicas "
                                        "in the following format: [partitionId]:[brokerId],"
                                        "[partitionId]:[brokerId],...")


def parse(name: str, text: str, checked: bool = True) -> Any:
    """The typed value of topic config `name` given as `text`; raises ConfigInvalid. Not
    `checked`: the type only (the broker's own topics may go below Kafka's minimums)."""
    spec = BY_NAME[name]
    value = _parse_type(name, spec.type, text)
    if checked:
        _validate(name, spec.valid, value)
    return value


def parse_broker_value(name: str, text: str, kind: str, valid: tuple | None) -> Any:
    """A broker setting that stands behind a topic config, checked as Kafka checks it."""
    value = _parse_type(name, kind, text)
    _validate(name, valid, value)
    return ",".join(value) if kind == "LIST" else value


# -- a topic's own settings -----------------------------------------------------------------------

def check(configs: Mapping[str, str | None], tiered_storage: bool = False) -> dict[str, str]:
    """A topic's own settings as Kafka's controller checks them; the settings to keep.
    Raises ConfigInvalid with Kafka's message."""
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise ConfigInvalid("Null value not supported for topic configs: " + ",".join(nulls))
    for name in configs:
        if name not in BY_NAME and name != INTERNAL_SEGMENT_BYTES:
            raise ConfigInvalid(f"Unknown topic config name: {name}")
    parsed = {}
    for spec in TOPIC_CONFIGS:
        if spec.name in configs:
            parsed[spec.name] = parse(spec.name, configs[spec.name])
    if INTERNAL_SEGMENT_BYTES in configs:
        parsed[INTERNAL_SEGMENT_BYTES] = _parse_type(INTERNAL_SEGMENT_BYTES, "INT",
                                                     configs[INTERNAL_SEGMENT_BYTES])
    low = parsed.get("min.compaction.lag.ms", 0)
    high = parsed.get("max.compaction.lag.ms", 2**63 - 1)
    if low > high:
        raise ConfigInvalid(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                            f"max.compaction.lag.ms ({high})")
    if parsed.get("remote.storage.enable") and not tiered_storage:
        raise ConfigInvalid("Tiered Storage functionality is disabled in the broker. Topic "
                            "cannot be configured with remote log storage.")
    return dict(configs)


def incremental(current: Mapping[str, str], operations: Iterable[tuple[str, int, str | None]]
                ) -> dict[str, str]:
    """A topic's own settings after IncrementalAlterConfigs' (name, operation, value) steps, as
    Kafka's controller applies them (APPEND and SUBTRACT start from Kafka's default when the
    topic does not set the list). The result still has to pass `check`."""
    configs = dict(current)
    for name, operation, value in operations:
        if operation == SET:
            if value is None:
                raise ConfigInvalid(f"Null value not supported for topic configs: {name}")
            configs[name] = value
        elif operation == DELETE:
            configs.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            spec = BY_NAME.get(name)
            if spec is None or spec.type != "LIST":
                raise ConfigInvalid(f"Can't {_OPERATION_NAMES[operation]} to key {name} because "
                                    "its type is not LIST.")
            start = configs.get(name, spec.default)
            items = [item for item in start.split(",") if item]
            for item in (value or "").split(","):
                if operation == APPEND and item not in items:
                    items.append(item)
                elif operation == SUBTRACT and item in items:
                    items.remove(item)
            configs[name] = ",".join(items)
        else:
            raise ValueError(f"unknown config operation {operation}")
    return configs


# -- resolving: a topic's effective values and where they come from -------------------------------

class Resolved(NamedTuple):
    name: str
    value: str                      # as Kafka writes it
    source: int                     # ConfigSource
    synonyms: tuple[tuple[str, str, int], ...]   # (name, value, source), Kafka's order
    type: int                       # ConfigType (DescribeConfigs v3+)


def text_of(value: Any) -> str | None:
    """A broker setting's value as Kafka writes it: booleans in lower case, unset as null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def _converted(value: Any, factor: int) -> str:
    if factor == 1 or isinstance(value, str):
        return text_of(value)
    return str(-1 if value < 0 else value * factor)


def resolve(configs: Mapping[str, str], broker_values: Mapping[str, Any],
            explicit: Iterable[str], broker_defaults: Mapping[str, Any]) -> list[Resolved]:
    """Every topic config Kafka lists for a topic, as Kafka 4.4 answers DescribeConfigs:

    - the value: set on the topic, else the first broker synonym the operator set (converted:
      log.retention.hours=24 gives retention.ms=86400000), else the first with a default, else
      Kafka's own default;
    - the source: DYNAMIC_TOPIC_CONFIG when set on the topic, else STATIC_BROKER_CONFIG when the
      operator set the first broker synonym, else DEFAULT_CONFIG (so retention.ms under
      log.retention.hours=24 is DEFAULT_CONFIG, as Kafka reports it);
    - the synonyms: the topic's own value, then the first broker synonym's default, if it has
      one (the operator's value is not among them, as in Kafka 4.4);
    - a config whose broker setting is a cluster-wide default (CLUSTER_DEFAULTS) is
      DYNAMIC_DEFAULT_BROKER_CONFIG unless set on the topic, and its synonyms are the topic's
      own value, then that cluster-wide default, the operator's value (if any) and the default,
      as Kafka 4.4 lists them (cluster_default_synonyms)."""
    explicit = frozenset(explicit)
    answer = []
    for spec in TOPIC_CONFIGS:
        if spec.synonyms and spec.synonyms[0][0] in CLUSTER_DEFAULTS:
            answer.append(_resolve_cluster_default(spec, configs, broker_values, explicit,
                                                   broker_defaults))
            continue
        effective = None
        for broker_name, factor in spec.synonyms:
            value = broker_values.get(broker_name) if broker_name in explicit else None
            if value is not None:
                effective = _converted(value, factor)
                break
        if effective is None:
            for broker_name, factor in spec.synonyms:
                if broker_defaults.get(broker_name) is not None:
                    effective = _converted(broker_defaults[broker_name], factor)
                    break
        synonyms = []
        source = DEFAULT_CONFIG
        if spec.synonyms:
            first = spec.synonyms[0][0]
            if first in explicit and broker_values.get(first) is not None:
                source = STATIC_BROKER_CONFIG
            if broker_defaults.get(first) is not None:
                synonyms.append((first, text_of(broker_defaults[first]), DEFAULT_CONFIG))
        own = configs.get(spec.name)
        if own is not None:
            effective = _normalized(spec, own)
            synonyms.insert(0, (spec.name, effective, DYNAMIC_TOPIC_CONFIG))
            source = DYNAMIC_TOPIC_CONFIG
        if effective is None:
            effective = spec.default
        answer.append(Resolved(spec.name, effective, source, tuple(synonyms),
                               CONFIG_TYPES[spec.type]))
    return answer


def cluster_default_synonyms(name: str, broker_values: Mapping[str, Any],
                             explicit: Iterable[str],
                             broker_defaults: Mapping[str, Any]) -> tuple[tuple[str, str, int], ...]:
    """A CLUSTER_DEFAULTS setting's synonyms as Kafka 4.4 lists them: the cluster-wide
    default, the operator's value when given, Kafka's default."""
    current = text_of(_cluster_default(name, broker_values, broker_defaults))
    synonyms = [(name, current, DYNAMIC_DEFAULT_BROKER_CONFIG)]
    if name in explicit and broker_values.get(name) is not None:
        synonyms.append((name, current, STATIC_BROKER_CONFIG))
    if broker_defaults.get(name) is not None:
        synonyms.append((name, text_of(broker_defaults[name]), DEFAULT_CONFIG))
    return tuple(synonyms)


def _cluster_default(name: str, broker_values: Mapping[str, Any],
                     broker_defaults: Mapping[str, Any]) -> Any:
    value = broker_values.get(name)
    return broker_defaults.get(name) if value is None else value


def _resolve_cluster_default(spec, configs: Mapping[str, str], broker_values: Mapping[str, Any],
                             explicit: frozenset, broker_defaults: Mapping[str, Any]) -> Resolved:
    broker_name, factor = spec.synonyms[0]
    synonyms = cluster_default_synonyms(broker_name, broker_values, explicit, broker_defaults)
    own = configs.get(spec.name)
    if own is None:
        current = _cluster_default(broker_name, broker_values, broker_defaults)
        return Resolved(spec.name,
                        spec.default if current is None else _converted(current, factor),
                        DYNAMIC_DEFAULT_BROKER_CONFIG, synonyms, CONFIG_TYPES[spec.type])
    effective = _normalized(spec, own)
    return Resolved(spec.name, effective, DYNAMIC_TOPIC_CONFIG,
                    ((spec.name, effective, DYNAMIC_TOPIC_CONFIG), *synonyms),
                    CONFIG_TYPES[spec.type])


def _normalized(spec, text: str) -> str:
    """A topic's own value as Kafka reports it back (parsed, then written again)."""
    try:
        value = parse(spec.name, text)
    except ConfigInvalid:
        return text
    if spec.type == "LIST":
        return ",".join(value)
    return text_of(value)


def broker_synonym_settings() -> list[tuple[str, Any, Callable[[str], Any], str]]:
    """(name, default, parse, doc) of each broker setting behind a topic config that roster's
    own settings table lacks: parsed and validated as the topic config it stands behind."""
    settings = []
    for spec in TOPIC_CONFIGS:
        for broker_name, factor in spec.synonyms:
            if broker_name not in BROKER_SYNONYM_DEFAULTS:
                continue
            kind = spec.type if factor == 1 else "INT"
            valid = spec.valid if factor == 1 else ("at_least", 1 if "roll.hours" in broker_name
                                                    else 0)

            def parse_value(text: str, name=broker_name, kind=kind, valid=valid) -> Any:
                return parse_broker_value(name, text, kind, valid)
            settings.append((broker_name, BROKER_SYNONYM_DEFAULTS[broker_name], parse_value,
                             f"the broker's default of topic config {spec.name}"))
    return settings
