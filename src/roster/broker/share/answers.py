"""Kafka's default messages for the errors the share-offsets APIs answer with (its
Errors.message(), as Kafka 4.4.0 puts them beside the codes)."""
from __future__ import annotations

from roster.protocol.errors import ErrorCode

MESSAGES = {
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.unknown_topic_or_partition: "This server does not host this topic-partition.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.invalid_group_id: "The group id is invalid.",
    ErrorCode.non_empty_group: "The group is not empty.",
    ErrorCode.unknown_server_error:
        "The server experienced an unexpected error when processing the request.",
    ErrorCode.coordinator_load_in_progress:
        "The coordinator is loading and hence can't process requests.",
    ErrorCode.coordinator_not_available: "The coordinator is not available.",
}


def message(error: ErrorCode) -> str | None:
    return None if error is ErrorCode.none else MESSAGES.get(error)
