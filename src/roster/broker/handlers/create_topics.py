"""CreateTopics (19), v0-7. roster is one broker: a replication factor above 1 is refused, as a
one-broker Kafka cluster refuses it. v0 (no validate_only, no error messages) and v1 (no throttle
time) were dropped by Kafka 4.0; they answer through v2's description."""
from __future__ import annotations

from collections import Counter

from roster.broker.network.classic_versions import serving
from roster.broker.partitions.topics import TopicError, effective_configs
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, field_names, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Topics

API_KEY = ApiKey.CREATE_TOPICS
KIO_FROM = 2
DEFAULT = -1


def _partition_count(broker, wanted) -> int:
    if wanted.assignments:
        node = broker.endpoint.node_id
        for assignment in wanted.assignments:
            if list(assignment.broker_ids) != [node]:
                raise TopicError("invalid_replica_assignment",
                                 f"partition {assignment.partition_index} is assigned to brokers "
                                 f"{list(assignment.broker_ids)}; the only broker is {node}")
        indexes = sorted(a.partition_index for a in wanted.assignments)
        if indexes != list(range(len(indexes))):
            raise TopicError("invalid_replica_assignment",
                             "assigned partitions must be numbered 0..N-1")
        return len(indexes)
    if wanted.num_partitions == DEFAULT:
        return broker.config["num.partitions"]
    if wanted.num_partitions < 1:
        raise TopicError("invalid_partitions", "number of partitions must be at least 1")
    return wanted.num_partitions


def _check_replication(factor: int) -> None:
    if factor == DEFAULT or factor == 1:
        return
    if factor < 1:
        raise TopicError("invalid_replication_factor", "replication factor must be at least 1")
    raise TopicError("invalid_replication_factor",
                     f"replication factor {factor} is larger than the number of brokers (1)")


def _check_not_own(broker, name: str) -> None:
    """The broker's own topics are made by the broker, on first use, with its settings: one
    a client made first, with another partition count, would stop the broker at its next
    start. (Kafka lets a client make __consumer_offsets first: a documented difference.)"""
    if broker.own_topic(name) is not None and broker.topics.get(name) is None:
        raise TopicError("invalid_request",
                         f"{name} is the broker's own topic; the broker creates it on first use")


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, max(request.api_version, KIO_FROM))
    entry = element(schema, "topics")
    # topics describe their configs in the answer from v5 on
    config_entry = element(entry, "configs") if "configs" in field_names(entry) else None
    repeated = {name for name, n in Counter(t.name for t in body.topics).items() if n > 1}
    answers = []
    for t, wanted in enumerate(body.topics):
        try:
            if wanted.name in repeated:
                raise TopicError("invalid_request", f"topic {wanted.name!r} is named twice")
            if request.admission.topic(t)[1] is ErrorCode.topic_authorization_failed:
                raise TopicError("topic_authorization_failed",
                                 "Authorization failed.")
            _check_replication(wanted.replication_factor)
            _check_not_own(broker, wanted.name)
            count = _partition_count(broker, wanted)
            topic = broker.topics.create(wanted.name, count,
                                         {c.name: c.value for c in wanted.configs},
                                         validate_only=body.validate_only)
        except TopicError as exc:
            answers.append(make(entry, name=wanted.name, topic_id=None,
                                error_code=ErrorCode[exc.code], error_message=str(exc),
                                num_partitions=-1, replication_factor=-1, configs=None))
            continue
        configs = () if config_entry is None else tuple(
            make(config_entry, name=item.name, value=item.value, read_only=False,
                 config_source=item.source, is_sensitive=False)
            for item in effective_configs(broker.topics, topic))
        answers.append(make(entry, name=topic.name, topic_id=topic.topic_id,
                            error_code=ErrorCode.none, error_message=None,
                            num_partitions=count, replication_factor=1, configs=configs))
    return make(schema, topics=tuple(answers))


SPEC = ApiSpec(API_KEY, "CreateTopics", 0, 7, handle, raw=serving(API_KEY, KIO_FROM, handle),
               resources=(Topics(AclOperation.CREATE, topic_id=None, resolve=False,
                                 cluster_allows=True),))
