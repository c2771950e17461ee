"""Topics whose names begin with "__" (Kafka beside roster): only Kafka's own internal topics
(__consumer_offsets, __transaction_state, __share_group_state) are internal; a user's topic
named "__..." is an ordinary topic to Kafka: listed as not internal, produced to, grown,
deleted, and matched by a consumer group's regex."""
from __future__ import annotations

from roster.protocol.api_keys import ApiKey
from roster.record_codec import DefaultRecordBatchBuilder
from tests.differential.harness import scenario
from tests.differential.members import Kip848Member


def batch() -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    builder.append(0, 1_700_000_000_000, b"k", b"v", [])
    return bytes(builder.build())


@scenario(outcome="""a user's topic named "__users_<scenario>": CreateTopics makes it, Metadata
lists it with is_internal false (and __consumer_offsets with is_internal true), Produce appends
to it (and is refused on __consumer_offsets), CreatePartitions grows it, a consumer group's
regex "__users_.*" is assigned its partitions, DeleteTopics deletes it""")
def test_user_topics_named_like_internal_ones(s):
    name = "__users_" + s.name("t").replace(".", "_")
    admin = s.conn("admin")
    # (roster makes __consumer_offsets on first use, as Kafka: on a FindCoordinator)
    s.conn("setup", traced=False).call(ApiKey.FIND_COORDINATOR, key_type=0,
                                       coordinator_keys=[s.name("g")])
    admin.call(ApiKey.CREATE_TOPICS, timeout=30000, topics=[{
        "name": name, "num_partitions": 1, "replication_factor": 1, "configs": []}])
    s.wait(lambda: s.partitions(name) == 1, f"{name} exists")
    answer = admin.call(ApiKey.METADATA, 12, topics=[{"name": name, "topic_id": None},
                                                     {"name": "__consumer_offsets",
                                                      "topic_id": None}],
                        allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    s.note("metadata", topics=sorted((t.name == name, t.is_internal, t.error_code.name)
                                     for t in answer.topics))
    # (only Produce is sent to __consumer_offsets: the Kafka peer is shared by the suite, and
    # Kafka lets CreatePartitions grow it)
    for topic in (name, "__consumer_offsets"):
        answer = admin.call(ApiKey.PRODUCE, 9, acks=-1, timeout=10_000, topic_data=[
            {"name": topic, "partition_data": [{"index": 0, "records": batch()}]}])
        s.note(f"produce to {'ours' if topic == name else topic}",
               error=answer.responses[0].partition_responses[0].error_code.name)
    admin.call(ApiKey.CREATE_PARTITIONS, 3, keep=("results",), topics=[
        {"name": name, "count": 3, "assignments": None}], timeout=30000, validate_only=False)
    s.wait(lambda: s.partitions(name) == 3, f"{name} has 3 partitions")
    member = Kip848Member(s, "reader", s.name("g"), regex="__users_.*" + s.name("t").replace(
        ".", "_"))
    # (out of the trace until assigned: Kafka resolves a regex after answering, and the
    # epochs it moves through on the way depend on when)
    s.wait(lambda: member.heartbeat(traced=False) is not None and member.owned_count() == 3,
           "the regex member owns the topic's 3 partitions")
    s.note("assigned by regex", partitions=member.owned_count())
    admin.call(ApiKey.DELETE_TOPICS, 6, keep=("responses",),
               topics=[{"name": name, "topic_id": None}], timeout=30000)
