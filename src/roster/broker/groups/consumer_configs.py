"""A consumer group's own configs (KIP-848, the GROUP resource): its session timeout and
heartbeat interval, as Kafka 4.4's GroupConfig takes them: integers within the broker's
group.consumer.{min,max}.{session.timeout,heartbeat.interval}.ms, the session longer than the
heartbeat interval (GroupConfig.validate's words); and consumer.assignment.interval.ms (within
group.consumer.{min,max}.assignment.interval.ms) and consumer.assignor.offload.enable, taken
and described as Kafka takes them: roster computes a group's target assignment on the heartbeat
that needs one, on the event loop, whatever they say. The consumer type registers this table
(roster/group_types.py); group_configs.py keeps the values, the consumer coordinator reads them
live."""
from __future__ import annotations

from roster.broker.groups.group_configs import boolean, number

SESSION = "consumer.session.timeout.ms"
HEARTBEAT = "consumer.heartbeat.interval.ms"
ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"
ASSIGNOR_OFFLOAD = "consumer.assignor.offload.enable"
_ORIGIN = {SESSION: "group.consumer.session.timeout.ms",
           HEARTBEAT: "group.consumer.heartbeat.interval.ms",
           ASSIGNMENT_INTERVAL: "group.consumer.assignment.interval.ms",
           ASSIGNOR_OFFLOAD: "group.consumer.assignor.offload.enable"}
_AT_LEAST = {SESSION: 1, HEARTBEAT: 1, ASSIGNMENT_INTERVAL: 0}
_LIMITS = {SESSION: ("group.consumer.min.session.timeout.ms",
                     "group.consumer.max.session.timeout.ms"),
           HEARTBEAT: ("group.consumer.min.heartbeat.interval.ms",
                       "group.consumer.max.heartbeat.interval.ms"),
           ASSIGNMENT_INTERVAL: ("group.consumer.min.assignment.interval.ms",
                                 "group.consumer.max.assignment.interval.ms")}


class ConsumerGroupConfigs:
    names = (ASSIGNMENT_INTERVAL, ASSIGNOR_OFFLOAD, HEARTBEAT, SESSION)

    @staticmethod
    def parse(name: str, value) -> int | bool:
        if name == ASSIGNOR_OFFLOAD:
            return boolean(name, value)
        # Kafka's ConfigDef bounds below (atLeast) before GroupConfig.validate's ranges
        return number(name, value, at_least=_AT_LEAST.get(name))

    def validate(self, own: dict, broker) -> None:
        merged = {name: own.get(name, self.default(name, broker)) for name in self.names}
        for name, (low_key, high_key) in _LIMITS.items():
            low, high = broker[low_key], broker[high_key]
            if not low <= merged[name] <= high:
                raise ValueError(f"{name} must be in the range {low} to {high} inclusive.")
        if merged[SESSION] <= merged[HEARTBEAT]:
            raise ValueError(f"{SESSION} must be greater than {HEARTBEAT}")

    @staticmethod
    def described(name: str, own: dict) -> bool:
        return True

    @staticmethod
    def default(name: str, broker) -> int | bool:
        return broker[_ORIGIN[name]]

    @staticmethod
    def origin(name: str) -> str:
        return _ORIGIN[name]

    @staticmethod
    def kind(name: str) -> str:
        return "boolean" if name == ASSIGNOR_OFFLOAD else "int"


CONSUMER_CONFIGS = ConsumerGroupConfigs()
