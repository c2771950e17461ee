"""DeleteRecords (21), v0-2: move partitions' log start offsets forward, what
`kafka-delete-records` and the admin clients' delete_records send (Kafka Streams purges its
repartition topics this way). Readers lose the records below the new start at once; whole
segments below it are deleted at once too. The new start is fsynced before the answer, which
carries it as the low watermark. Offset -1 means the log end (delete everything). Compacted
topics (cleanup.policy without "delete") refuse it, as in Kafka: a compacted log's start is the
cleaner's business."""
from __future__ import annotations

from roster.broker.network.admission import partition_error
from roster.log.api import LogStorageError, OffsetOutOfRange
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make, per_partition
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Topics

API_KEY = ApiKey.DELETE_RECORDS
HIGH_WATERMARK = -1


def _delete(broker, admitted, index: int, offset: int) -> tuple[ErrorCode, int]:
    """(error, low watermark) for one partition of a topic entry as admission resolved it."""
    error = partition_error(admitted, index)
    if error is not ErrorCode.none:
        return error, -1
    topic = admitted[0]
    if "delete" not in broker.topics.settings(topic)["cleanup.policy"]:  # its own or the
        return ErrorCode.policy_violation, -1                             # broker's default
    log = topic.partitions[index]
    if offset == HIGH_WATERMARK:
        offset = log.log_end_offset
    if offset < 0:
        return ErrorCode.offset_out_of_range, -1
    try:
        return ErrorCode.none, log.advance_log_start(offset)
    except OffsetOutOfRange:
        return ErrorCode.offset_out_of_range, -1
    except LogStorageError:
        return ErrorCode.kafka_storage_error, -1


async def handle(broker, request, connection):
    admission = request.admission

    def answer(t: int, _, requested) -> dict:
        error, low_watermark = _delete(broker, admission.topic(t), requested.partition_index,
                                       requested.offset)
        return {"partition_index": requested.partition_index, "low_watermark": low_watermark,
                "error_code": error}

    schema = response_schema(API_KEY, request.api_version)
    return make(schema, topics=per_partition(schema, request.body.topics, answer))


SPEC = ApiSpec(API_KEY, "DeleteRecords", 0, 2, handle, resources=(Topics(AclOperation.DELETE),))
