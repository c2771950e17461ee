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

        # Kafka lists a topic once its broker's metadata has it: a moment after CreateTopics
        deadline = time.monotonic() + 10
        while (topic, TOPIC) not in (topics := listed(TOPIC)):
            assert time.monotonic() < deadline, f"{topic} never listed: {topics}"
            threading.Event().wait(0.05)
        assert ("__consumer_offsets", TOPIC) in topics
        assert {t for _, t in listed(BROKER)} == {BROKER} and len(listed(BROKER)) == 1
        assert (group, GROUP) not in listed(GROUP)
        set_group_config(0)   # SET
        assert (group, GROUP) in listed(GROUP)
        everything = listed()   # no type: every type
        assert {(topic, TOPIC), (group, GROUP)} <= everything
        set_group_config(1)   # DELETE
        assert (group, GROUP) not in listed(GROUP)
        refused = admin.call(ApiKey.LIST_CONFIG_RESOURCES, resource_types=(99,))
        assert refused.error_code is ErrorCode.unsupported_version
        assert refused.config_resources == ()
