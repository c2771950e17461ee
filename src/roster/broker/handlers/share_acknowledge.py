"""ShareAcknowledge (79), v1-2: a share consumer's acknowledgements without a fetch (KIP-932),
and the acknowledgement rules ShareFetch's piggy-backed ones share (share_fetch.py).

As Kafka 4.4's KafkaApis.handleShareAcknowledgeRequest: a null group id is INVALID_REQUEST, then
READ on the group (GROUP_AUTHORIZATION_FAILED), then the member id (non-empty, at most 36
characters: INVALID_REQUEST), then the share session's epoch (roster.share.sessions: 0 is
INVALID_SHARE_SESSION_EPOCH, no session SHARE_SESSION_NOT_FOUND). Each partition is answered on
its own, in this order: a topic id the broker does not know (UNKNOWN_TOPIC_ID); acknowledgement
batches that do not hold together (INVALID_REQUEST: first offset past the last, a batch
starting before the previous one's last offset, no types, several types not one per offset, a
type outside 0-3, or 0-4 from v2, and RENEW (4) without IsRenewAck); READ on the topic
(TOPIC_AUTHORIZATION_FAILED); a partition the topic lacks (UNKNOWN_TOPIC_OR_PARTITION); no
batches (nothing to do: NONE); otherwise the share partition's answer, made durable before the
reply (roster.broker.share: INVALID_RECORD_STATE for records the member does not hold, ...).
Epoch -1 acknowledges and then closes the session, releasing what the member still holds.
v2 adds IsRenewAck (KIP-1222) and AcquisitionLockTimeoutMs in the answer.
"""
from __future__ import annotations

import asyncio
import datetime

from roster.broker.network.admission import partition_error
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, Topics
from roster.share.sessions import FINAL_EPOCH

API_KEY = ApiKey.SHARE_ACKNOWLEDGE
MAX_MEMBER_ID = 36
RENEW = 4
NONE = ErrorCode.none
NO_LOCK = datetime.timedelta(0)

GROUP = Group(AclOperation.READ, route=False)
TOPICS = Topics(AclOperation.READ)   # entries name their topic by id only


def valid_member_id(member_id: str | None) -> bool:
    """Kafka's KafkaApis.isMemberIdValid: non-empty and at most 36 characters."""
    return bool(member_id) and len(member_id) <= MAX_MEMBER_ID


def batches_error(batches, version: int, renew: bool) -> ErrorCode | None:
    """INVALID_REQUEST when a partition's acknowledgement batches do not hold together (Kafka's
    KafkaApis.validateAcknowledgementBatches), else None."""
    highest = 4 if version >= 2 else 3
    previous_last = -1
    for batch in batches:
        types = batch.acknowledge_types
        if batch.first_offset > batch.last_offset or batch.first_offset < previous_last \
                or not types \
                or (len(types) > 1 and batch.last_offset - batch.first_offset != len(types) - 1) \
                or any(t < 0 or t > highest for t in types) \
                or (not renew and RENEW in types):
            return ErrorCode.invalid_request
        previous_last = batch.last_offset
    return None


class AckPartition:
    """One partition's acknowledgements as a request carried them."""
    __slots__ = ("topic_id", "index", "error", "batches")

    def __init__(self, topic_id, index: int, error: ErrorCode, batches) -> None:
        self.topic_id = topic_id
        self.index = index
        self.error = error          # decided before the share partition is asked, or NONE
        self.batches = batches

    @property
    def key(self) -> tuple:
        return self.topic_id, self.index


