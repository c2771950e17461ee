"""A ShareConsumer's settings (client/share_consumer_config.py): Kafka's defaults, and the
settings Kafka 4.4's ShareConsumerConfig refuses, refused at construction in Kafka's words plus
what to use instead."""
from __future__ import annotations

import pytest

from roster.client.share_consumer import ShareConsumer
from roster.client.share_consumer_config import (
    REFUSED,
    ShareConsumerConfigError,
    settings_from,
)

BASE = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}


def test_kafkas_defaults():
    s = settings_from(BASE)
    assert (s.acknowledgement_mode, s.acquire_mode, s.max_poll_records, s.fetch_max_wait_ms,
            s.fetch_min_bytes, s.fetch_max_bytes, s.request_timeout_ms) == \
        ("implicit", 0, 500, 500, 1, 52_428_800, 30_000)
    assert not s.explicit
    s = settings_from({**BASE, "share_acknowledgement_mode": "EXPLICIT",
                       "share.acquire.mode": "record_limit", "max_poll_records": "10"})
    assert s.explicit and s.acquire_mode == 1 and s.max_poll_records == 10


def test_the_ten_settings_kafka_refuses():
    assert sorted(REFUSED) == sorted([
        "auto.offset.reset", "enable.auto.commit", "group.instance.id", "isolation.level",
        "partition.assignment.strategy", "interceptor.classes", "session.timeout.ms",
        "heartbeat.interval.ms", "group.protocol", "group.remote.assignor"])
    for name, instead in REFUSED.items():
        with pytest.raises(ShareConsumerConfigError) as refused:
            settings_from({**BASE, name: "x"})
        message = str(refused.value)
        assert message.startswith(f"{name} cannot be set when using a share group.")
        assert instead in message


def test_group_instance_id_is_refused_by_the_constructor_saying_what_to_do_instead():
    with pytest.raises(ShareConsumerConfigError,
                       match=r"^group\.instance\.id cannot be set when using a share group\. "
                             r"Instead of group\.instance\.id: share groups have no static "
                             r"membership"):
        ShareConsumer("127.0.0.1:1", "g", group_instance_id="worker-3")
    with pytest.raises(ShareConsumerConfigError, match="share.auto.offset.reset"):
        ShareConsumer({**BASE, "auto.offset.reset": "earliest"})


def test_other_mistakes():
    with pytest.raises(ShareConsumerConfigError, match="valid group.id"):
        settings_from({"bootstrap.servers": "x:1"})
    with pytest.raises(ShareConsumerConfigError, match="implicit, explicit"):
        settings_from({**BASE, "share.acknowledgement.mode": "sometimes"})
    with pytest.raises(ShareConsumerConfigError, match="unknown share consumer setting"):
        settings_from({**BASE, "max.poll.record": 5})
    assert settings_from({**BASE, "security.protocol": "SASL_PLAINTEXT",
                          "sasl.mechanism": "PLAIN"}).security == {
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}


def test_what_the_consumer_refuses_before_any_request():
    import asyncio

    from roster.client.share_consumer import ImplicitAcknowledgement, ShareRecord
    record = ShareRecord("t", 0, 5, 0, None, b"v", (), 1)
    implicit = ShareConsumer("127.0.0.1:1", "g")
    with pytest.raises(ImplicitAcknowledgement,
                       match="Implicit acknowledgement of delivery is being used."):
        implicit.acknowledge(record)
    explicit = ShareConsumer("127.0.0.1:1", "g", share_acknowledgement_mode="explicit",
                             security={"security.protocol": "PLAINTEXT"})
    from roster.client.share_consumer_fetch import CannotAcknowledge
    with pytest.raises(CannotAcknowledge, match="The record cannot be acknowledged."):
        explicit.acknowledge(record)            # not delivered by a poll
    with pytest.raises(RuntimeError, match="Consumer is not subscribed to any topics."):
        asyncio.run(explicit.poll(0))
    asyncio.run(explicit.close())
    with pytest.raises(RuntimeError, match="This consumer has already been closed."):
        asyncio.run(explicit.poll(0))
