"""Group types built on first use (GroupTypeRegistration.on_first_use, coordinator/unbuilt_type.py):
the consumer, share and streams types are not built, and their code is not loaded, until a
request of a family they make or one of their records needs them. Until then the shard routes
as if they held no group; once built, a type is asked as it always was."""
from __future__ import annotations

import subprocess
import sys

import pytest

from roster.coordinator.consumer import records as consumer_records
from roster.coordinator.group_type import OnFirstUse
from roster.coordinator.share import records as share_records
from roster.coordinator.streams import records as streams_records
from roster.coordinator.unbuilt_type import UnbuiltType
from roster.group_types import GROUP_TYPES
from tests.unit.coordinator.consumer.harness import ConsumerHarness
from tests.unit.coordinator.harness import Harness
from tests.unit.coordinator.shard_harness import ShardDriver

RECORD_TYPES = {"consumer": consumer_records.TYPES, "share": share_records.TYPES,
                "streams": streams_records.TYPES}


def unbuilt(driver: ShardDriver) -> list[str]:
    return [t.name for t in driver.shard.types if isinstance(t, UnbuiltType)]


@pytest.mark.parametrize("registration", [r for r in GROUP_TYPES if r.on_first_use],
                         ids=lambda r: r.name)
def test_what_a_registration_declares_is_what_its_type_says(registration):
    built = ShardDriver().shard.type_named(registration.name)
    assert not isinstance(built, UnbuiltType)
    assert registration.on_first_use == OnFirstUse(
        accepts=built.accepts, serves=built.serves,
        record_types=RECORD_TYPES[registration.name])


def test_classic_groups_build_none_of_them():
    h = Harness()
    assert unbuilt(h) == ["share", "streams", "consumer"]
    member = h.join_dynamic()
    assert h.group().members and member
    h.restarted()
    assert unbuilt(h) == ["share", "streams", "consumer"]
    assert [o.group_id for o in h.shard.overview()] == ["g"]


def test_a_consumer_heartbeat_builds_the_consumer_type_and_a_restart_its_records():
    h = ConsumerHarness(topics={"t": 2})   # white-box: it asks for the consumer type by name
    assert h.join("m1", topics=("t",)).assignment   # the group exists, its member assigned
    assert unbuilt(h) == ["share", "streams"]
    fresh = ShardDriver()
    assert "consumer" in unbuilt(fresh)
    h.replay_into(fresh)   # the consumer records, read back from the log, build it
    assert "consumer" not in unbuilt(fresh)
    assert [(o.group_id, o.group_type) for o in fresh.shard.overview()] == [("g", "consumer")]


def test_an_unbuilt_type_routes_nothing_to_itself():
    driver = ShardDriver()
    assert driver.shard.maker("share").name == "share"   # the family is served...
    assert driver.shard.refused("g", "share") is None
    assert driver.shard.group_ids() == [] and driver.shard.overview() == []
    assert "share" in unbuilt(driver)                     # ...without building the type


def test_a_broker_serving_classic_groups_loads_none_of_their_code(tmp_path):
    """In a fresh process: a broker that started, answered a classic group's join and commit,
    has not imported the other types' coordinators, nor the share partitions' state."""
    script = f"""
import sys
from confluent_kafka import Consumer, Producer
from roster.testing.broker import RosterBroker
with RosterBroker({str(tmp_path / "data")!r}) as broker:
    broker.create_topic("t", 1)
    p = Producer({{"bootstrap.servers": broker.bootstrap}}); p.produce("t", b"x"); p.flush(10)
    c = Consumer({{"bootstrap.servers": broker.bootstrap, "group.id": "g",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False}})
    c.subscribe(["t"])
    message = None
    while message is None:
        message = c.poll(1.0)
    c.commit(message, asynchronous=False)
    c.close()
    print(sorted(m for m in sys.modules if m in ("roster.coordinator.consumer.coordinator",
          "roster.coordinator.share.coordinator", "roster.coordinator.streams.coordinator",
          "roster.broker.share.state", "roster.share.coordinator")))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
