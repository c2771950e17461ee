"""A classic group's pre-registered static members (KIP-345's future work, roster's own group
configs; coordinator/classic/expectations.py says what the coordinator does with them):
`group.expected.instance.ids` (a comma-separated list), or `group.expected.size`, and
`group.expected.refuse.unexpected` (default true). They have no broker-wide default. The classic
type registers this table (roster/group_types.py); group_configs.py keeps the values, and
`expected(own)` is what the classic coordinator reads live."""
from __future__ import annotations

from roster.broker.groups.group_configs import boolean, number
from roster.coordinator.classic.expectations import Expected

IDS = "group.expected.instance.ids"
SIZE = "group.expected.size"
REFUSE_UNEXPECTED = "group.expected.refuse.unexpected"
# what DescribeConfigs shows for one not set on the group, and its ConfigType
_UNSET = {IDS: "", SIZE: -1, REFUSE_UNEXPECTED: True}
_KINDS = {IDS: "list", SIZE: "int", REFUSE_UNEXPECTED: "boolean"}


class ExpectedMembersConfigs:
    names = (IDS, SIZE, REFUSE_UNEXPECTED)

    @staticmethod
    def parse(name: str, value) -> object:
        if name == IDS:
            ids = [i.strip() for i in ("" if value is None else str(value)).split(",")]
            if any(not i for i in ids):
                raise ValueError(f"Invalid value {value} for configuration {name}: a "
                                 "comma-separated list of group.instance.ids, none empty")
            return ",".join(dict.fromkeys(ids))   # each once, in the order given
        if name == REFUSE_UNEXPECTED:
            return boolean(name, value)
        size = number(name, value)
        if size < 1:
            raise ValueError(f"{name} must be at least 1")
        return size

    @staticmethod
    def validate(own: dict, broker) -> None:
        ids, size = own.get(IDS), own.get(SIZE)
        if ids is not None and size is not None and size != len(ids.split(",")):
            raise ValueError(f"{SIZE} ({size}) must be the number of {IDS} "
                             f"({len(ids.split(','))}) when both are set")

    @staticmethod
    def described(name: str, own: dict) -> bool:
        # roster's own (Kafka has none): always listed, which is also how roster's tools tell
        # a roster broker from Kafka (admin/not_roster.is_roster)
        return True

    @staticmethod
    def default(name: str, broker) -> object:
        return _UNSET[name]

    @staticmethod
    def origin(name: str) -> None:
        return None

    @staticmethod
    def kind(name: str) -> str:
        return _KINDS[name]


EXPECTED_MEMBERS = ExpectedMembersConfigs()


def expected(own: dict) -> Expected | None:
    """The group's pre-registered static members from its configs (None: none)."""
    if IDS not in own and SIZE not in own:
        return None
    ids = own.get(IDS)
    return Expected(instance_ids=frozenset(ids.split(",")) if ids else None,
                    size=own.get(SIZE), refuse_unexpected=own.get(REFUSE_UNEXPECTED, True))
