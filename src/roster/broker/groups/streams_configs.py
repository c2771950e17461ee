"""A streams group's own configs (streams.* on the GROUP resource, KIP-1071), as Kafka 4.4.0's
GroupConfig takes them: each name's type and lower bound (its ConfigDef), the broker setting it
defaults to (group.<name>), and how the broker's group.streams.* settings bound it
(GroupConfig.validate). The streams type registers this table (STREAMS_CONFIGS,
broker/groups/streams_group.py); group_configs.py keeps and persists the values with the other
group configs, and the streams coordinator reads them live (coordinator/streams/messages.py
StreamsConfig.of).

Kafka 4.4 marks three of them internal (task.offset.interval.ms, num.warmup.replicas,
acceptable.recovery.lag): DescribeConfigs lists those only once set on the group. Three more
are taken and described as Kafka takes them, with no broker setting behind them here:
streams.assignor.name (roster has Kafka's one registered assignor, "sticky"),
streams.assignor.offload.enable (roster's assignments run on the event loop whatever it says)
and streams.rack.aware.assignment.tags (members without one of the tags are told
MISSING_CLIENT_TAGS; standby tasks are not placed by them, as Kafka 4.4.0's sticky assignor
does not place them).
"""
from __future__ import annotations


from roster.broker.groups.group_configs import boolean, number
from roster.frozen import frozen


@frozen
class StreamsGroupConfig:
    name: str
    kind: str                 # Kafka's ConfigDef type: "int" or "long"
    at_least: int             # its ConfigDef validator's lower bound
    low: str | None = None    # the broker setting it must be at least (Kafka's range check)
    high: str | None = None   # the broker setting it must be at most
    internal: bool = False    # Kafka 4.4 describes it only when set on the group

    @property
    def broker_setting(self) -> str:
        return "group." + self.name


_G = "group.streams."
SPECS = {spec.name: spec for spec in (
    StreamsGroupConfig("streams.session.timeout.ms", "int", 1, _G + "min.session.timeout.ms",
                       _G + "max.session.timeout.ms"),
    StreamsGroupConfig("streams.heartbeat.interval.ms", "int", 1,
                       _G + "min.heartbeat.interval.ms", _G + "max.heartbeat.interval.ms"),
    StreamsGroupConfig("streams.num.standby.replicas", "int", 0,
                       high=_G + "max.standby.replicas"),
    StreamsGroupConfig("streams.initial.rebalance.delay.ms", "int", 0),
    StreamsGroupConfig("streams.assignment.interval.ms", "int", 0,
                       _G + "min.assignment.interval.ms", _G + "max.assignment.interval.ms"),
    StreamsGroupConfig("streams.task.offset.interval.ms", "int", 1,
                       low=_G + "min.task.offset.interval.ms", internal=True),
    StreamsGroupConfig("streams.num.warmup.replicas", "int", 0,
                       high=_G + "max.warmup.replicas", internal=True),
    StreamsGroupConfig("streams.acceptable.recovery.lag", "long", 0, internal=True),
)}
SESSION, HEARTBEAT = "streams.session.timeout.ms", "streams.heartbeat.interval.ms"
ASSIGNOR, OFFLOAD = "streams.assignor.name", "streams.assignor.offload.enable"
RACK_TAGS = "streams.rack.aware.assignment.tags"
ASSIGNORS = ("sticky",)   # the task assignors roster has (Kafka's group.streams.assignors)
# the ones that are not numbers: name -> (ConfigType, the value when not set, internal: Kafka
# describes it only once set on the group)
OTHERS = {ASSIGNOR: ("string", "sticky", False), OFFLOAD: ("boolean", False, True),
          RACK_TAGS: ("list", "", False)}
NAMES = (*SPECS, *OTHERS)


def parse(name: str, value) -> int:
    """The value of `name` from its text, as Kafka's ConfigDef parses it; ValueError carries
    Kafka's message."""
    if name == ASSIGNOR:
        if value not in ASSIGNORS:
            raise ValueError(f"{name} '{value}' is not a registered task assignor. Registered "
                             f"assignors are: [{', '.join(ASSIGNORS)}].")
        return value
    if name == OFFLOAD:
        return boolean(name, value)
    if name == RACK_TAGS:
        return ",".join(t.strip() for t in str(value or "").split(",") if t.strip())
    spec = SPECS[name]
    return number(name, value, spec.kind, spec.at_least)


def validate(own: dict, broker) -> None:
    """The group's streams.* values (`own`: those set on it) against the broker's bounds, in
    Kafka's words; ValueError otherwise. `broker`: the broker's settings."""
    for name, spec in SPECS.items():
        if name not in own:
            continue
        value = own[name]
        if spec.low and spec.high:
            low, high = broker[spec.low], broker[spec.high]
            if not low <= value <= high:
                raise ValueError(f"{name} must be in the range {low} to {high} inclusive.")
        elif spec.high and value > broker[spec.high]:
            raise ValueError(f"{name} must be less than or equal to {broker[spec.high]}")
        elif spec.low and value < broker[spec.low]:
            raise ValueError(f"{name} must be greater than or equal to {broker[spec.low]}")
    if SESSION in own or HEARTBEAT in own:
        session = own.get(SESSION, broker[SPECS[SESSION].broker_setting])
        heartbeat = own.get(HEARTBEAT, broker[SPECS[HEARTBEAT].broker_setting])
        if session <= heartbeat:
            raise ValueError(f"{SESSION} must be greater than {HEARTBEAT}")


def described(name: str, own: dict) -> bool:
    """Whether DescribeConfigs lists `name` for a group whose own configs are `own`."""
    internal = OTHERS[name][2] if name in OTHERS else SPECS[name].internal
    return not internal or name in own


class StreamsGroupConfigs:
    """This module as group_configs.py takes a table."""

    names = NAMES
    parse = staticmethod(parse)
    validate = staticmethod(validate)
    described = staticmethod(described)

    @staticmethod
    def default(name: str, broker) -> object:
        return OTHERS[name][1] if name in OTHERS else broker[SPECS[name].broker_setting]

    @staticmethod
    def origin(name: str) -> str | None:
        return None if name in OTHERS else SPECS[name].broker_setting

    @staticmethod
    def kind(name: str) -> str:
        return OTHERS[name][0] if name in OTHERS else SPECS[name].kind


STREAMS_CONFIGS = StreamsGroupConfigs()