def read_acknowledgements(request, version: int, renew: bool) -> list[AckPartition]:
    """Every partition of the request's topics with its acknowledgement batches (maybe none)
    and the error it is answered with without reaching its share partition."""
    admission = request.admission
    found = []
    for t, topic_entry in enumerate(request.body.topics):
        resolved = admission.topic(t)
        topic_error = resolved[1]
        for partition in topic_entry.partitions:
            batches = partition.acknowledgement_batches
            if topic_error is ErrorCode.unknown_topic_id:
                error = topic_error
            else:
                error = batches_error(batches, version, renew) or \
                    partition_error(resolved, partition.partition_index)
            found.append(AckPartition(topic_entry.topic_id, partition.partition_index, error,
                                      batches))
    return found


async def apply_acknowledgements(broker, group_id: str, member_id: str,
                                 partitions: list[AckPartition]
                                 ) -> dict[tuple, tuple[ErrorCode, str | None]]:
    """Each partition's acknowledgements applied, all at once (their writes share flushes),
    each durable before this returns: its answer, the error and Kafka's message for a refusal
    by the share partition ("Member is not the owner of offset")."""
    state = getattr(broker, "share_state", None)
    now = broker.now_ms()

    async def one(partition: AckPartition) -> tuple[ErrorCode, str | None]:
        if partition.error is not NONE or not partition.batches:
            return partition.error, None
        if state is None:
            return ErrorCode.unknown_topic_or_partition, None
        outcome = await state.acknowledge_outcome(
            (group_id, partition.topic_id, partition.index), member_id,
            [(b.first_offset, b.last_offset, list(b.acknowledge_types))
             for b in partition.batches], now)
        return (NONE, None) if outcome.error is None else (outcome.error, outcome.message)

    errors = await asyncio.gather(*(one(p) for p in partitions))
    return {p.key: error for p, error in zip(partitions, errors)}


def lock_timeout(broker, group_id: str) -> datetime.timedelta:
    """AcquisitionLockTimeoutMs: the group's share.record.lock.duration.ms, else the broker's."""
    state = getattr(broker, "share_state", None)
    if state is None:
        ms = broker.config.get("group.share.record.lock.duration.ms", 30000)
    else:
        ms = state.lock_duration_ms(group_id)
    return datetime.timedelta(milliseconds=ms)


def validate(request) -> ErrorCode | None:
    return ErrorCode.invalid_request if request.body.group_id is None else None


def refuse(request, error: ErrorCode):
    return make(response_schema(API_KEY, request.api_version), error_code=error,
                error_message=None, acquisition_lock_timeout=NO_LOCK, responses=(),
                node_endpoints=())


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    if not valid_member_id(body.member_id):
        return refuse(request, ErrorCode.invalid_request)
    sessions = broker.share_sessions
    session = sessions.cache.begin_acknowledge(body.group_id, body.member_id,
                                               body.share_session_epoch)
    if isinstance(session, ErrorCode):
        return refuse(request, session)
    renew = version >= 2 and body.is_renew_ack
    partitions = read_acknowledgements(request, version, renew)
    answers = await apply_acknowledgements(broker, body.group_id, body.member_id, partitions)
    if body.share_session_epoch == FINAL_EPOCH:
        sessions.release(body.group_id, body.member_id)
    schema = response_schema(API_KEY, version)
    topic_entry = element(schema, "responses")
    partition_entry = element(topic_entry, "partitions")
    leader_entry = element(partition_entry, "current_leader")
    by_topic: dict = {}
    for (topic_id, index), (error, message) in answers.items():
        by_topic.setdefault(topic_id, []).append(make(
            partition_entry, partition_index=index, error_code=error, error_message=message,
            current_leader=make(leader_entry, leader_id=0, leader_epoch=0)))
    return make(schema, error_code=NONE, error_message=None,
                acquisition_lock_timeout=lock_timeout(broker, body.group_id),
                responses=tuple(make(topic_entry, topic_id=topic_id, partitions=tuple(ps))
                                for topic_id, ps in by_topic.items()),
                node_endpoints=())


SPEC = ApiSpec(API_KEY, "ShareAcknowledge", 1, 2, handle, validate=validate, refuse=refuse,
               resources=(GROUP, TOPICS))
