"""A consumer group's own configs (KIP-848, the GROUP resource): its session timeout and
heartbeat interval, as Kafka 4.4's GroupConfig takes them: integers within the broker's
group.consumer.{min,max}.{session.timeout,heartbeat.interval}.ms, the session longer than the
heartbeat interval (GroupConfig.validate's words). The consumer type registers this table
(roster/group_types.py); group_configs.py keeps the values, the consumer coordinator reads them
live."""
from __future__ import annotations

from roster.broker.groups.group_configs import number

SESSION = "consumer.session.timeout.ms"
HEARTBEAT = "consumer.heartbeat.interval.ms"
_ORIGIN = {SESSION: "group.consumer.session.timeout.ms",
           HEARTBEAT: "group.consumer.heartbeat.interval.ms"}
_LIMITS = {SESSION: ("group.consumer.min.session.timeout.ms",
                     "group.consumer.max.session.timeout.ms"),
           HEARTBEAT: ("group.consumer.min.heartbeat.interval.ms",
                       "group.consumer.max.heartbeat.interval.ms")}


class ConsumerGroupConfigs:
    names = (HEARTBEAT, SESSION)

    @staticmethod
    def parse(name: str, value) -> int:
        return number(name, value)

    def validate(self, own: dict, broker) -> None:
        merged = {name: own.get(name, self.default(name, broker)) for name in self.names}
        for name in self.names:
            low, high = (broker[key] for key in _LIMITS[name])
            if not low <= merged[name] <= high:
                raise ValueError(f"{name} must be in the range {low} to {high} inclusive.")
        if merged[SESSION] <= merged[HEARTBEAT]:
            raise ValueError(f"{SESSION} must be greater than {HEARTBEAT}")

    @staticmethod
    def described(name: str, own: dict) -> bool:
        return True

    @staticmethod
    def default(name: str, broker) -> int:
        return broker[_ORIGIN[name]]

    @staticmethod
    def origin(name: str) -> str:
        return _ORIGIN[name]

    @staticmethod
    def kind(name: str) -> str:
        return "int"


CONSUMER_CONFIGS = ConsumerGroupConfigs()
