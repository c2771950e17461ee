"""ConsumerGroupHeartbeat's checks, each refusal a RequestError carrying Kafka's error code and
message (the coordinator answers it and abandons the operation)."""
from __future__ import annotations

from roster.coordinator.consumer.config import ConsumerConfig
from roster.coordinator.consumer.messages import HeartbeatRequest
from roster.coordinator.consumer.model import STATIC_LEAVE_EPOCH, ConsumerMember
from roster.coordinator.consumer.reconcile import is_subset
from roster.protocol import client_regex   # RE2, as Kafka (RE2/J) reads the regex
from roster.protocol.errors import ErrorCode


class RequestError(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def fail(error: ErrorCode, message: str | None = None):
    raise RequestError(error, message)



def validate(q: HeartbeatRequest, config: ConsumerConfig) -> None:
    """ConsumerGroupHeartbeat's request-level checks, in Kafka's words."""
    if not q.group_id.strip():
        fail(ErrorCode.invalid_request, "GroupId can't be empty.")
    if q.instance_id is not None and not q.instance_id.strip():
        fail(ErrorCode.invalid_request, "InstanceId can't be empty.")
    if q.rack_id is not None and not q.rack_id.strip():
        fail(ErrorCode.invalid_request, "RackId can't be empty.")
    if q.api_version >= 1 or q.member_epoch != 0:
        if not q.member_id.strip():
            fail(ErrorCode.invalid_request, "MemberId can't be empty.")
    if q.member_epoch == 0:
        if q.rebalance_timeout_ms == -1:
            fail(ErrorCode.invalid_request,
                 "RebalanceTimeoutMs must be provided in first request.")
        if q.owned is None or any(ps for _, ps in q.owned):
            fail(ErrorCode.invalid_request, "TopicPartitions must be empty when (re-)joining.")
        # null, not empty: a join may subscribe to an empty list (Kafka's check and words)
        if q.subscribed_topic_names is None and q.subscribed_topic_regex is None:
            fail(ErrorCode.invalid_request, "Either SubscribedTopicNames or "
                 "SubscribedTopicRegex must be non-null when (re-)joining.")
    elif q.member_epoch == STATIC_LEAVE_EPOCH:
        if q.instance_id is None:
            fail(ErrorCode.invalid_request, "InstanceId can't be null.")
    elif q.member_epoch < STATIC_LEAVE_EPOCH:
        fail(ErrorCode.invalid_request, "MemberEpoch is invalid.")
    if q.server_assignor is not None and q.server_assignor not in config.assignors:
        fail(ErrorCode.unsupported_assignor,
             f"ServerAssignor {q.server_assignor} is not supported. Supported assignors: "
             f"{', '.join(config.assignors)}.")
    if q.subscribed_topic_regex:
        try:
            client_regex.compiled(q.subscribed_topic_regex)
        except client_regex.InvalidRegex as why:
            fail(ErrorCode.invalid_regular_expression,
                 f"SubscribedTopicRegex `{q.subscribed_topic_regex}` is not a valid regular "
                 f"expression: {why}.")


def check_epoch(member: ConsumerMember, q: HeartbeatRequest) -> None:
    """A member's epoch: ahead of the coordinator's, or behind it other than by the one step a
    lost answer explains, fences it. Epoch 0 is a member joining again under its own id (a
    client that lost its state): not checked, as in Kafka 4.4, and answered like a join."""
    epoch = q.member_epoch
    if epoch == 0:
        return
    if epoch > member.member_epoch:
        fail(ErrorCode.fenced_member_epoch,
             f"The consumer group member has a greater member epoch ({epoch}) than the "
             f"one known by the group coordinator ({member.member_epoch}). The member "
             "must abandon all its partitions and rejoin.")
    if epoch < member.member_epoch and (epoch != member.previous_member_epoch
                                        or not is_subset(q.owned, member.assigned)):
        fail(ErrorCode.fenced_member_epoch,
             f"The consumer group member has a smaller member epoch ({epoch}) than the "
             f"one known by the group coordinator ({member.member_epoch}). The member "
             "must abandon all its partitions and rejoin.")
