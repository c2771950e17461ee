"""What roster.client's ShareConsumer puts on the wire: ShareFetch and ShareAcknowledge at v1
(the only version of a broker without KIP-1206/KIP-1222) and v2 encode and decode back field for
field, from the fetch core's plain fields."""
from __future__ import annotations

import uuid

import pytest

from roster.client.share_consumer import _share_acknowledge, _share_fetch
from roster.client.share_consumer_member import _heartbeat
from roster.protocol.api_keys import ApiKey
from roster.protocol.codec import decode_request, encode_request

T = uuid.UUID(int=9)
FETCH = {"group_id": "g", "member_id": "m", "share_session_epoch": 3, "max_wait_ms": 500,
         "min_bytes": 1, "max_bytes": 1024, "max_records": 50, "batch_size": 50,
         "share_acquire_mode": 1, "is_renew_ack": False,
         "topics": [(T, [(0, [(10, 12, (1,)), (14, 15, (2, 0))]), (1, [])])],
         "forgotten_topics_data": [(T, [(2, None)])]}


def roundtrip(api_key: int, version: int, body):
    return decode_request(encode_request(api_key, version, 7, "roster-test", body)[4:]).body


@pytest.mark.parametrize("version", [1, 2])
def test_share_fetch_at_v1_and_v2(version):
    body = roundtrip(ApiKey.SHARE_FETCH, version, _share_fetch(version, FETCH))
    assert (body.group_id, body.member_id, body.share_session_epoch, body.max_records,
            body.batch_size) == ("g", "m", 3, 50, 50)
    assert body.max_wait.total_seconds() == 0.5
    [topic] = body.topics
    assert topic.topic_id == T
    assert [(p.partition_index, [(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                                 for b in p.acknowledgement_batches])
            for p in topic.partitions] == [(0, [(10, 12, (1,)), (14, 15, (2, 0))]), (1, [])]
    assert [(f.topic_id, tuple(f.partitions)) for f in body.forgotten_topics_data] == [(T, (2,))]
    if version >= 2:
        assert body.share_acquire_mode == 1 and body.is_renew_ack is False


@pytest.mark.parametrize("version", [1, 2])
def test_share_acknowledge_at_v1_and_v2(version):
    fields = {"group_id": "g", "member_id": "m", "share_session_epoch": -1,
              "is_renew_ack": version >= 2, "topics": [(T, [(4, [(7, 7, (3,))])])]}
    body = roundtrip(ApiKey.SHARE_ACKNOWLEDGE, version, _share_acknowledge(version, fields))
    assert body.share_session_epoch == -1
    [part] = body.topics[0].partitions
    assert (part.partition_index, part.acknowledgement_batches[0].first_offset) == (4, 7)
    if version >= 2:
        assert body.is_renew_ack is True


def test_share_group_heartbeat_v1():
    body = roundtrip(ApiKey.SHARE_GROUP_HEARTBEAT, 1, _heartbeat(1, {
        "group_id": "g", "member_id": "m", "member_epoch": 0, "rack_id": None,
        "subscribed_topic_names": ("a", "b")}))
    assert (body.group_id, body.member_id, body.member_epoch, body.subscribed_topic_names) \
        == ("g", "m", 0, ("a", "b"))
