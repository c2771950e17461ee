"""What only roster has, and the one line a command says when it meets a broker that is not
roster (an Apache Kafka cluster): roster's group history and rebalance report read the flight
recorder's topic, and pre-registered static members are roster's own group configs. Kafka has
neither, so the command says so instead of failing on what is missing (the report still
writes what Kafka has: its groups' tables; docs/on-kafka.md)."""
from __future__ import annotations

from roster.admin.client import AdminClient, AdminError
from roster.protocol.api_keys import ApiKey

EXPECTED_PREFIX = "group.expected."   # roster's group configs: pre-registered static members
GROUP_RESOURCE = 32
PROBE_GROUP = "roster-probe"
DOCS = "docs/on-kafka.md"


class NotRoster(AdminError):
    """The command needs something only a roster broker has."""

    def __init__(self, why: str) -> None:
        super().__init__(f"this cluster is not roster: {why} (see {DOCS})")


def knows_expected_members(configs) -> bool:
    """Whether a group's DescribeConfigs answer lists roster's group.expected.* settings."""
    return any(c.name.startswith(EXPECTED_PREFIX) for c in configs)


def is_roster(client: AdminClient) -> bool:
    """Only roster knows the group.expected.* group configs (Kafka's group configs are its
    consumer, share and streams settings); a broker with no group configs at all is taken
    for roster, whose older versions had none."""
    resource = client.entry(ApiKey.DESCRIBE_CONFIGS, "resources")
    try:
        answer = client.call(ApiKey.DESCRIBE_CONFIGS, include_synonyms=False,
                             include_documentation=False,
                             resources=(resource(resource_type=GROUP_RESOURCE,
                                                 resource_name=PROBE_GROUP,
                                                 configuration_keys=None),))
    except AdminError:
        return True
    result = answer.results[0]
    if result.error_code.value or not result.configs:
        return True
    return knows_expected_members(result.configs)


HISTORY = "group history needs roster's flight recorder (__roster_group_events)"
REPORT = ("the rebalance history needs roster's flight recorder (__roster_group_events); "
          "this report has only each group's members, committed offsets and lag")
EXPECTED_MEMBERS = ("pre-registered static members are roster's own group configs "
                    "(group.expected.*); on Kafka a member is in the group once it joins")
