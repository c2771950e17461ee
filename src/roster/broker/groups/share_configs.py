"""A share group's own configs (share.* and errors.deadletterqueue.* on the GROUP resource,
KIP-932 and KIP-1191), as Kafka 4.4.0's GroupConfig takes them: each name's type, default and
lower bound (its ConfigDef), the broker setting it defaults to (its synonym), how the broker's
group.share.* settings bound it (GroupConfig.validate), in Kafka's words. The share type
registers this table (SHARE_CONFIGS, broker/groups/share_group.py); group_configs.py keeps and
persists the values with the other group configs.

Who reads them:
- the share coordinator (membership): share.session.timeout.ms and share.heartbeat.interval.ms,
  live through coordinator/share/messages.ShareConfig;
- the share-partition state and the fetch path (share.record.lock.duration.ms,
  share.delivery.count.limit, share.auto.offset.reset, share.isolation.level,
  share.partition.max.record.locks, share.renew.acknowledge.enable,
  errors.deadletterqueue.topic.name, errors.deadletterqueue.copy.record.enable): through
  `group_value(broker, group_id, name)` below, the group's own value or the broker's default.
share.assignment.interval.ms and share.assignor.offload.enable are taken and described as Kafka
takes them; roster computes a share group's target at once on the event loop whatever they say.

A broker setting behind a config that roster's config.py does not list (yet) falls back to
Kafka 4.4.0's default for it, so the table works before every group.share.* setting exists.
"""
from __future__ import annotations

import re

from roster.broker.groups.group_configs import boolean, number
from roster.config import SETTINGS
from roster.frozen import frozen


@frozen
class ShareGroupConfig:
    name: str
    kind: str                      # Kafka's ConfigDef type: "int", "string", "boolean"
    default: object                # Kafka 4.4.0's default when no broker setting is behind it
    at_least: int | None = None    # its ConfigDef validator's lower bound
    synonym: str | None = None     # the broker setting it defaults to
    low: str | None = None         # the broker setting it must be at least
    high: str | None = None        # the broker setting it must be at most
    internal: bool = False         # Kafka 4.4 describes it only once set on the group


_G = "group.share."
SESSION, HEARTBEAT = "share.session.timeout.ms", "share.heartbeat.interval.ms"
LOCK_DURATION = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
MAX_RECORD_LOCKS = "share.partition.max.record.locks"
AUTO_OFFSET_RESET = "share.auto.offset.reset"
ISOLATION_LEVEL = "share.isolation.level"
RENEW_ACKNOWLEDGE = "share.renew.acknowledge.enable"
ASSIGNMENT_INTERVAL = "share.assignment.interval.ms"
ASSIGNOR_OFFLOAD = "share.assignor.offload.enable"
DLQ_TOPIC = "errors.deadletterqueue.topic.name"
DLQ_COPY_RECORD = "errors.deadletterqueue.copy.record.enable"

# in Kafka's ConfigDef order (DescribeConfigs lists them so)
SPECS = {spec.name: spec for spec in (
    ShareGroupConfig(SESSION, "int", 45000, 1, _G + "session.timeout.ms",
                     _G + "min.session.timeout.ms", _G + "max.session.timeout.ms"),
    ShareGroupConfig(HEARTBEAT, "int", 5000, 1, _G + "heartbeat.interval.ms",
                     _G + "min.heartbeat.interval.ms", _G + "max.heartbeat.interval.ms"),
    ShareGroupConfig(LOCK_DURATION, "int", 30000, 1000, _G + "record.lock.duration.ms",
                     _G + "min.record.lock.duration.ms", _G + "max.record.lock.duration.ms"),
    ShareGroupConfig(DELIVERY_COUNT_LIMIT, "int", 5, 2, _G + "delivery.count.limit",
                     _G + "min.delivery.count.limit", _G + "max.delivery.count.limit"),
    ShareGroupConfig(MAX_RECORD_LOCKS, "int", 2000, 100, _G + "partition.max.record.locks",
                     _G + "min.partition.max.record.locks",
                     _G + "max.partition.max.record.locks"),
    ShareGroupConfig(AUTO_OFFSET_RESET, "string", "latest"),
    ShareGroupConfig(ISOLATION_LEVEL, "string", "read_uncommitted"),
    ShareGroupConfig(RENEW_ACKNOWLEDGE, "boolean", True),
    ShareGroupConfig(ASSIGNMENT_INTERVAL, "int", 1000, 0, _G + "assignment.interval.ms",
                     _G + "min.assignment.interval.ms", _G + "max.assignment.interval.ms"),
    ShareGroupConfig(ASSIGNOR_OFFLOAD, "boolean", True, synonym=_G + "assignor.offload.enable",
                     internal=True),
    ShareGroupConfig(DLQ_TOPIC, "string", ""),
    ShareGroupConfig(DLQ_COPY_RECORD, "boolean", False),
)}
NAMES = tuple(SPECS)
# the broker settings' own defaults in Kafka 4.4.0, for those roster's config.py lacks
KAFKA_BROKER_DEFAULTS = {
    _G + "min.session.timeout.ms": 45000, _G + "max.session.timeout.ms": 60000,
    _G + "min.heartbeat.interval.ms": 5000, _G + "max.heartbeat.interval.ms": 15000,
    _G + "min.record.lock.duration.ms": 15000, _G + "max.record.lock.duration.ms": 60000,
    _G + "min.delivery.count.limit": 2, _G + "max.delivery.count.limit": 10,
    _G + "min.partition.max.record.locks": 100, _G + "max.partition.max.record.locks": 4000,
    _G + "min.assignment.interval.ms": 0, _G + "max.assignment.interval.ms": 15000,
}
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
# java.time.Duration.parse's ISO-8601 form: PnDTnHnMn.nS, each part signed, any part optional
_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?"
                       r"(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?", re.IGNORECASE)


