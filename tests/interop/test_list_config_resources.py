"""ListConfigResources (74, KIP-1142) against roster and the Apache Kafka peer with the same
assertions: by type, the topics (internal ones too), the broker, and the groups with a config of
their own, listed until their last config is deleted; a type the version does not know is
UNSUPPORTED_VERSION. (kafka-configs uses it: test_kafka_tools.py.)"""
from __future__ import annotations

import threading
import time

import pytest

from roster.admin.client import AdminClient
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from tests.support import groups
from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name

TOPIC, BROKER, GROUP = 2, 4, 32


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_list_config_resources_by_type(target):
    topic, group = unique_name("lcr-topic"), unique_name("lcr-group")
    groups.create_topic(target.bootstrap, topic, 1)
    with AdminClient(target.bootstrap) as admin:
        def listed(*types: int) -> set[tuple[str, int]]:
            answer = admin.call(ApiKey.LIST_CONFIG_RESOURCES, resource_types=types)
            assert answer.error_code is ErrorCode.none
            return {(r.resource_name, r.resource_type) for r in answer.config_resources}

        def set_group_config(operation: int) -> None:
            resource = admin.entry(ApiKey.INCREMENTAL_ALTER_CONFIGS, "resources")
            config = admin.entry(ApiKey.INCREMENTAL_ALTER_CONFIGS, "resources", "configs")
            answer = admin.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, validate_only=False,
                                resources=(resource(resource_type=GROUP, resource_name=group,
                                                    configs=(config(
                                                        name="consumer.session.timeout.ms",
                                                        config_operation=operation,
                                                        value="50000"),)),))
            assert [r.error_code for r in answer.responses] == [ErrorCode.none]

        def eventually(predicate, what: str) -> set[tuple[str, int]]:
            """Kafka's broker lists what its metadata has: a moment after the change."""
            deadline = time.monotonic() + 10
            while not predicate(found := listed()):
                assert time.monotonic() < deadline, f"{what}: {found}"
                threading.Event().wait(0.05)
            return found

        # the first group lookup makes __consumer_offsets, on Kafka and on roster alike
        assert admin.call(ApiKey.FIND_COORDINATOR, key_type=0, coordinator_keys=(group,)).coordinators[0].error_code is ErrorCode.none
        everything = eventually(lambda found: {(topic, TOPIC), ("__consumer_offsets", TOPIC)}
                                <= found, f"{topic} and __consumer_offsets listed")
        assert ("__consumer_offsets", TOPIC) in everything and (group, GROUP) not in everything
        topics = listed(TOPIC)
        assert {(topic, TOPIC), ("__consumer_offsets", TOPIC)} <= topics
        assert {t for _, t in topics} == {TOPIC}
        assert {t for _, t in listed(BROKER)} == {BROKER} and len(listed(BROKER)) == 1
        set_group_config(0)   # SET
        eventually(lambda found: (group, GROUP) in found, f"{group} listed")
        assert (group, GROUP) in listed(GROUP)
        set_group_config(1)   # DELETE: no config of its own any more
        eventually(lambda found: (group, GROUP) not in found, f"{group} no longer listed")
        refused = admin.call(ApiKey.LIST_CONFIG_RESOURCES, resource_types=(99,))
        assert refused.error_code is ErrorCode.unsupported_version
        assert refused.config_resources == ()
