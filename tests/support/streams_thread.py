"""One stream thread of a Kafka Streams application as it speaks the streams group protocol
(StreamsGroupHeartbeat, KIP-1071) over a raw socket, for tests that need a streams group
without a JVM: it joins with a one-subtopology topology (a source topic and, if asked, a state
store's changelog), then on every heartbeat reports the tasks it runs (all it was given: it
revokes at once), commits its input at its member epoch, and leaves."""
from __future__ import annotations

import base64
import datetime
import uuid

from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode
from tests.support.wire import Wire

HEARTBEAT = ApiKey.STREAMS_GROUP_HEARTBEAT


def topology(source: str, changelog: str | None = None):
    """Subtopology "0": reads `source`; with `changelog`, keeps a store logged to it."""
    request = request_schema(HEARTBEAT, 0)
    entry = element(request, "topology")
    sub = element(entry, "subtopologies")
    changelogs = () if changelog is None else (make(
        element(sub, "state_changelog_topics"), name=changelog, partitions=0,
        replication_factor=-1, topic_configs=()),)
    return make(entry, epoch=0, subtopologies=(make(
        sub, subtopology_id="0", source_topics=(source,), source_topic_regex=(),
        state_changelog_topics=changelogs, repartition_sink_topics=(),
        repartition_source_topics=(), copartition_groups=()),))


class StreamThread:
    def __init__(self, bootstrap: str, group: str, source: str, changelog: str | None = None,
                 instance_id: str | None = None) -> None:
        self.wire = Wire(bootstrap)
        self.group, self.source, self.changelog = group, source, changelog
        self.instance_id = instance_id
        self.member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        self.epoch = 0
        self.active: tuple = ()

    def beat(self, epoch: int | None = None):
        """A heartbeat at the thread's epoch (or at `epoch`: -1 leaves, -2 a static leave)."""
        joining = self.epoch == 0 and epoch is None
        task = element(request_schema(HEARTBEAT, 0), "active_tasks")
        answer = self.wire.call(
            HEARTBEAT, 0, group_id=self.group, member_id=self.member_id,
            member_epoch=self.epoch if epoch is None else epoch, endpoint_information_epoch=0,
            instance_id=self.instance_id, rack_id=None,
            rebalance_timeout=datetime.timedelta(milliseconds=30_000 if joining else -1),
            topology=topology(self.source, self.changelog) if joining else None,
            active_tasks=tuple(make(task, subtopology_id=s, partitions=ps)
                               for s, ps in self.active) if epoch is None else None,
            standby_tasks=() if epoch is None else None,
            warmup_tasks=() if epoch is None else None,
            process_id=f"process-{self.instance_id or self.member_id}" if joining else None,
            user_endpoint=None, client_tags=() if joining else None, task_offsets=None,
            task_end_offsets=None, shutdown_application=False)
        assert answer.error_code == ErrorCode.none, answer.error_message
        if epoch is None:
            self.epoch = answer.member_epoch
            if answer.active_tasks is not None:
                self.active = tuple((t.subtopology_id, tuple(t.partitions))
                                    for t in answer.active_tasks)
        return answer

    def partitions(self) -> list[int]:
        return sorted(p for _, ps in self.active for p in ps)

    def commit(self, offsets: dict[int, int]) -> None:
        """OffsetCommit of its source partitions at its member epoch, as Streams commits."""
        schema = request_schema(ApiKey.OFFSET_COMMIT, 9)
        topic = element(schema, "topics")
        partition = element(topic, "partitions")
        answer = self.wire.call(
            ApiKey.OFFSET_COMMIT, 9, group_id=self.group,
            generation_id_or_member_epoch=self.epoch, member_id=self.member_id,
            group_instance_id=None, retention_time_ms=-1,
            topics=(make(topic, name=self.source, partitions=tuple(make(
                partition, partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                committed_metadata="") for p, o in sorted(offsets.items()))),))
        assert {p.error_code for t in answer.topics for p in t.partitions} == {ErrorCode.none}

    def close(self) -> None:
        self.wire.close()


def settle(threads, rounds: int = 4) -> None:
    """Heartbeat like the stream threads until every one runs its target."""
    for _ in range(rounds):
        for t in threads:
            t.beat()