def broker_value(broker, setting: str, fallback=None):
    """A broker setting's value: the broker's, else Kafka's default for it."""
    if setting in broker:
        return broker[setting]
    return KAFKA_BROKER_DEFAULTS.get(setting, fallback)


def parse_duration_ms(text: str) -> int:
    """An ISO-8601 duration (Java's Duration.parse) in ms; ValueError when it is not one."""
    found = _DURATION.fullmatch(text.strip())
    if found is None or text.strip().upper().endswith("T") or not any(found.groups()[1:]):
        raise ValueError(text)
    sign, days, hours, minutes, seconds, fraction = found.groups()
    total = (int(days or 0) * 86_400_000 + int(hours or 0) * 3_600_000
             + int(minutes or 0) * 60_000 + int(seconds or 0) * 1000)
    if fraction:
        millis = int((fraction + "000")[:3])
        total += -millis if (seconds or "").startswith("-") else millis
    return -total if sign == "-" else total


def auto_offset_reset(value: str) -> tuple[str, int | None]:
    """share.auto.offset.reset read: ("earliest", None), ("latest", None) or ("by_duration",
    the duration in ms): the start offset is the first record at or after now - duration."""
    text = value.strip().lower()
    if text in ("earliest", "latest"):
        return text, None
    if text.startswith("by_duration:"):
        return "by_duration", parse_duration_ms(value.strip()[len("by_duration:"):])
    raise ValueError(value)


def parse(name: str, value):
    """The value of `name` from its text, as Kafka's ConfigDef parses it; ValueError carries
    Kafka's message."""
    spec = SPECS[name]
    if spec.kind == "boolean":
        return boolean(name, value)
    if spec.kind == "int":
        return number(name, value, "int", spec.at_least)
    text = "" if value is None else str(value).strip()
    if name == AUTO_OFFSET_RESET:
        try:
            _, duration = auto_offset_reset(text)
            if duration is not None and duration < 0:
                raise ValueError(text)
        except ValueError:
            raise ValueError(
                f"Invalid value {text} for configuration {name}: Invalid value `{text}` for "
                f"configuration {name}. The value must be either 'earliest', 'latest' or of "
                "the format 'by_duration:<PnDTnHnMn.nS>'.") from None
        return text
    if name == ISOLATION_LEVEL and text not in ISOLATION_LEVELS:
        raise ValueError(f"Invalid value {text} for configuration {name}: String must be one "
                         f"of: {', '.join(ISOLATION_LEVELS)}")
    return text


def validate(own: dict, broker) -> None:
    """The group's share.* values (`own`: those set on it) against the broker's bounds, in
    Kafka's words (GroupConfig.validateValues); ValueError otherwise."""
    for name, spec in SPECS.items():
        if name not in own or spec.low is None:
            continue
        low, high = broker_value(broker, spec.low), broker_value(broker, spec.high)
        if not low <= own[name] <= high:
            raise ValueError(f"{name} must be in the range {low} to {high} inclusive.")
    if SESSION in own or HEARTBEAT in own:
        session = own.get(SESSION, broker_value(broker, SPECS[SESSION].synonym))
        heartbeat = own.get(HEARTBEAT, broker_value(broker, SPECS[HEARTBEAT].synonym))
        if session <= heartbeat:
            raise ValueError(f"{SESSION} must be greater than {HEARTBEAT}")
    topic = own.get(DLQ_TOPIC)
    if topic and topic.startswith("__"):
        raise ValueError(f"{DLQ_TOPIC}: DLQ topic name must not start with '__'")


def default(name: str, broker):
    spec = SPECS[name]
    if spec.synonym is None:
        return spec.default
    return broker_value(broker, spec.synonym, spec.default)


def group_value(broker, group_id: str, name: str):
    """The effective value of share group config `name` for `group_id`: the group's own (set
    with IncrementalAlterConfigs), else the broker's default (its group.share.* synonym, else
    Kafka's default). `broker`: the Broker. The share-partition state asks this for
    share.record.lock.duration.ms, share.delivery.count.limit, share.auto.offset.reset,
    share.isolation.level, share.partition.max.record.locks, share.renew.acknowledge.enable
    and errors.deadletterqueue.*."""
    own = broker.group_configs.own(group_id)
    if name in own:
        return own[name]
    return default(name, broker.config)


class ShareGroupConfigs:
    """This module as group_configs.py takes a table."""

    names = NAMES
    parse = staticmethod(parse)
    validate = staticmethod(validate)
    default = staticmethod(default)

    @staticmethod
    def described(name: str, own: dict) -> bool:
        return not SPECS[name].internal or name in own

    @staticmethod
    def origin(name: str) -> str | None:
        """The broker setting behind it, when roster has it (DescribeConfigs' synonym)."""
        synonym = SPECS[name].synonym
        return synonym if synonym in SETTINGS else None

    @staticmethod
    def kind(name: str) -> str:
        return SPECS[name].kind


SHARE_CONFIGS = ShareGroupConfigs()
